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

import orjson

from ralphstate.agents.table import every
from ralphstate.storage import children

SESSION = "demo-session-0001"
SPEC = "Add a --json flag to the report command"
CRITERIA = ["tests pass", "README documents --json"]
STEPS = ["add the flag", "write tests", "update README"]
OUTPUT_BYTES = 1024 * 1024  # of each command's stdout and stderr, the most kept

# What the agent does in each turn: commands it runs, then its final reply.
SCRIPT: list[tuple[list[list[str]], str]] = [
    ([], "I added the --json flag. I think the task is finished."),
    (
        [
            ["step", "done", "add the flag"],
            ["step", "done", "write tests"],
            ["criteria", "set", "tests pass", "true"],
        ],
        "Tests pass now (12 passed). Done! <loop-complete>",
    ),
    (
        [["step", "done", "update README"], ["criteria", "set", "README documents --json", "true"]],
        "The README has a --json section with an example.",
    ),
    (
        [],
        "Every criterion is verified: tests pass and the README documents --json.\n<loop-complete>",
    ),
]


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text, prefix, lambda line: True)


def _text(output: bytes) -> str:
    """A command's output as text, read as Python reads a child's in text mode: in the
    locale's encoding, with universal newlines."""
    text = output.decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


def run(echo: Callable[[str], None]) -> int:
    with tempfile.TemporaryDirectory(prefix="ralphstate-demo-") as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        env = dict(os.environ)
        # Run from inside any agent's shell, the demo's `init` must not be owned by that
        # agent's session: its Claude Code session below would then be a stranger.
        inherited = ["RALPHSTATE_DIR", "RALPHSTATE_RUNNER"]
        for agent in every().values():
            named = (agent.marker_env, agent.process_env)
            inherited += [*agent.session_env, *(name for name in named if name)]
        for name in inherited:
            env.pop(name, None)
        claude = every()["claude"]
        env.update(
            {
                "RALPHSTATE_HOME": str(Path(tmp) / "home"),
                str(claude.project_env): str(root),
                claude.session_env[0]: SESSION,
            }
        )

        def cli(args: list[str]) -> str:
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

        def shown(args: list[str]) -> str:
            return "ralphstate " + " ".join(a if " " not in a else f'"{a}"' for a in args)

        init = [
            "init",
            SPEC,
            *[arg for c in CRITERIA for arg in ("-c", c)],
            *[arg for s in STEPS for arg in ("-s", s)],
            "--max-iterations",
            "10",
        ]
        echo(
            f"A loop in a scratch project ({root}); every stop below runs\n"
            "`ralphstate hook stop`, the command Claude Code runs at each stop.\n"
        )
        echo(f"$ {shown(init)}\n{cli(init)}\n")
        for turn, (commands, reply) in enumerate(SCRIPT, 1):
            echo(f"--- turn {turn} ---")
            for command in commands:
                echo(f"[agent runs] {shown(command)}")
                echo(_indent(cli(command)))
            echo(f"[agent says] {reply}")
            data = orjson.dumps(
                {
                    "session_id": SESSION,
                    "cwd": str(root),
                    "hook_event_name": "Stop",
                    "stop_hook_active": turn > 1,
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
        echo("$ ralphstate status")
        echo(cli(["status"]))
        echo("\n$ ralphstate log")
        echo(cli(["log"]))
    return 0
