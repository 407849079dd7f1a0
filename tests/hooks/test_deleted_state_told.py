"""A state.json deleted while its loop was not over, as the first design note's error
table has it ("Tracker file deleted mid-loop: passthrough, Claude stops. Log
warning."): the hook that finds it gone lets the agent go and says so once, on stderr,
in the log and to the person, whichever hook comes first (the Stop hook or the next
SessionStart); real `ralphstate init` and hook processes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from ralphstate.storage.peruser import logs
from tests.helpers import run_process


def start(root: Path) -> None:
    done = run_process(["init", "Build the parser", "-c", "tests pass", "-s", "parser"], cwd=root)
    assert done.returncode == 0, done.stderr


def hook(root: Path, event: str, agent: str = "claude") -> tuple[dict[str, object] | None, str]:
    """The hook `event` as a real process: its answer and its stderr."""
    data = {
        "session_id": "session-a",
        "cwd": str(root),
        "source": "startup",
        "last_assistant_message": "All done. <loop-complete>",
    }
    done = run_process(
        ["hook", event, "--agent", agent], cwd=root, input=orjson.dumps(data), timeout=60
    )
    assert done.returncode == 0, done
    out = orjson.loads(done.stdout) if done.stdout.strip() else None
    return out, done.stderr.decode()


def logged() -> str:
    path = logs.path()
    return path.read_text(encoding="utf-8") if path.exists() else ""


@pytest.mark.parametrize("first", ["stop", "session-start"])
def test_a_deleted_state_is_said_once_on_stderr_in_the_log_and_to_the_person(
    project: Path, first: str
) -> None:
    start(project)
    (project / ".loop" / "state.json").unlink()

    out, err = hook(project, first)

    assert "decision" not in (out or {}), out  # fails open: the agent goes
    message = str((out or {}).get("systemMessage", ""))
    for said in (message, err, logged()):
        assert "state.json was deleted" in said and "not verified" in said, (said, out, err)
    assert err.startswith(f"ralphstate hook {first}: "), err
    # Said once: neither hook says it again, anywhere.
    for again in ("stop", "session-start"):
        out, err = hook(project, again)
        assert (out, err) == (None, ""), (again, out, err)
    assert logged().count("state.json was deleted") == 1


def test_an_agent_that_shows_no_message_still_has_it_on_stderr_and_in_the_log(
    project: Path,
) -> None:
    start(project)
    (project / ".loop" / "state.json").unlink()

    out, err = hook(project, "stop", agent="cursor")

    assert out is None, out
    assert "state.json was deleted" in err and "state.json was deleted" in logged(), err


def test_a_loop_that_ended_before_its_file_was_deleted_says_nothing(project: Path) -> None:
    start(project)
    assert run_process(["cancel"], cwd=project).returncode == 0
    (project / ".loop" / "state.json").unlink()

    assert hook(project, "session-start") == (None, "")
    assert hook(project, "stop") == (None, "")
    assert "deleted" not in logged()


@pytest.mark.parametrize("first", ["stop", "session-start"])
def test_a_deleted_loop_directory_is_said_at_that_very_stop(project: Path, first: str) -> None:
    """The whole `.loop/` deleted (`rm -rf .loop`): the Stop hook that follows finds the
    loop's trace (one `stat` in the per-user state directory) and says it once, to the
    person, letting the agent go (never a block); so does a session start, whichever
    comes first, without making the directory again. Then the trace is dropped: the
    next stops cost what a stop without a loop costs."""
    import shutil

    from ralphstate.storage.system import paths

    start(project)
    assert paths.traced(project / ".loop")
    shutil.rmtree(project / ".loop")

    out, err = hook(project, first)
    assert "decision" not in (out or {}), out
    message = str((out or {}).get("systemMessage", ""))
    for said in (message, err, logged()):
        assert "directory (.loop) was deleted" in said and "not verified" in said, said
    assert not (project / ".loop").exists()
    for again in ("stop", "session-start"):
        assert hook(project, again) == (None, "")
    assert not paths.traced(project / ".loop")


def test_a_stop_where_no_loop_ever_was_leaves_no_trace_and_says_nothing(project: Path) -> None:
    from ralphstate.storage.system import paths

    assert hook(project, "stop") == (None, "")
    assert not paths.traced(project / ".loop")
    assert not Path(paths.traces_dir() or "/nonexistent").exists()


@pytest.mark.parametrize("first", ["stop", "session-start"])
def test_a_deleted_loop_hidden_by_an_outer_one_is_said(project: Path, first: str) -> None:
    """`rm -rf .loop` in a project inside another loop's project: the hooks would find
    the outer loop instead. The first of them says the inner loop was deleted, to the
    person (and, at a session start, to the agent), naming both; then the outer loop is
    the hooks' as before."""
    import shutil

    start(project)
    inner = project / "inner"
    inner.mkdir()
    start(inner)
    shutil.rmtree(inner / ".loop")

    out, err = hook(inner, first)

    assert "decision" not in (out or {}), out
    message = str((out or {}).get("systemMessage", ""))
    for said in (message, err):
        assert str(inner / ".loop") in said and "was deleted" in said, (said, out, err)
        assert "not verified" in said and str(project / ".loop") in said, said
    if first == "session-start":
        context = str(out and out.get("hookSpecificOutput"))
        assert str(inner / ".loop") in context and "was deleted" in context, out
    assert not (inner / ".loop").exists()
    again, _ = hook(inner, "session-start")
    assert "was deleted" not in str(again), again
