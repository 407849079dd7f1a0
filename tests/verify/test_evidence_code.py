"""Evidence tied to code, in real repositories: every check result records the commit,
whether the tree was dirty and the tree's id; `status` marks a criterion proven on
other code stale; the Stop hook re-runs stale checks before it accepts a completion."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import run_process
from tests.helpers.checks import FAIL, py
from tests.helpers.gitrepo import git, init_repo, use_identity
from tests.helpers.loops import load

SID = "session-a"
AGE = re.compile(r"\b\d+s\b")


@pytest.fixture
def repo(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, {"app.py": "VALUE = 1\n"})
    return project


def history(root: Path, name: str) -> list[dict[str, Any]]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    return [e for e in map(orjson.loads, lines) if e["event"] == name]


# The check: app.py holds VALUE = 1 (a person can break it by editing the file).
VALUE_IS_1 = py("import sys; sys.exit(0 if 'VALUE = 1' in open('app.py').read() else 1)")


def verified_loop(rs: Any, repo: Path) -> None:
    assert rs("init", "Keep the value", "-c", "value is one").code == 0
    assert rs("criteria", "check", "value is one", VALUE_IS_1).code == 0
    assert rs("verify").code == 0


def test_a_check_result_records_the_commit_dirty_flag_and_tree(rs: Any, repo: Path) -> None:
    verified_loop(rs, repo)
    evidence = load(repo)["evidence"]["value is one"]
    assert evidence["commit"] == git(repo, "rev-parse", "HEAD")
    assert evidence["dirty"] is False  # the loop's own .loop/ is not code
    assert evidence["tree"] == git(repo, "rev-parse", "HEAD^{tree}")
    (check,) = history(repo, "check")
    assert (check["commit"], check["dirty"], check["tree"]) == (
        evidence["commit"],
        False,
        evidence["tree"],
    )
    (repo / "notes.txt").write_text("dirty\n")
    assert rs("verify").code == 0
    again = load(repo)["evidence"]["value is one"]
    assert again["dirty"] is True and again["tree"] != evidence["tree"]


def test_outside_git_a_check_result_records_no_code(rs: Any, project: Path) -> None:
    assert rs("init", "x", "-c", "ok").code == 0
    assert rs("criteria", "check", "ok", py("pass")).code == 0
    assert rs("verify").code == 0
    evidence = load(project)["evidence"]["ok"]
    assert evidence["result"] == "verified"
    assert not {"commit", "dirty", "tree"} & set(evidence)


def test_status_marks_a_criterion_stale_when_the_code_changed(rs: Any, repo: Path) -> None:
    verified_loop(rs, repo)
    fresh = AGE.sub("Ns", rs("status").out)
    already = ", already true at the start: proves nothing about the work"  # verified at once
    where = ", checked in the agent's environment, exit code only"  # in the work tree
    assert f"[x] value is one  (verified Ns ago{where}{already})\n" in fresh
    (repo / "app.py").write_text("VALUE = 1\nOTHER = 2\n")
    stale = AGE.sub("Ns", rs("status").out)
    assert (
        f"[x] value is one  (verified Ns ago{where}, stale: the code changed since{already})\n"
        in stale
    )
    git(repo, "commit", "-qam", "other")  # committing the same code keeps it stale
    assert "stale: the code changed since" in rs("status").out
    (repo / "app.py").write_text("VALUE = 1\n")  # back to the code it was proven on
    git(repo, "commit", "-qam", "back")
    assert f"[x] value is one  (verified Ns ago{where}{already})\n" in AGE.sub(
        "Ns", rs("status").out
    )


# -- the Stop hook re-runs stale checks --------------------------------------------------


def claim(root: Path) -> tuple[dict[str, Any] | None, str]:
    data = {
        "session_id": SID,
        "cwd": str(root),
        "last_assistant_message": "Done. <loop-complete>",
    }
    done = run_process(["hook", "stop"], cwd=root, input=orjson.dumps(data), timeout=60)
    assert done.returncode == 0
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    return out, done.stderr.decode()


def owned_verified_loop(rs: Any, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", SID)
    assert rs("init", "Keep the value", "-c", "value is one").code == 0
    monkeypatch.delenv("CLAUDE_CODE_SESSION_ID")
    # the person gives the check: an agent's would wait for the person's trust
    assert rs("criteria", "check", "value is one", VALUE_IS_1).code == 0
    assert rs("verify").code == 0
    # Verify-on-stop off, so that only the staleness of the evidence runs a check.
    assert rs("config", "verify-on-stop", "false").code == 0
    state = load(repo)
    assert (state["sessionId"], state["verifyOnStop"]) == (SID, False)


def test_a_completion_on_changed_code_reruns_the_stale_check_and_blocks_a_failure(
    rs: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owned_verified_loop(rs, repo, monkeypatch)
    (repo / "app.py").write_text("VALUE = 2\n")  # the change breaks what was proven
    out, err = claim(repo)
    assert err == ""
    assert out is not None and out["decision"] == "block"
    assert out["reason"].startswith(
        "You claimed every criterion; ralphstate ran the checks and 1 failed."
    )
    state = load(repo)
    assert state["status"] == "in_progress"
    assert state["criteriaStatus"] == {"value is one": False}
    assert state["evidence"]["value is one"]["result"] == "failing"
    assert [e["by"] for e in history(repo, "check")] == ["verify", "stop"]


def test_a_completion_on_changed_code_that_still_passes_completes_with_fresh_evidence(
    rs: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owned_verified_loop(rs, repo, monkeypatch)
    old = load(repo)["evidence"]["value is one"]["tree"]
    (repo / "app.py").write_text("VALUE = 1\nMORE = 3\n")
    out, err = claim(repo)
    assert err == ""
    assert out is None or out.get("decision") != "block"
    state = load(repo)
    assert state["status"] == "complete"
    new = state["evidence"]["value is one"]
    assert new["result"] == "verified" and new["tree"] != old and new["dirty"] is True
    assert [e["by"] for e in history(repo, "check")] == ["verify", "stop"]


def test_a_completion_on_the_code_that_was_proven_runs_nothing(
    rs: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owned_verified_loop(rs, repo, monkeypatch)
    git(repo, "add", ".loop")
    git(repo, "commit", "-qm", "the loop")  # a new commit, the same code
    claim(repo)
    assert load(repo)["status"] == "complete"
    assert [e["by"] for e in history(repo, "check")] == ["verify"]


def test_stale_checks_that_are_not_trusted_pause_and_never_run(
    rs: Any, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    owned_verified_loop(rs, repo, monkeypatch)
    path = repo / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    marker = repo / "ran.txt"
    raw["checks"]["value is one"] = FAIL + " && " + py(f"open({str(marker)!r}, 'w')")
    raw["evidence"]["value is one"]["command"] = raw["checks"]["value is one"]
    path.write_bytes(orjson.dumps(raw))  # a hand edit: the approved check was replaced
    (repo / "app.py").write_text("VALUE = 5\n")
    claim(repo)
    state = load(repo)
    assert (state["status"], state["pauseReason"]) == ("paused", "review")
    assert not marker.exists()
