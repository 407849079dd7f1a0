"""`ralphstate demo`: a scripted session played through the real hook entry points.

Everything runs in a temporary directory with its own ralphstate home, as real
processes: `ralphstate init`, `ralphstate criteria set` and `ralphstate hook stop`,
the same command Claude Code runs at every stop.
"""

from __future__ import annotations

import locale
import os
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path

import click
import orjson

from ralphstate.agents.table import every
from ralphstate.cli import output
from ralphstate.cli.options import SETTINGS
from ralphstate.run.spawn import join_command
from ralphstate.storage.system import children

SESSION = "demo-session-0001"
SPEC = "Add a --json flag to the report command"
CHECKED = "tests pass"  # the criterion with a check
CLAIMED = "README documents --json"  # the one without: the agent's word
STEPS = ["add the flag", "update README"]
OUTPUT_BYTES = 1024 * 1024  # of each command's stdout and stderr, the most kept

# The scratch project: a report function and the test the flag must pass.
REPORT = 'def report(rows, as_json=False):\n    return "\\n".join(f"{k}: {v}" for k, v in rows)\n'
FIXED = (
    "import json\n\n\ndef report(rows, as_json=False):\n    if as_json:\n"
    '        return json.dumps(dict(rows))\n    return "\\n".join(f"{k}: {v}" for k, v in rows)\n'
)
TEST = (
    "import unittest\n\nfrom report import report\n\n\n"
    "class ReportTest(unittest.TestCase):\n    def test_json(self):\n"
    "        self.assertEqual(report([('a', 1)], as_json=True), '{\"a\": 1}')\n"
)

# What the agent does in each turn: the files it writes, the commands it runs, then its
# final reply. The first turn is the session's own; each later one is an iteration, begun
# by the block before it.
SCRIPT: list[tuple[dict[str, str], list[list[str]], str]] = [
    ({}, [], "I added the --json flag. I think the task is finished."),
    (
        {},
        [
            ["step", "done", "add the flag"],
            ["step", "done", "update README"],
            ["criteria", "set", CHECKED, "true"],
            ["criteria", "set", CLAIMED, "true"],
        ],
        "Tests pass now and the README has a --json section. Done! <loop-complete>",
    ),
    (
        {"report.py": FIXED},
        [["verify"]],
        "The flag prints JSON now; `ralphstate verify` passed. <loop-complete>",
    ),
]


# What the demo ends with: the next step, on a project of the person's own.
NEXT = (
    "\nNext, in a project of your own: `ralphstate install` puts these hooks in its"
    " settings, then\n"
    '  ralphstate init "what to build" --check "tests pass" "python3 -m pytest -q"\n'
    "starts a loop, held by the Stop hook in your next Claude Code session"
    " (docs/tutorial.md, from step 3)."
)


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text, prefix, lambda line: True)


def _text(output: bytes) -> str:
    """A command's output as text, read as Python reads a child's in text mode: in the
    locale's encoding, with universal newlines."""
    text = output.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _env(tmp: Path, root: Path) -> dict[str, str]:
    """The environment of the demo's commands: its own ralphstate home, the scratch
    project as Claude Code's project directory, and no agent session of the shell it
    runs in (the demo's session would then be a stranger to the loop)."""
    env = dict(os.environ)
    inherited = ["RALPHSTATE_DIR", "RALPHSTATE_RUNNER"]
    for agent in every().values():
        named = (agent.marker_env, agent.process_env)
        inherited += [*agent.session_env, *(name for name in named if name)]
    for name in inherited:
        env.pop(name, None)
    claude = every()["claude"]
    env.update({"RALPHSTATE_HOME": str(tmp / "home"), str(claude.project_env): str(root)})
    return env


def _shown(args: list[str]) -> str:
    return "ralphstate " + " ".join(a if " " not in a else f'"{a}"' for a in args)


def run(echo: Callable[[str], None]) -> int:
    with tempfile.TemporaryDirectory(prefix="ralphstate-demo-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        (root / "report.py").write_text(REPORT, encoding="utf-8")
        (root / "test_report.py").write_text(TEST, encoding="utf-8")
        person = _env(Path(tmp), root)
        # The agent's commands and stops run in its Claude Code session.
        agent = {**person, every()["claude"].session_env[0]: SESSION}

        def cli(args: list[str], env: dict[str, str] = agent) -> str:
            done = children.run(
                [sys.executable, "-m", "ralphstate", *args],
                cwd=root,
                env=env,
                timeout=None,
                limit=OUTPUT_BYTES,
            )
            if done.code != 0:
                raise RuntimeError(_text(done.err).strip())
            return _text(done.out).strip()

        check = f"{join_command([sys.executable])} -m unittest -q"
        init = ["init", SPEC, "--check", CHECKED, check, "-c", CLAIMED]
        init += [*[arg for s in STEPS for arg in ("-s", s)], "--max-iterations", "10"]
        echo(
            f"A loop in a scratch project with a failing test: {root}\n"
            "Every stop below runs `ralphstate hook stop`, the command Claude Code runs at\n"
            "each stop. Each stop it blocks begins an iteration; `ralphstate log` numbers\n"
            "its lines by the iteration they happened in.\n"
        )
        # The scratch project gets the hooks, as `ralphstate install` writes them in a real
        # one (its own .claude/settings.local.json): the demo's stops are those hooks.
        cli(["install", "--no-allow"], person)
        echo(f"$ {_shown(init)}\n{cli(init, person)}")
        _trust_own(root, person["RALPHSTATE_HOME"])
        echo(f"{OWN_CHECK}\n")
        for turn, (files, commands, reply) in enumerate(SCRIPT):
            echo(f"--- iteration {turn} ---" if turn else "--- the session's first turn ---")
            for name, text in files.items():
                echo(f"[agent edits] {name}")
                (root / name).write_text(text, encoding="utf-8")
            for command in commands:
                echo(f"[agent runs] {_shown(command)}")
                echo(_indent(cli(command)))
            echo(f"[agent says] {reply}")
            _stop(echo, root, agent, reply, turn > 0)
        echo("$ ralphstate status")
        echo(cli(["status"]))
        echo("\n$ ralphstate log")
        echo(cli(["log"]))
    echo(NEXT)
    return 0


# What the demo says of the check it trusts itself.
OWN_CHECK = (
    "[the demo trusts its own check, in its scratch home; in your projects you run"
    " `ralphstate trust` at your terminal]"
)


def _trust_own(root: Path, home_dir: str) -> None:
    """The check the demo wrote into its scratch loop, trusted in its scratch home
    (`truststore.DEMO`: the record names the demo, never a person). `init` ran in a
    process with no terminal, where nobody trusts a check."""
    from ralphstate.storage.loopdir.store import Store
    from ralphstate.storage.peruser import truststore
    from ralphstate.storage.system.paths import at

    saved = os.environ.get("RALPHSTATE_HOME")
    os.environ["RALPHSTATE_HOME"] = home_dir
    try:
        loop = at(str(root / ".loop"))
        truststore.record(loop, Store(loop).load(), proof={"by": dict(truststore.DEMO)})
    finally:
        if saved is None:
            os.environ.pop("RALPHSTATE_HOME", None)
        else:
            os.environ["RALPHSTATE_HOME"] = saved


def _stop(
    echo: Callable[[str], None], root: Path, env: dict[str, str], reply: str, again: bool
) -> None:
    """The Stop hook at the end of a turn, fed what Claude Code sends it, and what it
    answers: the reason the model reads, or what the person sees."""
    data = orjson.dumps(
        {
            "session_id": SESSION,
            "cwd": str(root),
            "hook_event_name": "Stop",
            "stop_hook_active": again,
            "last_assistant_message": reply,
            "transcript_path": str(root / "transcript.jsonl"),
        }
    )
    done = children.run(
        [sys.executable, "-m", "ralphstate", "hook", "stop"],
        cwd=root,
        env=env,
        input=data,
        timeout=None,
        limit=OUTPUT_BYTES,
    )
    out = orjson.loads(done.out) if done.out.strip() else {}
    if out.get("decision") == "block":
        echo("[stop hook] blocks; the model reads:")
        echo(_indent("Stop hook feedback:\n" + out["reason"]))
    else:
        echo("[stop hook] allows the stop.")
        if out.get("systemMessage"):
            echo(f"[the person sees] {out['systemMessage']}")
    echo("")


@click.command("demo", context_settings=SETTINGS)
def demo_command() -> None:
    """Play a short scripted session through the real hooks, in a scratch directory.

    Shows each stop decision and the reason exactly as the model reads it; needs no
    Claude Code and leaves nothing behind.

    \b
    Example:
      ralphstate demo
    """
    run(output.text)
