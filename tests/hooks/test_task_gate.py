"""The TaskCompleted gate through real `ralphstate hook task-completed` processes: a task
tied to a criterion is completed only when the criterion's check passes (exit 2 and
the check's output on stderr otherwise), with verify-on-stop's trust rules, and every
fault lets the task through."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from ralphstate.core import limits, restore, tie
from ralphstate.core import state as st
from ralphstate.storage.peruser import registry, truststore
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import FIXTURES, run_process
from tests.helpers.checks import (
    FAIL,
    PASS,
    alive,
    py,
    script,
    sleeper,
    terminated_during_check,
    wait_for,
)
from tests.helpers.loops import load
from tests.helpers.person import at_terminal_proof

SID = "session-a"


def make_loop(
    root: Path,
    checks: dict[str, str],
    *,
    criteria: list[str] | None = None,
    session: str | None = SID,
    trusted: bool = True,
    known: bool = True,
    **kw: Any,
) -> Path:
    """A loop owned by `session` whose criteria (unmet) are `criteria`, else `checks`'
    keys, with those checks."""
    names = list(checks) if criteria is None else criteria
    state = st.new(
        "Build the parser", names, ["parser"], session_id=session, now="2026-01-01T00:00:00Z"
    )
    cast(st.Raw, state).update(checks=checks, **kw)
    state = st.normalise(state)
    loop = root / ".loop"
    loop.mkdir(exist_ok=True)
    (loop / "state.json").write_bytes(st.dumps(state))
    paths = LoopPaths(root, loop)
    if known:
        registry.record(paths, state)
    if trusted:
        truststore.record(paths, state, proof=at_terminal_proof())
    return loop / "state.json"


def complete(
    root: Path,
    subject: str,
    description: str | None = None,
    *,
    session: str = SID,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Claude Code's TaskCompleted input for task 1, through a real hook process."""
    data: dict[str, Any] = {
        "session_id": session,
        "transcript_path": str(root / "transcript.jsonl"),
        "cwd": str(root),
        "permission_mode": "default",
        "hook_event_name": "TaskCompleted",
        "task_id": "1",
        "task_subject": subject,
    }
    if description is not None:
        data["task_description"] = description
    return run_process(
        ["hook", "task-completed"], cwd=root, input=orjson.dumps(data), env=env, timeout=60
    )


def history(root: Path) -> list[dict[str, Any]]:
    path = root / ".loop" / "history.jsonl"
    if not path.exists():
        return []
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def touch(path: Path) -> str:
    """A passing check that leaves `path` behind, so a test can tell it ran."""
    return py(f"open({str(path)!r}, 'w').close()")


# -- a tied task is gated on its criterion's check ------------------------------------------


def test_a_failing_check_refuses_the_task_with_its_output(root: Path) -> None:
    make_loop(root, {"tests pass": FAIL, "lint clean": PASS})
    done = complete(root, "Tests pass")
    assert done.returncode == 2
    assert done.stdout == b""
    assert done.stderr.decode() == (
        'ralphstate: this task stays open: the check of criterion "tests pass",'
        f" `{FAIL}`, failed (exit code 3), and the criterion is set back to not verified;"
        " fix what it reports, then complete the task again. The end of its output:\n"
        "    first line\n"
        "    boom: 1 == 2\n"
    )
    state = load(root)
    assert state["criteriaStatus"]["tests pass"] is False
    assert state["evidence"]["tests pass"]["result"] == "failing"
    assert "lint clean" not in state["evidence"]  # only the tied criterion's check ran
    [event] = history(root)
    assert (event["event"], event["criterion"], event["by"], event["task"]) == (
        "check",
        "tests pass",
        "task",
        "Tests pass",
    )
    assert event["exitCode"] == 3


def test_a_passing_check_lets_the_task_complete_and_is_recorded(root: Path) -> None:
    make_loop(root, {"tests pass": PASS})
    done = complete(root, "Write the tokenizer", "Split the input.\ncriterion: tests pass")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    state = load(root)
    assert state["criteriaStatus"] == {"tests pass": True}
    evidence = state["evidence"]["tests pass"]
    assert (evidence["result"], evidence["command"], evidence["exitCode"]) == (
        "verified",
        PASS,
        0,
    )
    assert evidence["outputTail"] == "all good"
    assert [(e["event"], e["by"]) for e in history(root)] == [("check", "task")]


def test_every_tied_criterion_is_checked_and_each_failure_is_told(root: Path) -> None:
    ran = root / "ran"
    make_loop(root, {"a": FAIL, "b": touch(ran), "c": FAIL})
    done = complete(root, "Both", 'criterion: `a`\nand criterion: "B"')
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.count("ralphstate: this task stays open") == 1
    assert 'criterion "a"' in err and 'criterion "c"' not in err
    assert ran.exists()
    assert load(root)["criteriaStatus"] == {"a": False, "b": True, "c": False}
    assert [e["criterion"] for e in history(root)] == ["a", "b"]


def test_the_output_on_stderr_is_made_safe_and_bounded(root: Path) -> None:
    code = (
        "import sys\n"
        "sys.stdout.write(('y' * 99 + '\\n') * 100_000)\n"
        "sys.stdout.write('\\u202eevil\\u202c \\x1b]52;c;aGk=\\x07done\\n')\n"
        "sys.exit(1)\n"
    )
    make_loop(root, {"loud": script(root / "loud.py", code)})
    done = complete(root, "loud")
    assert done.returncode == 2
    err = done.stderr.decode()
    assert len(err) < limits.MAX_REASON_OUTPUT_CHARS + 1000
    assert "\x1b" not in err and "\u202e" not in err
    assert err.endswith("    \\u202eevil\\u202c 52;c;aGk=done\n")


def test_the_input_claude_code_really_sends_is_gated(root: Path) -> None:
    """Claude Code 2.1.330's TaskCompleted input, as recorded (tests/fixtures/agents)."""
    raw = (FIXTURES / "agents" / "claude_task_completed.json").read_text()
    raw = raw.replace("{project}", str(root).replace("\\", "\\\\"))
    raw = raw.replace("{transcript}", str(root / "t.jsonl").replace("\\", "\\\\"))
    data = orjson.loads(raw)
    make_loop(root, {"write the exporter": FAIL}, session=data["session_id"])
    done = run_process(["hook", "task-completed"], cwd=root, input=raw)
    assert done.returncode == 2
    assert done.stderr.decode().startswith(
        'ralphstate: this task stays open: the check of criterion "write the exporter"'
    )


@pytest.mark.skipif(sys.platform == "win32", reason="the command is run by sh")
def test_the_command_install_writes_exits_2(root: Path) -> None:
    """`install --tasks`' TaskCompleted command (`entry.main`, which ends the process
    with `os._exit`), run by sh as Claude Code runs it."""
    from ralphstate.install.agents import hook_command

    make_loop(root, {"tests pass": FAIL})
    data = {"session_id": SID, "cwd": str(root), "task_id": "1", "task_subject": "tests pass"}
    done = subprocess.run(
        ["/bin/sh", "-c", hook_command("TaskCompleted")],
        cwd=root,
        input=orjson.dumps(data),
        capture_output=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode().endswith("    first line\n    boom: 1 == 2\n")


# -- the task goes through, and nothing runs ------------------------------------------------


def test_untrusted_checks_never_run_and_the_person_is_told_once(root: Path) -> None:
    ran = root / "ran"
    make_loop(root, {"tests pass": touch(ran)}, trusted=False)
    first = complete(root, "tests pass")
    assert first.returncode == 0 and not ran.exists()
    out = orjson.loads(first.stdout)
    assert out == {
        "systemMessage": 'ralphstate: the task "tests pass" was let through without running'
        " the check of tests pass: the loop's checks are not trusted on this machine"
        " (changed outside ralphstate, or they came with the repository). Review them"
        " (`ralphstate status`) and run `ralphstate trust`."
    }
    again = complete(root, "tests pass")
    assert (again.returncode, again.stdout) == (0, b"")
    assert not ran.exists()
    assert load(root)["evidence"] == {} and history(root) == []


def test_with_verify_on_stop_off_no_check_runs(root: Path) -> None:
    ran = root / "ran"
    make_loop(root, {"tests pass": touch(ran)}, verifyOnStop=False)
    done = complete(root, "tests pass")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not ran.exists() and history(root) == []


@pytest.mark.parametrize(
    ("subject", "description"),
    [
        ("Write the tokenizer", None),  # names no criterion
        ("tests", "criterion: tests passing"),  # a name that is not a criterion
        ("lint clean", None),  # a criterion without a check
        ("Write it", "see criterion tests pass"),  # no `criterion:` label
    ],
)
def test_a_task_not_tied_to_a_checked_criterion_runs_nothing(
    root: Path, subject: str, description: str | None
) -> None:
    ran = root / "ran"
    make_loop(root, {"tests pass": touch(ran)}, criteria=["tests pass", "lint clean"])
    done = complete(root, subject, description)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not ran.exists() and history(root) == []


@pytest.mark.parametrize(
    "case", ["other session", "unknown here", "paused", "complete", "unowned elsewhere"]
)
def test_a_loop_this_session_does_not_hold_runs_nothing(root: Path, case: str) -> None:
    ran = root / "ran"
    options: dict[str, dict[str, Any]] = {
        "other session": {"session": "session-b"},
        "unknown here": {"session": None, "known": False},
        "paused": {"status": "paused", "pauseReason": "user"},
        "complete": {"status": "complete"},
        "unowned elsewhere": {"session": "session-b", "known": False},
    }
    make_loop(root, {"tests pass": touch(ran)}, **options[case])
    done = complete(root, "tests pass")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not ran.exists() and history(root) == []


def test_an_unowned_loop_known_here_is_gated_without_being_taken(root: Path) -> None:
    make_loop(root, {"tests pass": FAIL}, session=None)
    done = complete(root, "tests pass")
    assert done.returncode == 2
    assert load(root)["sessionId"] is None


def test_inside_ralphstate_run_the_known_loop_is_gated(root: Path) -> None:
    make_loop(root, {"tests pass": FAIL}, session="the-person's-session")
    done = complete(root, "tests pass", session="iteration-7", env={"RALPHSTATE_RUNNER": "1"})
    assert done.returncode == 2


# -- every fault lets the task through ------------------------------------------------------


@pytest.mark.parametrize("content", [b"{not json", b"[]", b'{"version": 99}', b'{"criteria": "x"}'])
def test_a_broken_state_file_lets_the_task_through(root: Path, content: bytes) -> None:
    (root / ".loop").mkdir()
    (root / ".loop" / "state.json").write_bytes(content)
    done = complete(root, "tests pass")
    assert done.returncode == 0
    out = orjson.loads(done.stdout)
    assert out["systemMessage"].startswith("ralphstate: ")
    assert "ralphstate hook task-completed: " in done.stderr.decode()
    assert (root / ".loop" / "state.json").read_bytes() == content


@pytest.mark.parametrize(
    "data", [b"", b"not json", b"[1]", orjson.dumps({"task_subject": "tests pass"})]
)
def test_a_bad_input_lets_the_task_through(root: Path, data: bytes) -> None:
    ran = root / "ran"
    make_loop(root, {"tests pass": touch(ran)})
    done = run_process(["hook", "task-completed"], cwd=root, input=data)
    assert done.returncode == 0 and done.stdout == b""
    assert done.stderr.decode().startswith("ralphstate hook task-completed: ")
    assert not ran.exists()


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_a_fault_while_the_check_runs_lets_the_task_through(root: Path) -> None:
    """The client gives up on the hook (SIGTERM) while its check runs: the check is
    killed, and the hook exits 0, as for any fault."""
    command, pid_file, started = sleeper(root)
    make_loop(root, {"slow": command})
    path = root / ".loop" / "state.json"
    before = path.read_bytes()
    data = {"session_id": SID, "cwd": str(root), "task_id": "1", "task_subject": "slow"}
    code, out, err = terminated_during_check(root, "task-completed", orjson.dumps(data), started)
    assert (code, out) == (0, b"")
    assert err.endswith(
        "ralphstate hook task-completed: stopped while running the loop's checks; the"
        " running check was killed, and the stop is recorded (`ralphstate status` shows"
        " it); allowing.\n"
    )
    wait_for(lambda: not alive(int(pid_file.read_text())), "the check to be killed")
    assert path.read_bytes() != before  # the stop is recorded, nothing else
    state = load(root)
    assert state["verifyInterrupted"] is not None
    assert (state["verifyInterrupted"]["by"], state["verifyInterrupted"]["how"]) == (
        "task",
        "terminated",
    )
    assert state["verifyInterrupted"]["criteria"] == ["slow"]
    assert [(e["event"], e["criteria"]) for e in history(root)] == [
        ("verify_interrupted", ["slow"])
    ]


def test_without_a_loop_the_hook_says_nothing(root: Path) -> None:
    done = complete(root, "tests pass")
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


# -- the tie rule ----------------------------------------------------------------------------


def _state(*criteria: str) -> st.State:
    return st.new("s", list(criteria), [], now="2026-01-01T00:00:00Z")


@pytest.mark.parametrize(
    ("subject", "description", "expected"),
    [
        ("tests pass", "", ["tests pass"]),
        ("  Tests   PASS ", "", ["tests pass"]),
        ("Run the suite", "criterion: tests pass", ["tests pass"]),
        ("Run the suite", "Criterion:   'tests pass'  ", ["tests pass"]),
        ("Lint (criterion: `lint clean`)", "", []),  # the rest of the line is the name
        ("Lint — criterion: lint clean", "", ["lint clean"]),
        ("x", "criterion: lint clean\ncriterion: tests pass", ["tests pass", "lint clean"]),
        ("x", "subcriterion: tests pass", []),  # `criterion:` must start a word
        ("x", "criterion:", []),
        ("tests", "", []),
    ],
)
def test_the_tie_rule(subject: str, description: str, expected: list[str]) -> None:
    assert tie.tied(_state("tests pass", "lint clean"), subject, description) == expected


def test_the_protocol_tells_the_model_how_to_tie_a_task() -> None:
    state = _state("tests pass")
    state["checks"] = {"tests pass": "pytest"}
    context = restore.context(state, "startup")
    assert restore.TIE_TASK in context
    assert restore.TIE_TASK not in restore.context(state, "startup", trusted=False)
    state["verifyOnStop"] = False
    assert restore.TIE_TASK not in restore.context(state, "startup")
    state["checks"] = {}
    assert restore.TIE_TASK not in restore.context(state, "startup")


@pytest.mark.parametrize(
    ("meanwhile", "status"),
    [
        ("pause --reason elsewhere", "paused"),
        ("cancel", "cancelled"),
        ("adopt", "in_progress"),  # another session of Claude Code takes it
    ],
)
@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_a_loop_that_left_the_session_while_the_check_ran_lets_the_task_go(
    root: Path, tmp_path: Path, meanwhile: str, status: str
) -> None:
    """The check itself pauses, cancels or takes the loop (as another process would
    while it runs), then fails: decided again under the lock, the gate records nothing
    and refuses nothing, and the task completes."""
    words = repr(["-m", "ralphstate", *meanwhile.split()])
    check = script(
        tmp_path / "meanwhile.py",
        "import os, subprocess, sys\n"
        "env = dict(os.environ, CLAUDE_CODE_SESSION_ID='session-b')\n"
        f"subprocess.run([sys.executable, *{words}], check=True, env=env)\n"
        "sys.exit(1)\n",
    )
    make_loop(root, {"tests pass": check})
    done = complete(root, "tests pass")
    assert done.returncode == 0, done.stderr
    state = load(root)
    assert state["status"] == status and "tests pass" not in state["evidence"], state
