"""A markdown task file as the loop's backlog (`tasksFile`): its checkboxes are the steps,
re-read at every stop by real `ralphstate hook stop` processes; `step done` ticks a box,
changing only that character; a file that cannot be read fails open and says so."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import limits
from ralphstate.loop import taskfile
from tests.helpers import run_process
from tests.helpers.loops import SID, make_loop

PLAN = (
    b"# Plan\r\n"
    b"- [ ] write the exporter\r\n"
    b"  * [X] nested, already done\r\n"
    b"+ [ ] wire the button   \r\n"
    b"1. [ ] update the changelog\r\n"
    b"```md\r\n"
    b"- [ ] an example in a fence, not a step\r\n"
    b"```\r\n"
    b"- [] not a box\r\n"
    b"trailing text without a newline"
)
STEPS = ["write the exporter", "nested, already done", "wire the button", "update the changelog"]


def hook(root: Path, session: str = SID) -> tuple[dict[str, Any] | None, str]:
    raw = orjson.dumps({"cwd": str(root), "session_id": session})
    done = run_process(["hook", "stop", "--agent", "claude"], cwd=root, input=raw)
    assert done.returncode == 0
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    return out, done.stderr.decode()


def cli(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return run_process(list(args), cwd=root)


def state(root: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = orjson.loads((root / ".loop" / "state.json").read_bytes())
    return loaded


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "a project"
    path.mkdir()
    (path / "TASKS.md").write_bytes(PLAN)
    make_loop(path, steps=[], tasksFile="TASKS.md")
    return path


def test_the_boxes_are_the_steps() -> None:
    names, done = taskfile.steps(taskfile.boxes(PLAN))
    assert names == STEPS
    assert done == ["nested, already done"]


def test_a_step_is_done_when_every_box_of_its_text_is() -> None:
    data = b"- [x] a\n- [ ] b\n  - [ ] a\n"
    assert taskfile.steps(taskfile.boxes(data)) == (["a", "b"], [])


def test_init_takes_the_steps_from_the_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "TASKS.md").write_bytes(PLAN)
    done = cli(tmp_path / "docs", "init", "export", "-c", "tests pass", "--task", "TASKS.md")
    assert done.returncode == 0, done.stderr
    got = state(tmp_path)
    assert got["tasksFile"] == "docs/TASKS.md"
    assert got["steps"] == STEPS
    assert got["completedSteps"] == ["nested, already done"]


def test_init_refuses_a_file_outside_the_project_in_one_sentence(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".git").mkdir()
    (tmp_path / "TASKS.md").write_bytes(PLAN)
    done = cli(project, "init", "export", "-c", "ok", "--task", "../TASKS.md")
    assert done.returncode != 0
    err = done.stderr.decode()
    assert err.count("\n") == 1 and "outside the project" in err and "Traceback" not in err
    assert not (project / ".loop" / "state.json").exists()


def test_step_done_changes_only_the_check_character(root: Path) -> None:
    (root / "TASKS.md").chmod(0o600)
    done = cli(root, "step", "done", "wire the button")
    assert done.returncode == 0, done.stderr
    after = (root / "TASKS.md").read_bytes()
    assert after == PLAN.replace(b"+ [ ] wire", b"+ [x] wire")
    assert ((root / "TASKS.md").stat().st_mode & 0o777) == 0o600 or os.name == "nt"
    got = state(root)
    assert got["completedSteps"] == ["nested, already done", "wire the button"]
    assert cli(root, "step", "undo", "2").returncode == 0  # the nested step, by number
    assert (root / "TASKS.md").read_bytes() == after.replace(b"* [X] nested", b"* [ ] nested")
    assert state(root)["completedSteps"] == ["wire the button"]


def test_step_add_points_at_the_file(root: Path) -> None:
    done = cli(root, "step", "add", "more")
    assert done.returncode != 0 and b"checkboxes of TASKS.md" in done.stderr
    assert (root / "TASKS.md").read_bytes() == PLAN


def test_a_tick_never_overwrites_an_edit_made_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "TASKS.md"
    path.write_bytes(b"- [ ] a\n- [ ] b\n")
    real = taskfile.read
    calls: list[int] = []

    def edited_after_reading(root: Path, name: str) -> bytes:
        data = real(root, name)
        if not calls:  # a person saves the file between the read and the replace
            path.write_bytes(b"- [ ] a\n- [ ] b\n- [ ] c, added by a person\n")
        calls.append(1)
        return data

    monkeypatch.setattr(taskfile, "read", edited_after_reading)
    assert taskfile.tick(tmp_path, "TASKS.md", "a", True)
    assert path.read_bytes() == b"- [x] a\n- [ ] b\n- [ ] c, added by a person\n"
    assert len(calls) == 2


def test_a_person_ticking_boxes_between_stops_is_steps_done(root: Path) -> None:
    out, _ = hook(root)
    assert out is not None and out["decision"] == "block"
    assert state(root)["steps"] == STEPS
    assert state(root)["remainingSteps"][0] == "write the exporter"
    path = root / "TASKS.md"
    path.write_bytes(path.read_bytes().replace(b"- [ ] write", b"- [x] write"))
    path.write_bytes(path.read_bytes() + b"\r\n- [ ] a step the person added")
    out, _ = hook(root)
    assert out is not None and out["decision"] == "block"
    got = state(root)
    assert got["completedSteps"] == ["write the exporter", "nested, already done"]
    assert got["steps"][-1] == "a step the person added"
    assert got["blocksWithoutProgress"] == 0  # a ticked box is progress


def test_the_stop_reason_names_the_next_box(root: Path) -> None:
    path = root / "TASKS.md"
    path.write_bytes(path.read_bytes().replace(b"- [ ] write", b"- [x] write"))
    out, _ = hook(root)
    assert out is not None and "wire the button" in str(out["reason"])


def _missing(root: Path) -> str:
    (root / "TASKS.md").unlink()
    return "the task file TASKS.md does not exist"


def _too_big(root: Path) -> str:
    (root / "TASKS.md").write_bytes(b"- [ ] a\n" * (limits.MAX_TASKS_FILE_BYTES // 8 + 1))
    return f"the task file TASKS.md is bigger than {limits.MAX_TASKS_FILE_BYTES // 1024} KiB"


def _directory(root: Path) -> str:
    (root / "TASKS.md").unlink()
    (root / "TASKS.md").mkdir()
    return "the task file TASKS.md is not a regular file"


def _unreadable(root: Path) -> str:
    if os.name == "nt" or os.geteuid() == 0:
        pytest.skip("permissions do not keep this user from reading")
    (root / "TASKS.md").chmod(0)
    return "the task file TASKS.md cannot be read (Permission denied)"


FAULTS = {"missing": _missing, "too big": _too_big, "a directory": _directory}
FAULTS["unreadable"] = _unreadable


@pytest.mark.parametrize("fault", FAULTS)
def test_a_task_file_that_cannot_be_read_fails_open_and_says_so(root: Path, fault: str) -> None:
    before = (root / ".loop" / "state.json").read_bytes()
    problem = FAULTS[fault](root)
    out, err = hook(root)
    assert out is not None and "decision" not in out
    assert f"ralphstate: {problem}; the loop is not enforced" in str(out["systemMessage"])
    assert err == f"ralphstate hook stop: {problem}; allowing.\n"
    assert (root / ".loop" / "state.json").read_bytes() == before
    status = cli(root, "status")
    assert status.returncode == 0
    said = [line for line in status.stdout.decode().splitlines() if "task file" in line]
    assert said == [
        f"{problem}. The loop's steps are its boxes, so none are shown until it can be read again."
    ]
    assert "steps 0/" not in status.stdout.decode()  # nothing stale
    done = cli(root, "step", "done", "1")
    assert done.returncode != 0 and problem in done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()


def test_a_file_that_keeps_changing_while_read_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    versions = iter([b"- [ ] a\n", b"- [ ] a\n- [", b"- [ ] a\n- [ ] b\n", b"- [ ] a\n- [ ] b\n"])
    monkeypatch.setattr(taskfile, "_read_once", lambda path, name: next(versions))
    assert taskfile.read(tmp_path, "TASKS.md") == b"- [ ] a\n- [ ] b\n"  # two reads agreed
    monkeypatch.setattr(taskfile, "_read_once", lambda path, name: os.urandom(8))
    with pytest.raises(taskfile.TaskFileError, match="kept changing while being read"):
        taskfile.read(tmp_path, "TASKS.md")


WRITER = """
import os, sys
path, versions = sys.argv[1], [v.encode() for v in sys.argv[2:]]
n = 0
while not os.path.exists(path + ".stop"):
    with open(path + ".tmp", "wb") as handle:  # saved as editors save: a new file renamed
        handle.write(versions[n % len(versions)])
    os.replace(path + ".tmp", path)
    n += 1
"""


def test_a_file_changed_while_hooks_read_it(root: Path) -> None:
    one, two = "- [ ] a\n- [ ] b\n", "- [x] a\n- [ ] b\n- [ ] c\n"
    path = root / "TASKS.md"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), one, two])
    try:
        # The plan the loop started from stays until the writer's first save: wait for it.
        deadline = time.monotonic() + 30
        while path.read_bytes() == PLAN and time.monotonic() < deadline:
            time.sleep(0.01)
        for _ in range(6):
            out, err = hook(root)
            assert out is not None
            got = state(root)
            if "decision" in out:  # read whole: one version or the other, never a mix
                assert (got["steps"], got["completedSteps"]) in (
                    (["a", "b"], []),
                    (["a", "b", "c"], ["a"]),
                )
            else:  # or the reads never agreed: the stop went through and said so
                assert "task file TASKS.md" in str(out["systemMessage"]), err
    finally:
        Path(str(path) + ".stop").touch()
        writer.wait(timeout=30)


def test_a_file_of_the_limit_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "TASKS.md"
    path.write_bytes(b"- [ ] a\n" + b" " * (limits.MAX_TASKS_FILE_BYTES - 8))
    assert len(taskfile.read(tmp_path, "TASKS.md")) == limits.MAX_TASKS_FILE_BYTES
    path.write_bytes(path.read_bytes() + b" ")
    with pytest.raises(taskfile.TaskFileError, match="is bigger than"):
        taskfile.read(tmp_path, "TASKS.md")


def test_a_symlink_out_of_the_project_is_outside(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "elsewhere.md").write_bytes(b"- [ ] a\n")
    (project / "TASKS.md").symlink_to(tmp_path / "elsewhere.md")
    with pytest.raises(taskfile.TaskFileError, match="outside the project"):
        taskfile.read(project, "TASKS.md")
    with pytest.raises(taskfile.TaskFileError, match="outside the project"):
        taskfile.tick(project, "TASKS.md", "a", True)
    assert (tmp_path / "elsewhere.md").read_bytes() == b"- [ ] a\n"
