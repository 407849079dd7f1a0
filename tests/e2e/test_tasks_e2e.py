"""The agent's task list kept with the loop, end to end: the real client with its task
tools switched on, the hooks `ralphstate install --tasks` writes, a scripted model.

- The model's TaskCreate and TaskUpdate calls become the loop's steps (PostToolUse).
- Completing a task tied to a criterion whose check fails is refused (TaskCompleted),
  and the model reads why in its next request; once the check passes, the task
  completes.
- After `/compact`, the restored context lists the tasks, which the client itself no
  longer shows the model (tests/e2e/README.md, "What the client does": where tasks live).

Callable turns read `.loop/state.json` while the client is still running, so the tests
see each call's effect when the model would.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from e2e_support import Cli, RunClaude, history, trust_at_terminal
from e2e_support import read_state as loop_state
from fake_api import (
    CONTEXT,
    Block,
    FakeAnthropicAPI,
    bash,
    feedback,
    loop_context,
    task_create,
    task_update,
    text,
    texts,
    todo,
    tool_result,
    tool_use,
)

pytestmark = pytest.mark.e2e

REFUSED = "TaskCompleted hook feedback:\n"


def install_tasks(cli: Cli, project: Path) -> dict[str, Any]:
    """`ralphstate install --tasks`; the settings it wrote, which must switch the task
    tools on and run both task hooks."""
    cli("install", "--tasks")
    written = project / ".claude" / "settings.local.json"
    settings: dict[str, Any] = json.loads(written.read_text())
    assert settings["env"]["CLAUDE_CODE_ENABLE_TODO_TOOLS"] == "1"
    assert {"PostToolUse", "TaskCompleted", "Stop", "SessionStart"} <= set(settings["hooks"])
    return settings


def stored_task(home: Path, session: str, task_id: str) -> dict[str, Any]:
    """A task as the client keeps it (`~/.claude/tasks/SESSION/ID.json`)."""
    path = home / ".claude" / "tasks" / session / f"{task_id}.json"
    task: dict[str, Any] = json.loads(path.read_text())
    return task


class Snapshots:
    """Turns that first copy the loop's state, so a test sees what each call changed."""

    def __init__(self, project: Path) -> None:
        self.project = project
        self.states: list[dict[str, Any]] = []

    def then(self, *blocks: Block) -> Callable[[dict[str, Any]], Sequence[Block]]:
        def turn(_body: dict[str, Any]) -> Sequence[Block]:
            self.states.append(loop_state(self.project))
            return blocks

        return turn


def mirrored(state: dict[str, Any]) -> list[tuple[str, str, str | None, bool]]:
    """The mirrored task list as (id, status, step, added)."""
    return [(t["id"], t["status"], t["step"], t["added"]) for t in state["taskList"]]


def test_the_models_task_calls_become_the_loops_steps(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    install_tasks(cli, project)
    cli("init", "Add a CSV export", "-c", "export works", "-s", "Write the docs",
        "--max-iterations", "6")  # fmt: skip
    cli("step", "done", "Write the docs")
    seen = Snapshots(project)
    api.add_turns(
        [text("Planning."), task_create("Write the exporter", "CSV export of the report")],
        seen.then(task_create("Test the exporter", "Run the tests")),
        seen.then(task_update("1", "in_progress")),
        seen.then(task_update("1", "completed")),
        seen.then(text("The exporter is written.")),
        [task_update("2", "completed")],
        [bash('ralphstate criteria set "export works" true')],
        [text("Exported and tested. <loop-complete>")],
    )

    done, result = run_claude(project, "Add a CSV export", timeout=120)

    assert done.returncode == 0, done.stderr
    assert result["result"] == "Exported and tested. <loop-complete>"
    session = result["session_id"]
    created_one, created_two, started, completed = seen.states
    assert created_one["steps"] == ["Write the docs", "Write the exporter"]
    assert created_one["completedSteps"] == ["Write the docs"]
    assert mirrored(created_one) == [("1", "pending", "Write the exporter", True)]
    assert created_two["steps"] == ["Write the docs", "Write the exporter", "Test the exporter"]
    assert [t["list"] for t in created_two["taskList"]] == [session, session]
    assert mirrored(started)[0] == ("1", "in_progress", "Write the exporter", True)
    assert started["completedSteps"] == ["Write the docs"]
    assert completed["completedSteps"] == ["Write the docs", "Write the exporter"]
    assert completed["remainingSteps"] == ["Test the exporter"]
    # The Stop hook holds the loop on the mirrored plan.
    block = feedback(api.conversation()[5])
    assert "1 of 1 criterion not verified yet" in block
    assert 'ralphstate step done "Test the exporter"' in block
    state = loop_state(project)
    assert state["status"] == "complete"
    assert state["steps"] == ["Write the docs", "Write the exporter", "Test the exporter"]
    assert state["remainingSteps"] == []
    assert mirrored(state) == [
        ("1", "completed", "Write the exporter", True),
        ("2", "completed", "Test the exporter", True),
    ]
    tasks = [(e["action"], e["id"]) for e in history(project) if e["event"] == "task"]
    assert tasks == [
        ("added", "1"),
        ("added", "2"),
        ("in_progress", "1"),
        ("completed", "1"),
        ("completed", "2"),
    ]
    status = cli("status").stdout
    assert "(task list: #1)" in status
    assert "(task list: #2)" in status


def test_todo_write_items_become_the_loops_steps_where_that_is_the_tool(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    install_tasks(cli, project)
    cli("init", "Add a CSV export", "-c", "export works", "--max-iterations", "6")
    seen = Snapshots(project)
    first = [todo("Write the exporter", "in_progress"), todo("Test the exporter", "pending")]
    second = [todo("Write the exporter", "completed"), todo("Test the exporter", "pending")]
    api.add_turns(
        [tool_use("TodoWrite", todos=first)],
        seen.then(tool_use("TodoWrite", todos=second)),
        seen.then(bash('ralphstate criteria set "export works" true')),
        [text("Exported. <loop-complete>")],
    )

    # CLAUDE_CODE_ENABLE_TASKS=0: the client offers TodoWrite instead of the task tools.
    todo_write = {"CLAUDE_CODE_ENABLE_TASKS": "0"}
    done, result = run_claude(project, "Add a CSV export", env=todo_write, timeout=120)

    assert done.returncode == 0, done.stderr
    assert result["result"] == "Exported. <loop-complete>"
    planned, progressed = seen.states
    assert planned["steps"] == ["Write the exporter", "Test the exporter"]
    assert planned["completedSteps"] == []
    assert [(t["id"], t["status"], t["added"]) for t in planned["taskList"]] == [
        (None, "in_progress", True),
        (None, "pending", True),
    ]
    assert progressed["completedSteps"] == ["Write the exporter"]
    assert loop_state(project)["status"] == "complete"


CHECK_CODE = """\
import sys
from pathlib import Path

export = Path("export.csv")
rows = export.read_text().splitlines() if export.exists() else []
print("export.csv has", len(rows), "rows")
if not rows or rows[0] != "id,name":
    print("FAILED test_export: the header row is missing")
    sys.exit(1)
print("ok")
"""


def test_a_task_tied_to_a_failing_check_stays_open_and_the_model_reads_why(
    cli: Cli,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    home: Path,
    claude_env: dict[str, str],
) -> None:
    install_tasks(cli, project)
    (project / "check_export.py").write_text(CHECK_CODE)
    check = f'"{sys.executable}" check_export.py'
    cli("init", "Add a CSV export", "-c", "export works", "--verify-on-stop")
    cli("criteria", "check", "export works", check)
    trust_at_terminal(project, claude_env)
    seen = Snapshots(project)
    tied = task_create("Make the export work", "Write export.csv.\ncriterion: export works")
    api.add_turns(
        [tied],
        [text("Done, I think."), task_update("1", "completed")],
        seen.then(bash("printf 'id,name\\n1,Ada\\n' > export.csv")),
        [task_update("1", "completed")],
        seen.then(text("The export works. <loop-complete>")),
    )

    done, result = run_claude(project, "Add a CSV export", timeout=120)

    assert done.returncode == 0, done.stderr
    session = result["session_id"]
    requests = api.conversation()
    refused = requests[2]
    # The refusal is the TaskUpdate call's result: the check's verdict and output tail.
    answer = tool_result(refused, "TaskUpdate")["content"]
    assert answer.startswith(REFUSED)
    reason = answer.split("]: ", 1)[1]
    assert reason.startswith(
        'ralphstate: this task stays open: the check of criterion "export works",'
        f" `{check}`, failed (exit code 1"
    )
    assert "export.csv has 0 rows" in reason
    assert "FAILED test_export: the header row is missing" in reason
    # The task and its step stay open; the criterion is recorded as failing.
    after_refusal, after_completion = seen.states
    assert mirrored(after_refusal) == [("1", "pending", "Make the export work", True)]
    assert after_refusal["completedSteps"] == []
    assert after_refusal["criteriaStatus"] == {"export works": False}
    # With the check passing, the same call completes the task.
    assert len(requests) == 5
    assert result["result"] == "The export works. <loop-complete>"
    assert tool_result(requests[4], "TaskUpdate")["content"] == "Updated task #1 status"
    assert after_completion["completedSteps"] == ["Make the export work"]
    assert after_completion["criteriaStatus"] == {"export works": True}
    assert stored_task(home, session, "1")["status"] == "completed"
    state = loop_state(project)
    assert state["status"] == "complete"
    checks = [(e["result"], e["by"]) for e in history(project) if e["event"] == "check"]
    assert checks[:2] == [("failing", "task"), ("verified", "task")]


def test_after_compact_the_restored_context_lists_the_tasks(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path
) -> None:
    install_tasks(cli, project)
    cli("init", "Ship the report", "-c", "report renders")
    api.add_turns(
        [task_create("Render the report", "HTML from the template")],
        [task_create("Check the totals", "Sum the columns")],
        [task_update("1", "completed")],
        [bash("ralphstate pause")],
        [text("Paused here.")],
    )
    _, first = run_claude(project, "Ship the report", timeout=120)
    session = first["session_id"]
    assert loop_state(project)["status"] == "paused"
    cli("resume")

    done, _ = run_claude(project, "/compact", "--resume", session, timeout=60)

    assert done.returncode == 0, done.stderr
    assert len(api.compactions()) == 1
    before = len(api.conversation())
    api.add_turns(
        [text("Picking up after the summary."), task_update("2", "completed")],
        [bash('ralphstate criteria set "report renders" true')],
        [text("Rendered and checked. <loop-complete>")],
    )
    done, _ = run_claude(project, "continue", "--resume", session, timeout=120)

    assert done.returncode == 0, done.stderr
    resumed = api.conversation()[before]
    assert texts(resumed, "user")[0].startswith("This session is being continued")
    restored = loop_context(resumed)
    # Restored twice: by SessionStart "compact" during /compact, and "resume" now; each
    # lists the open task first, and says how to recreate the list.
    assert restored.count("- [ ] Check the totals\n- [x] Render the report") == 2
    assert "recreate the open tasks listed above with TaskCreate" in restored
    # Only the restored context names the open task: the client does not.
    said = texts(resumed, "system") + texts(resumed, "user") + texts(resumed, "assistant")
    in_context = sum(t.count("Check the totals") for t in said if CONTEXT in t)
    assert sum(t.count("Check the totals") for t in said) == in_context
    state = loop_state(project)
    assert (state["status"], state["sessionId"]) == ("complete", session)
    assert state["completedSteps"] == ["Render the report", "Check the totals"]
