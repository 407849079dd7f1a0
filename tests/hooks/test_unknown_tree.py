"""Stale evidence never fails open, through real processes and real git: when the
evidence snapshot cannot be taken (here more nested repositories than a snapshot reads),
the code the checks proved is unknown, so every verified criterion whose evidence names
a tree counts as stale and its check runs again at the next claim; and a change inside
a submodule is a change of the code like any other."""

from __future__ import annotations

import subprocess
from pathlib import Path

import orjson

from ralphstate.core import limits
from tests.helpers import run_process
from tests.helpers.loops import SID
from tests.helpers.person import trust

GIT = ["git", "-c", "user.name=a", "-c", "user.email=a@b"]


def rs(root: Path, *args: str, code: int = 0) -> str:
    done = run_process(list(args), cwd=root, env={"CLAUDE_PROJECT_DIR": str(root)})
    assert done.returncode == code, done
    return done.stdout.decode()


def test_a_snapshot_that_fails_makes_the_evidence_stale_and_the_claim_rechecked(
    root: Path,
) -> None:
    (root / "src").mkdir()
    (root / "src" / "value.txt").write_text("ok\n")
    (root / "check.sh").write_text("grep -qx ok src/value.txt\n")  # guarded, not the value
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)
    rs(root, "init", "Keep the value ok", "--check", "value ok", "sh check.sh")
    trust(root)  # given by a process with no terminal: the person trusts it here
    rs(root, "config", "clean-verify", "off")
    assert "passed" in rs(root, "verify")
    # More nested repositories than a snapshot reads: it cannot be taken any more.
    for n in range(limits.MAX_NESTED_REPOS + 1):
        subprocess.run(["git", "init", "-q", str(root / "scratch" / str(n))], check=True)
    (root / "src" / "value.txt").write_text("gone\n")
    status = orjson.loads(rs(root, "status", "--json"))
    assert status["staleEvidence"] == ["value ok"], status["staleEvidence"]
    data = {"session_id": SID, "cwd": str(root), "last_assistant_message": "Done. <loop-complete>"}
    done = run_process(["hook", "stop"], cwd=root, input=orjson.dumps(data))
    assert done.returncode == 0, done.stderr
    out = orjson.loads(done.stdout)
    assert out.get("decision") == "block", out
    state = orjson.loads((root / ".loop" / "state.json").read_bytes())
    assert state["status"] == "in_progress"
    assert state["evidence"]["value ok"]["result"] == "failing"


def test_a_change_inside_a_submodule_makes_the_evidence_stale(root: Path, tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "value.txt").write_text("ok\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*GIT, *args], cwd=upstream, check=True, capture_output=True)
    (root / "check.sh").write_text("grep -qx ok lib/value.txt\n")
    subprocess.run([*GIT, "init", "-q"], cwd=root, check=True)
    add = ["-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream), "lib"]
    for args in (add, ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)
    rs(root, "init", "Keep the value ok", "--check", "value ok", "sh check.sh")
    trust(root)  # given by a process with no terminal: the person trusts it here
    rs(root, "config", "clean-verify", "off")
    assert "passed" in rs(root, "verify")
    assert orjson.loads(rs(root, "status", "--json"))["staleEvidence"] == []
    (root / "lib" / "value.txt").write_text("gone\n")  # inside the submodule
    status = orjson.loads(rs(root, "status", "--json"))
    assert status["staleEvidence"] == ["value ok"], status["staleEvidence"]
    data = {"session_id": SID, "cwd": str(root), "last_assistant_message": "Done. <loop-complete>"}
    done = run_process(["hook", "stop"], cwd=root, input=orjson.dumps(data))
    out = orjson.loads(done.stdout)
    assert out.get("decision") == "block", out
    state = orjson.loads((root / ".loop" / "state.json").read_bytes())
    assert state["evidence"]["value ok"]["result"] == "failing"
