"""`ralphstate run --sandbox bwrap` with real processes: a scripted agent
(tests/sandbox/agent.py) tries to write the trust store, the approved contract, a
guarded test, git's configuration and hooks, `~/.ssh` and files outside the project,
and to read another project's files. None of it reaches the real files; its honest
work (editing code, `criteria set`, `verify`, a commit) goes through, and the run
completes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson

from ralphstate.run.spawn import join_command
from tests.adversarial.scripted import Person, history, state
from tests.helpers.gitrepo import git
from tests.sandbox import agent
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap


def attempts(log: str) -> dict[str, object]:
    found: dict[str, object] = {}
    for line in log.splitlines():
        if line.startswith("{"):
            found.update(json.loads(line))
    return found


def ralphstate_files(home: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in home.rglob("*") if p.is_file()}


@needs_bwrap
def test_the_agent_reaches_nothing_it_must_not_and_its_honest_work_goes_through(
    calc: Path, person: Person, isolated: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other project"
    other.mkdir()
    (other / "secret.txt").write_text("the other project's secret\n")
    ledger = sorted((isolated / "data" / "loops").glob("*.json"))
    assert ledger, "the person's loop has an approved contract in the ledger"
    home = Path(os.environ["HOME"])
    targets = {
        "trust store": str(isolated / "data" / "trust.json"),
        "approved contract": str(ledger[0]),
        "guarded test": str(calc / "tests" / "test_calc.py"),
        "git config": str(calc / ".git" / "config"),
        "git hook": str(calc / ".git" / "hooks" / "pre-commit"),
        "ssh": str(home / ".ssh" / "authorized_keys"),
        "outside the project": str(tmp_path / "outside.txt"),
        "system": "/usr/local/ralphstate-sandbox-test",
        "read other project": str(other / "secret.txt"),
    }
    before = ralphstate_files(isolated)
    done = person.rs(
        "run",
        "--sandbox",
        "bwrap",
        "--agent",
        agent.command(tmp_path / "agent", targets),
        "--max",
        "1",
        "--json",
        ok=False,
    )
    out = orjson.loads(done.stdout)
    log = (calc / ".loop" / "runs" / "0001.log").read_text()
    said = attempts(log)
    # Nothing the agent wrote reached a real file.
    for name in ("trust store", "approved contract", "guarded test", "git config", "ssh"):
        assert agent.MARK not in Path(targets[name]).read_text(), (name, said)
    for name in ("git hook", "outside the project", "system"):
        assert not Path(targets[name]).exists(), (name, said)
    for path, data in ralphstate_files(isolated).items():
        assert agent.MARK.encode() not in data, path
    assert set(before) <= set(ralphstate_files(isolated))
    assert "the other project's secret" not in log, said
    assert str(said["read other project"]).startswith("refused"), said
    for name in ("trust store", "approved contract", "guarded test", "git config", "system"):
        assert str(said[name]).startswith("refused: Read-only file system"), (name, said)
    # The honest work went through, and the run completed.
    assert said["edit code"] == "done", said
    assert said["criteria set"] == 0 and said["verify"] == 0, said
    assert said["commit"] == 0, said
    assert git(calc, "log", "-1", "--format=%s") == "calc: write mul"
    assert out["outcome"] == "complete", (out, done.stderr)
    assert state(calc)["criteriaStatus"] == {"tests pass": True, "docs written": True}
    # Each iteration says how it was confined: the JSON, the summary, the history.
    assert out["runs"][0]["sandbox"] == "bubblewrap"
    assert "sandbox: bubblewrap" in done.stderr
    assert history(calc, "run_iteration")[-1]["sandbox"] == "bubblewrap"
    assert "sandbox of the last run: bubblewrap" in person.rs("status").stdout
    assert orjson.loads(person.rs("status", "--json").stdout)["lastRunSandbox"] == "bubblewrap"
    assert "· sandbox: bubblewrap" in person.rs("report").stdout
    assert "(sandbox: bubblewrap)" in person.rs("report", "--markdown").stdout
    assert "(sandbox: bubblewrap)" in person.rs("report", "--html", "-o", "-").stdout


def stand_in(directory: Path, script: str) -> dict[str, str]:
    """An environment whose `bwrap` is the shell `script`, first on PATH."""
    directory.mkdir()
    program = directory / "bwrap"
    program.write_text("#!/bin/sh\n" + script)
    program.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{directory}{os.pathsep}{env['PATH']}"
    return env


def test_a_bubblewrap_that_cannot_start_stops_the_run_before_any_iteration(
    calc: Path, tmp_path: Path
) -> None:
    env = stand_in(
        tmp_path / "broken", 'echo "bwrap: setting up uid map: Permission denied" >&2\nexit 1\n'
    )
    done = Person(calc, env).rs(
        "run",
        "--sandbox",
        "bwrap",
        "--agent",
        agent.command(tmp_path / "agent", {}),
        "--max",
        "2",
        ok=False,
    )
    assert done.returncode == 1, done
    assert done.stderr.strip().splitlines() == [
        (
            "ralphstate: the bubblewrap sandbox cannot start (bwrap: setting up uid map:"
            " Permission denied); the run does not go on unconfined (`ralphstate doctor` says"
            " which sandboxes work here)."
        )
    ]
    assert not (calc / "agent-ran").exists()
    assert history(calc, "iteration_started") == []
    assert state(calc)["iteration"] == 0


def test_a_bubblewrap_that_breaks_during_the_run_never_runs_the_agent_unconfined(
    calc: Path, tmp_path: Path
) -> None:
    """The trial start works; every later start fails: the iterations fail, and the agent
    never runs outside the sandbox."""
    real = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True, text=True)
    counter = tmp_path / "starts"
    env = stand_in(
        tmp_path / "flaky",
        f"n=$(cat {join_command([str(counter)])} 2>/dev/null || echo 0)\n"
        f"echo $((n + 1)) > {join_command([str(counter)])}\n"
        f'[ "$n" = 0 ] && exec {real.stdout.strip()} "$@"\n'
        'echo "bwrap: Creating new namespace failed" >&2\nexit 1\n',
    )
    done = Person(calc, env).rs(
        "run",
        "--sandbox",
        "bwrap",
        "--agent",
        agent.command(tmp_path / "agent", {}),
        "--max",
        "2",
        "--json",
        ok=False,
    )
    out = orjson.loads(done.stdout)
    assert int(counter.read_text()) == 3  # the trial, then one start per iteration
    assert not (calc / "agent-ran").exists()
    assert out["outcome"] != "complete"
    assert [r["sandbox"] for r in out["runs"]] == ["bubblewrap", "bubblewrap"]
    assert all(r["exit"] == 1 for r in out["runs"]), out


def test_off_says_the_agent_runs_unconfined(calc: Path, tmp_path: Path) -> None:
    done = Person(calc).rs(
        "run",
        "--sandbox",
        "off",
        "--agent",
        agent.command(tmp_path / "agent", {}, honest=True),
        "--max",
        "1",
        "--json",
        ok=False,
    )
    assert "sandbox: off; the agent runs unconfined" in done.stderr
    assert orjson.loads(done.stdout)["runs"][0]["sandbox"] == "unconfined"
    assert (calc / "agent-ran").exists()


def test_the_prompt_file_in_the_hidden_tmp_reaches_the_agent(calc: Path, tmp_path: Path) -> None:
    """`--prompt-mode file`: the prompt file lies in the system's temporary directory,
    which bubblewrap hides; it is shown to the agent read-only all the same."""
    script = "import sys; open('got-prompt', 'w').write(open(sys.argv[1]).read())"
    command = join_command([sys.executable, "-c", script, "{prompt_file}"])
    done = Person(calc).rs(
        "run", "--sandbox", "bwrap", "--agent", command, "--max", "1", "--json", ok=False
    )
    assert orjson.loads(done.stdout)["runs"][0]["exit"] == 0, done.stderr
    assert "You are iteration 1" in (calc / "got-prompt").read_text()
