"""Red before green through real processes: each check's first result is kept outside
the project; a check already true before any work is said to be in `status`, the report
and the completion message; with expect-fail a check that passes before it ever failed
never completes the loop. The person's commands run in-process (`rs`); the agent's are
real `ralphstate` processes with Claude Code's variables, and its stops real
`ralphstate hook stop` processes, on a real git repository with a real failing check."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import redgreen
from ralphstate.storage.peruser import ledger
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.verify import confine
from tests.helpers import run_process
from tests.helpers.checks import py
from tests.helpers.gitrepo import init_repo, use_identity
from tests.helpers.loops import SID, load, own, stop

AGENT = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": SID}
ADDS = py("import calc, sys; sys.exit(0 if calc.add(2, 3) == 5 else 1)")  # true at the start
MULTIPLIES = py("import calc, sys; sys.exit(0 if calc.mul(2, 3) == 6 else 1)")  # the work
CALC = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return 0\n"
WORKED = CALC.replace("return 0", "return a * b")
ALREADY = "already true at the start: proves nothing about the work"
# How a sealed pass is said here: confined where bubblewrap starts.
LEVEL = "sealed and confined" if confine.bubblewrap() else "sealed"


@pytest.fixture
def repo(project: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git project whose `mul` is wrong: "multiplies" fails until the work is done,
    "adds" passes already."""
    use_identity(monkeypatch, isolated)
    init_repo(project, {"calc.py": CALC, ".gitignore": "__pycache__/\n"})
    return project


def start(rs: Any, root: Path, *extra: str) -> None:
    """The person starts the loop and gives both criteria their checks; the agent's
    session owns it."""
    assert rs("init", "Multiply", "-c", "adds", "-c", "multiplies", *extra).code == 0
    assert rs("criteria", "check", "adds", ADDS).code == 0
    assert rs("criteria", "check", "multiplies", MULTIPLIES).code == 0
    own(root)


def agent(root: Path, *args: str) -> Any:
    """`ralphstate ARGS` run by the agent, from its Bash tool."""
    return run_process(list(args), cwd=root, env=AGENT)


def do_the_work(root: Path) -> None:
    (root / "calc.py").write_text(WORKED)


def claim(root: Path) -> dict[str, Any] | None:
    """The agent sets both criteria true and says the marker: the Stop hook's answer."""
    for name in ("adds", "multiplies"):
        assert agent(root, "criteria", "set", name, "true").returncode == 0
    return stop(root)


def entry(root: Path) -> dict[str, Any]:
    found = ledger.read(LoopPaths(root, root / ".loop"))
    assert found is not None
    return found


def ageless(text: str) -> str:
    return re.sub(r"\d+[smhd] ago", "N ago", text)


# -- already true -------------------------------------------------------------------------


def test_a_check_true_before_any_work_is_said_everywhere(rs: Any, repo: Path) -> None:
    start(rs, repo)
    first = agent(repo, "verify")  # before any work: "adds" passes on the tree it started on
    assert first.returncode == 1 and b"FAIL  multiplies" in first.stdout
    do_the_work(repo)
    out = claim(repo)
    assert out is not None and "decision" not in out, out
    assert out["systemMessage"].endswith(
        f"; verified by its check ({LEVEL}): multiplies; already true before any work: adds."
    )
    state = load(repo)
    assert state["status"] == "complete"
    assert state["evidence"]["adds"]["alreadyTrue"] is True
    assert "alreadyTrue" not in state["evidence"]["multiplies"]
    shown = ageless(rs("status").out)
    assert f"  [x] adds  (verified N ago, {LEVEL}, exit code only, {ALREADY})\n" in shown
    assert f"  [x] multiplies  (verified N ago, {LEVEL}, exit code only)\n" in shown
    report = rs("report").out
    assert "[x] adds: verified on " in report and ALREADY in report
    assert report.count(ALREADY) == 1
    assert ALREADY in rs("report", "--markdown").out


def test_the_honest_path_says_nothing_of_already_true(rs: Any, repo: Path) -> None:
    """The agent's first turn is iteration 0 too: checks that first run after its work,
    on another tree than the loop started on, are plain proofs."""
    start(rs, repo)
    do_the_work(repo)
    out = claim(repo)
    assert out is not None and "decision" not in out, out
    assert out["systemMessage"] == (
        f"ralphstate: loop complete after 0 iterations; verified by their checks ({LEVEL}):"
        " adds, multiplies."
    )
    assert ALREADY not in rs("status").out
    firsts = entry(repo)["firsts"]
    assert firsts["adds"]["tree"] != entry(repo)["startTree"]
    assert (firsts["adds"]["passed"], firsts["adds"]["by"]) == (True, "agent")


def test_in_git_a_persons_first_verify_after_the_code_changed_proves_the_work(
    rs: Any, repo: Path
) -> None:
    """At iteration 0, by the person, no step done: only the tree tells the work was done."""
    start(rs, repo)
    do_the_work(repo)
    assert rs("verify").code == 0
    assert redgreen.already_true(load(repo), entry(repo)) == []
    assert ALREADY not in rs("status").out


def test_outside_git_a_persons_first_verify_before_any_step_is_already_true(
    rs: Any, project: Path
) -> None:
    (project / "calc.py").write_text(CALC)
    start(rs, project)
    assert rs("verify").code == 1  # the person, at iteration 0, no step done
    assert entry(project)["startTree"] is None
    do_the_work(project)
    out = claim(project)
    assert out is not None
    assert out["systemMessage"].endswith("already true before any work: adds.")


def test_outside_git_the_agents_first_verify_proves_the_work(rs: Any, project: Path) -> None:
    (project / "calc.py").write_text(CALC)
    start(rs, project)
    do_the_work(project)
    assert agent(project, "verify").returncode == 0  # the agent, in its first turn
    out = claim(project)
    assert out is not None
    assert "already true" not in out["systemMessage"]


# -- expect-fail ---------------------------------------------------------------------------


def test_a_check_that_passes_before_it_ever_failed_never_completes_the_loop(
    rs: Any, repo: Path
) -> None:
    start(rs, repo)
    done = rs("criteria", "check", "adds", "--expect-fail")
    assert done.out.endswith("; must fail before a pass counts)\n")
    assert load(repo)["expectFail"] == ["adds"]
    do_the_work(repo)
    out = claim(repo)
    assert out is not None and out["decision"] == "block", out
    assert f"- adds: `{ADDS}` {redgreen.HELD} (" in out["reason"]
    assert "multiplies:" not in out["reason"]
    state = load(repo)
    assert state["status"] == "in_progress"
    assert state["criteriaStatus"] == {"adds": False, "multiplies": True}
    again = stop(repo)  # said again at the next stop, without a run of the check
    assert again is not None and again["decision"] == "block", again
    assert f"The check of adds {redgreen.HELD}." in again["reason"]
    assert redgreen.HELD in rs("status").out  # the person reads the same
    assert claim(repo)["decision"] == "block"  # type: ignore[index] # claimed again: held
    held = agent(repo, "verify", "adds")
    assert held.returncode == 1 and held.stdout.decode().startswith("HELD  adds  (")
    # Red, then green: the check fails on the code without the work, then passes.
    (repo / "calc.py").write_text(WORKED.replace("a + b", "a - b"))
    assert agent(repo, "verify", "adds").returncode == 1
    assert entry(repo)["failedOnce"] == {"adds": ADDS}
    do_the_work(repo)
    out = claim(repo)
    assert out is not None and "decision" not in out, out
    assert out["systemMessage"].endswith(f"verified by their checks ({LEVEL}): adds, multiplies.")
    assert load(repo)["status"] == "complete"


def test_a_new_command_starts_again(rs: Any, repo: Path) -> None:
    start(rs, repo)
    assert rs("criteria", "check", "adds", "--expect-fail").code == 0
    (repo / "calc.py").write_text(CALC.replace("a + b", "a - b"))
    assert rs("verify", "adds").code == 1  # red
    (repo / "calc.py").write_text(CALC)
    assert rs("verify", "adds").code == 0  # green: it counts
    assert load(repo)["criteriaStatus"]["adds"] is True
    other = ADDS.replace("(2, 3) == 5", "(1, 1) == 2")
    assert rs("criteria", "check", "adds", other).code == 0
    done = rs("verify", "adds")
    assert done.code == 1 and done.out.startswith("HELD  adds")
    first = entry(repo)["firsts"]["adds"]
    assert (first["command"], first["passed"]) == (other, True)
    assert load(repo)["criteriaStatus"]["adds"] is False


def test_editing_the_state_file_cannot_forge_a_failure(rs: Any, repo: Path) -> None:
    start(rs, repo)
    assert rs("criteria", "check", "adds", "--expect-fail").code == 0
    do_the_work(repo)
    path = repo / ".loop" / "state.json"

    def edit(**changes: Any) -> None:
        raw = orjson.loads(path.read_bytes())
        raw.update(changes)
        path.write_bytes(orjson.dumps(raw))

    failed = {"result": "failing", "command": ADDS, "at": "2026-01-01T00:00:00Z"}
    edit(  # a failure made up in the state, and every criterion set met
        failedOnce={"adds": ADDS},
        criteriaStatus={"adds": True, "multiplies": True},
        evidence={"adds": failed},
    )
    out = stop(repo)
    assert out is not None and out["decision"] == "block", out
    assert f"- adds: `{ADDS}` {redgreen.HELD}" in out["reason"]
    where = ledger.path_of(LoopPaths(repo, repo / ".loop"))
    assert repo.resolve() not in where.resolve().parents  # the ledger is not the project's
    assert "adds" not in entry(repo)["failedOnce"]
    # Dropped by hand, the expect-fail still holds (the approved contract has it), and
    # the weakened contract waits for a person.
    edit(expectFail=[])
    held = agent(repo, "verify", "adds")
    assert held.returncode == 1 and held.stdout.decode().startswith("HELD  adds")
    edit(criteriaStatus={"adds": True, "multiplies": True})
    out = stop(repo)
    assert out is not None and "review" in out["systemMessage"], out
    assert load(repo)["status"] == "paused"
    assert "adds" not in entry(repo)["failedOnce"]


def test_init_expect_fail_takes_the_baseline(rs: Any, repo: Path, tmp_path: Path) -> None:
    template = tmp_path / "template.json"
    checks = {"adds": ADDS, "multiplies": MULTIPLIES}
    template.write_text(
        json.dumps({"spec": "Multiply", "criteria": list(checks), "checks": checks})
    )
    untrusted = rs("init", "--from", str(template), "--expect-fail")
    assert untrusted.out.splitlines()[-3] == (  # then the spec's readiness
        "expect-fail: 2 criteria must fail before a pass counts; the checks are not trusted"
        " here yet, so none ran: each counts a pass once it has failed, after `ralphstate trust`"
    )
    assert "firsts" not in entry(repo)
    assert rs("trust").code == 0
    done = rs("init", "--force", "--from", str(template), "--expect-fail", "-c", "docs")
    assert done.code == 0
    assert done.out.splitlines()[-6:-2] == [
        "expect-fail: 3 criteria must fail before a pass counts",
        "  adds: passes already: will not count until it fails",
        "  multiplies: failing as expected (exit code 1)",
        (
            "  docs: no check yet; the check it gets must fail first (`ralphstate verify`"
            " before the work takes its first result)"
        ),
    ]
    state = load(repo)
    assert state["expectFail"] == ["adds", "multiplies", "docs"]
    assert entry(repo)["failedOnce"] == {"multiplies": MULTIPLIES}
    assert entry(repo)["startTree"] == entry(repo)["firsts"]["adds"]["tree"]
    own(repo)
    do_the_work(repo)
    assert agent(repo, "criteria", "set", "docs", "true").returncode == 0
    out = claim(repo)
    assert out is not None and out["decision"] == "block", out
    assert f"- adds: `{ADDS}` {redgreen.HELD}" in out["reason"]
    assert load(repo)["criteriaStatus"]["multiplies"] is True  # it failed at the start


def test_init_without_the_flag_runs_no_check(rs: Any, repo: Path) -> None:
    template = repo / "template.json"
    template.write_text(json.dumps({"spec": "x", "criteria": ["adds"], "checks": {"adds": ADDS}}))
    assert rs("init", "--from", str(template)).code == 0
    assert rs("trust").code == 0
    assert rs("init", "--force", "--from", str(template)).code == 0
    kept = entry(repo)
    assert "firsts" not in kept and isinstance(kept["startTree"], str)
    assert load(repo)["evidence"] == {} and load(repo)["expectFail"] == []


def test_a_ledger_that_cannot_be_written_never_fails_the_command(
    rs: Any, repo: Path, isolated: Path
) -> None:
    start(rs, repo)
    where = ledger.path_of(LoopPaths(repo, repo / ".loop"))
    for kept in where.parent.iterdir():
        kept.unlink()
    where.parent.rmdir()
    where.parent.write_text("not a directory")  # the ledger's directory cannot be made
    done = rs("verify", "adds")
    assert done.code == 0 and done.out.startswith("PASS  adds")
    assert done.err.startswith("ralphstate: warning: could not write the loop's ledger")
    assert "the checks' first results are not kept" in done.err
    assert load(repo)["criteriaStatus"]["adds"] is True


def test_the_task_gate_refuses_a_task_whose_check_passed_before_it_ever_failed(
    rs: Any, repo: Path
) -> None:
    start(rs, repo)
    assert rs("criteria", "check", "adds", "--expect-fail").code == 0
    data = {
        "session_id": SID,
        "cwd": str(repo),
        "hook_event_name": "TaskCompleted",
        "task_id": "1",
        "task_subject": "Adds",
    }
    done = run_process(["hook", "task-completed"], cwd=repo, input=orjson.dumps(data), timeout=60)
    assert done.returncode == 2, done
    assert f"`{ADDS}`, failed ({redgreen.HELD})" in done.stderr.decode()
    assert load(repo)["criteriaStatus"]["adds"] is False
