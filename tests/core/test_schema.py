"""The table of the state's fields (core/schema.py) against what it is the one place of:
`State`'s keys and their order, the defaults every check falls back to, the contract, the
worktree's copy, the budgets and what `config` sets. tests/test_layout.py holds that no
other module lists the fields by role; tests/action/test_ci_parts.py holds the CI's
trusted contract to the contract rows."""

from __future__ import annotations

from typing import Any

import pytest

from ralphstate.core import budgets, proof, schema
from ralphstate.core import state as st
from ralphstate.loop import configure

NOW = "2026-01-01T00:00:00Z"


def test_the_state_type_has_the_tables_keys_in_its_order() -> None:
    assert tuple(st.State.__annotations__) == schema.FIELD_ORDER == st.FIELD_ORDER
    assert len(schema.FIELDS) == len(schema.ROWS)  # one row a key


def test_each_row_has_one_check_and_a_doc() -> None:
    for row in schema.ROWS:
        assert (row.read is None) != (row.group is None), row.name
        assert row.doc.strip() and "\n" not in row.doc, row.name


def test_a_group_check_reads_exactly_the_rows_that_name_it() -> None:
    groups: dict[Any, list[str]] = {}
    for row in schema.ROWS:
        if row.group is not None:
            groups.setdefault(row.group, []).append(row.name)
    for group, names in groups.items():
        assert list(group({})) == names


def test_an_empty_file_reads_as_every_default() -> None:
    assert st.normalise({}) == schema.defaults()
    assert list(schema.defaults()) == list(schema.FIELD_ORDER)


def test_a_mutable_default_is_new_each_time() -> None:
    first, second = schema.defaults(), schema.defaults()
    first["criteria"].append("a")
    first["checks"]["a"] = "true"
    assert second["criteria"] == [] and second["checks"] == {}


def test_the_defaults_init_takes_are_the_rows() -> None:
    raw = schema.defaults()
    assert st.DEFAULT_MAX_ITERATIONS == raw["maxIterations"] == 20
    assert st.DEFAULT_STALL_LIMIT == raw["stallLimit"] == 5
    assert st.DEFAULT_MARKER == raw["completionMarker"] == "<loop-complete>"
    assert raw["version"] == schema.SCHEMA_VERSION and raw["status"] == schema.STATUSES[0]


def test_the_contract_is_the_contract_rows() -> None:
    state = st.new("s", ["a", "b"], [], now=NOW)
    contract = proof.contract_of(state)
    assert list(contract) == [row.name for row in schema.CONTRACT]
    assert contract == {
        "criteria": ["a", "b"],
        "checks": {},
        "rubrics": {},
        "verifyOnStop": True,
        "cleanVerify": True,
        "checkTimeouts": {},
        "noCriteria": False,
        "guards": None,
        "expectFail": [],
        "reviewer": None,
    }


def test_a_new_loop_starts_every_run_field_afresh() -> None:
    lived = st.normalise(
        {
            "criteria": ["a"],
            "iteration": 7,
            "status": "paused",
            "pauseReason": "stall",
            "blocksWithoutProgress": 3,
            "usage": {"tokens": 5, "cost": 1.0, "seconds": 2.0},
            "evidence": {"a": {"result": "verified"}},
            "stepRetries": {"x": 2},
            "fixSteps": ["Fix: a (added by verification)"],
            "errors": [{"at": NOW, "iteration": 1, "message": "m"}],
        }
    )
    new = st.new("s", ["a"], [], now=NOW, extra=dict(lived))
    defaults = schema.defaults()
    kept = {"sessionId", "ownerAgent", "loopId", "startedAt", "updatedAt", "lastProgress"}
    for name in schema.RUN_FIELDS:
        if name not in kept:  # what `new` sets from its own arguments
            assert new[name] == defaults[name], name  # type: ignore[literal-required]


def test_the_budget_rows_are_the_loops_budgets() -> None:
    assert schema.BUDGET_KEYS == ("maxCost", "maxTokens", "maxDuration")
    assert {row.budget for row in schema.BUDGETS} == set(budgets.Budget.__annotations__)
    state = st.normalise({"maxCost": 2, "maxTokens": 30, "maxDuration": 60})
    assert budgets.loop_budget(state) == {"cost": 2.0, "tokens": 30, "seconds": 60.0}


def test_config_sets_exactly_the_fields_whose_rows_name_it() -> None:
    assert {s.field: key for key, s in configure.SETTINGS.items()} == schema.CONFIG_KEYS


@pytest.mark.parametrize("row", schema.COPIED)
def test_a_copied_field_is_one_a_template_keeps(row: str) -> None:
    field = schema.FIELDS[row]
    assert not field.fresh and not field.init_reads, row
