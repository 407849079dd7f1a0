"""The words a new user reads: counts and plurals, the session start line, `cancel`
twice, `hook` without a name, session ids, usage errors, `init` from a subdirectory, a
task file that went missing, and the help and docs facts that had drifted from the
code."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, get_args

import orjson
import pytest

from ralphstate.agents.claude import EVENTS
from ralphstate.agents.table import HOOKS, NAMES
from ralphstate.core import render, restore
from ralphstate.core import state as st
from ralphstate.core import text as core_text
from tests.helpers import REPO, run_process

DOCS = REPO / "docs"
COMMANDS = (DOCS / "reference" / "commands.md").read_text(encoding="utf-8")
STATE_FILE = (DOCS / "reference" / "state-file.md").read_text(encoding="utf-8")
GOAL = (DOCS / "explanation" / "goal.md").read_text(encoding="utf-8")
NOW = "2026-01-01T00:00:00Z"


def write_state(project: Path, **changes: Any) -> None:
    path = project / ".loop" / "state.json"
    raw = orjson.loads(path.read_bytes())
    raw.update(changes)
    path.write_bytes(orjson.dumps(raw))


# -- counts -----------------------------------------------------------------------------


def test_the_completion_names_the_checks_in_the_plural_when_several() -> None:
    state = st.new("x", ["tests pass", "README mentions add", "lint clean"], [], now=NOW)
    for name in state["criteria"]:
        state["criteriaStatus"][name] = True
    state["evidence"] = {
        "tests pass": {"result": "verified", "at": "2026-01-01T00:00:00Z"},
        "README mentions add": {"result": "verified", "at": "2026-01-01T00:00:00Z"},
    }
    state["iteration"] = 2
    assert render.completed(state) == (
        "ralphstate: loop complete after 2 iterations; verified by their checks (checked in the"
        " agent's environment): tests pass, README mentions add; claimed, without a check:"
        " lint clean."
    )
    del state["evidence"]["README mentions add"]
    said = "; verified by its check (checked in the agent's environment): tests pass;"
    assert said in render.completed(state)


@pytest.mark.parametrize(
    ("checks", "said"),
    [
        (1, " Its 1 check will not run until you review it"),
        (2, " Its 2 checks will not run until you review them"),
    ],
)
def test_an_unknown_loops_notice_counts_its_checks(
    project: Path, rs: Any, tmp_path: Path, checks: int, said: str
) -> None:
    rs("init", "Build it", "-c", "a", "-c", "b")
    clone = tmp_path / "clone"
    shutil.copytree(project / ".loop", clone / ".loop")
    write_state(clone, checks={name: "true" for name in ["a", "b"][:checks]})
    done = run_process(
        ["hook", "session-start"],
        cwd=clone,
        input=orjson.dumps({"session_id": "s-1", "source": "startup", "cwd": str(clone)}),
        env={"CLAUDE_PROJECT_DIR": str(clone)},
    )
    message = orjson.loads(done.stdout)["systemMessage"]
    assert said + " (`ralphstate status`) and run `ralphstate trust`." in message


@pytest.mark.parametrize(
    ("source", "word"),
    [("startup", "in progress"), ("resume", "resumed"), ("compact", "resumed")],
)
def test_the_session_line_says_resumed_only_when_a_session_is_resumed(
    source: str, word: str
) -> None:
    state = st.new("x", ["a"], [], now=NOW)
    assert restore.session_line(state, source) == (
        f"ralphstate: loop {word}: 0/1 criterion, iteration 0/20."
    )
    state["status"] = "paused"
    assert restore.session_line(state, source).startswith("ralphstate: loop paused: ")


def test_a_fresh_sessions_start_says_the_loop_is_in_progress(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "a")
    done = run_process(
        ["hook", "session-start"],
        cwd=project,
        input=orjson.dumps({"session_id": "s-1", "source": "startup", "cwd": str(project)}),
        env={"CLAUDE_PROJECT_DIR": str(project)},
    )
    assert orjson.loads(done.stdout)["systemMessage"] == (
        "ralphstate: loop in progress: 0/1 criterion, iteration 0/20."
    )


# -- commands ------------------------------------------------------------------------------


def test_cancel_on_a_cancelled_loop_says_already_cancelled(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "a")
    assert rs("cancel").out == "cancelled\n"
    before = (project / ".loop" / "state.json").read_bytes()
    again = rs("cancel")
    assert (again.code, again.out, again.err) == (0, "already cancelled\n", "")
    assert (project / ".loop" / "state.json").read_bytes() == before


def test_hook_without_a_name_says_no_hook_was_named(project: Path) -> None:
    done = run_process(["hook"], cwd=project)
    assert (done.returncode, done.stdout) == (0, b"")
    assert done.stderr.decode() == (
        f"ralphstate hook: no hook named; expected one of {', '.join(HOOKS)}; allowing.\n"
    )


def test_hook_help_has_an_example(project: Path) -> None:
    text = run_process(["hook", "--help"], cwd=project).stdout.decode()
    assert "Example:" in text
    assert 'echo \'{"session_id": "s1", "cwd": "."}\' | ralphstate hook stop' in text


@pytest.mark.parametrize(
    ("sid", "shown"),
    [("demo-session-1", "demo-ses…"), ("abc", "abc"), ("12345678", "12345678")],
)
def test_session_ids_are_cut_one_way(sid: str, shown: str) -> None:
    assert core_text.short_id(sid) == shown


def test_init_and_status_cut_the_session_id_the_same_way(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "0a1b2c3d-4e5f")
    first = rs("init", "Build it", "-c", "a").out.splitlines()[0]
    assert first.endswith(", owned by session 0a1b2c3d…")
    assert " · owner 0a1b2c3d… · " in rs("status").out


def test_pause_blocked_without_text_points_at_the_help(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "a")
    done = rs("pause", "--blocked")
    assert done.code == 1
    assert done.err == (
        "ralphstate: Option '--blocked' requires an argument. (see `ralphstate pause --help`)\n"
    )
    assert rs("criteria", "set", "a").err == (
        "ralphstate: Missing argument 'VALUE'. (see `ralphstate criteria set --help`)\n"
    )
    assert rs("criteria", "set", "a", "true", "--note").err == (
        "ralphstate: Option '--note' requires an argument. (see `ralphstate criteria set --help`)\n"
    )


def test_init_from_a_subdirectory_names_the_loops_directory(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / ".git").mkdir()
    rs("init", "Build it", "-c", "a")
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    done = rs("init", "Again", "-c", "b")
    assert done.code == 1
    assert done.err == (
        f"ralphstate: an unfinished loop is already in {project}"
        " (in_progress, spec: 'Build it'); use --force to replace it (a copy is kept).\n"
    )
    monkeypatch.chdir(project)
    assert rs("init", "Again", "-c", "b").err == (
        "ralphstate: an unfinished loop is already here"
        " (in_progress, spec: 'Build it'); use --force to replace it (a copy is kept).\n"
    )


# -- a task file that went missing -------------------------------------------------------


def test_status_shows_no_stale_steps_when_the_task_file_is_gone(project: Path, rs: Any) -> None:
    (project / "TASKS.md").write_text("- [ ] write it\n- [ ] test it\n")
    assert rs("init", "Build it", "-c", "a", "--task", "TASKS.md").code == 0
    (project / "TASKS.md").write_text("- [x] write it\n- [ ] test it\n")
    assert "steps 1/2 (the boxes of TASKS.md):" in rs("status").out
    (project / "TASKS.md").unlink()
    out = rs("status").out
    assert "steps" not in out.replace("the loop's steps", "").replace("The loop's steps", "")
    assert (
        "the task file TASKS.md does not exist. The loop's steps are its boxes, so none are"
        " shown until it can be read again."
    ) in out.splitlines()


# -- help and docs facts ---------------------------------------------------------------------


def section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n#", 1)[0]


def test_the_readme_install_section_names_every_hook_install_writes() -> None:
    said = section(COMMANDS, "## `ralphstate install`")
    for event in EVENTS:
        if event != "PostToolUse":  # the task list's, with `install --tasks`
            assert event in said, event


def test_the_readme_hook_section_names_every_hook() -> None:
    from ralphstate.hooks.entry import USAGE

    hooks = USAGE.split("hook ", 1)[1].split(" ", 1)[0]
    synopsis = " ".join(section(COMMANDS, "## `ralphstate hook`").split("\n\n", 2)[1].split())
    assert f"`hook {hooks} [--agent NAME]`" in synopsis


def test_the_readme_log_section_says_the_default_and_all() -> None:
    said = section(COMMANDS, "## `ralphstate log`")
    assert said.split("\n\n", 2)[1].startswith("`log [-n N] [--json] [--all]`")
    assert "(default 20, at most 10,000)" in " ".join(said.split())


PAUSE_REASONS = {*get_args(st.PauseReason), "limit", "run_max", "commit_failed"}


@pytest.mark.parametrize("text", [STATE_FILE], ids=["state-file.md"])
def test_the_pause_reasons_row_names_every_reason(text: str) -> None:
    row = next(line for line in text.splitlines() if line.startswith("| `pauseReason` |"))
    assert set(re.findall(r"`(\w+)`", row)) >= PAUSE_REASONS, PAUSE_REASONS


def test_the_readme_run_exit_codes_name_a_failed_commit() -> None:
    said = " ".join(section(COMMANDS, "## `ralphstate run`").split())
    assert "3 paused (max, stall, budget, limit, agent errors, step retries, a failed commit," in (
        said
    )


@pytest.mark.parametrize("text", [STATE_FILE], ids=["state-file.md"])
def test_the_owner_agent_row_names_every_agent(text: str) -> None:
    row = next(line for line in text.splitlines() if line.startswith("| `ownerAgent` |"))
    assert set(NAMES) <= set(re.findall(r"`(\w+)`", row))


def test_the_goal_table_names_every_agent_ralphstate_gates() -> None:
    row = next(line for line in GOAL.splitlines() if line.startswith("| agents |"))
    assert row.split("|")[3].strip() == (
        "Claude Code, Codex CLI, Gemini CLI, Cursor, Copilot CLI, opencode"
    )


def test_run_help_gives_the_codex_command_the_readme_gives(rs: Any) -> None:
    text = rs("run", "--help").out
    assert "--full-auto" not in text
    assert 'ralphstate run --agent "codex exec --sandbox workspace-write" --prompt-mode arg' in (
        text
    )
    assert "| Codex CLI | `codex exec --sandbox workspace-write` | `arg` |" in COMMANDS
