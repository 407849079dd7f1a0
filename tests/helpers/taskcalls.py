"""Calls of the agent's task tools as hypothesis draws them: the shapes Claude Code
sends (tests/fixtures/agents/claude_post_tool_use_*.json) with any value in any field."""

from __future__ import annotations

from hypothesis import strategies as hs

json_values = hs.recursive(
    hs.none() | hs.booleans() | hs.integers() | hs.floats() | hs.text(max_size=5),
    lambda inner: (
        hs.lists(inner, max_size=3) | hs.dictionaries(hs.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=5,
)
ids = hs.sampled_from(["1", "2", "3"]) | hs.integers(0, 4) | json_values
subjects = hs.sampled_from(["tokenizer", "parser", "a", "b", " b ", "", "x" * 400]) | json_values
statuses = (
    hs.sampled_from(["pending", "in_progress", "completed", "deleted", "bogus"]) | json_values
)
todo_lists = hs.lists(hs.fixed_dictionaries({"content": subjects, "status": statuses}), max_size=4)
calls = hs.one_of(
    hs.tuples(
        hs.just("TaskCreate"),
        hs.just({}),
        hs.fixed_dictionaries(
            {
                "task": hs.fixed_dictionaries({}, optional={"id": ids, "subject": subjects})
                | json_values
            }
        )
        | json_values,
    ),
    hs.tuples(
        hs.just("TaskUpdate"),
        hs.fixed_dictionaries(
            {}, optional={"taskId": ids, "status": statuses, "subject": subjects}
        ),
        hs.fixed_dictionaries(
            {},
            optional={
                "success": hs.booleans() | json_values,
                "taskId": ids,
                "statusChange": hs.fixed_dictionaries({"from": statuses, "to": statuses})
                | json_values,
                "updatedFields": hs.lists(hs.sampled_from(["status", "subject"])) | json_values,
            },
        ),
    ),
    hs.tuples(
        hs.just("TodoWrite"),
        hs.just({}),
        hs.fixed_dictionaries({}, optional={"oldTodos": todo_lists, "newTodos": todo_lists}),
    ),
)
