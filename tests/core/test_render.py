"""The words the person and the model read: the restored context and the counts."""

from __future__ import annotations

from typing import Any, cast

import pytest

from ralphstate.core import limits, render, restore
from ralphstate.core import state as st
from ralphstate.core.text import all_of, count, noun


def loop(criteria: list[str] | None = None, **changes: Any) -> st.State:
    state = st.new(
        "Build it",
        ["tests pass"] if criteria is None else criteria,
        ["one"],
        session_id="s",
        now="2026-01-01T00:00:00Z",
    )
    cast(st.Raw, state).update(changes)
    return st.normalise(state)


# -- the restored context --------------------------------------------------------------


def test_unmet_criteria_come_first_and_are_all_named() -> None:
    names = [f"criterion {i:02}" for i in range(20)]
    state = loop(names, criteriaStatus={n: True for n in names[:15]})
    context = restore.context(state, "compact")
    listed = [line for line in context.splitlines() if line.startswith("- [")]
    assert listed[:5] == [f"- [ ] criterion {i:02}" for i in range(15, 20)]
    assert listed[5:] == [  # met by hand, without a check: claimed
        f"- [x] criterion {i:02} (claimed)" for i in range(limits.MAX_LIST_ITEMS - 5)
    ]
    assert "- … 5 more, all verified" in context
    assert "Criteria (15 of 20 verified):" in context


def test_more_unmet_than_fit_says_how_many_are_left_out() -> None:
    names = [f"c{i}" for i in range(limits.MAX_LIST_ITEMS + 3)]
    context = restore.context(loop(names, criteriaStatus={"c0": True}), "resume")
    assert f"- [ ] c{limits.MAX_LIST_ITEMS}\n" in context
    assert "- [x] c0" not in context
    assert "- … 3 more (2 unmet; `ralphstate status --all` lists them all)" in context


def test_a_paused_loop_does_not_say_the_stop_hook_holds_the_session() -> None:
    paused = restore.context(loop(status="paused", pauseReason="user"), "resume")
    assert "the Stop hook will not hold you" in paused
    assert "holds the session open" not in paused
    running = restore.context(loop(), "resume")
    assert "will not hold you" not in running
    assert "The Stop hook holds the session open until then." in running


def test_the_protocol_records_a_checked_criterion_with_verify_not_by_hand() -> None:
    checked = restore.context(loop(checks={"tests pass": "pytest -q"}), "compact")
    assert '`ralphstate verify "NAME"` for a criterion with a check' in checked
    assert "only a claim" in checked
    unchecked = restore.context(loop(), "compact")
    assert "ralphstate verify" not in unchecked
    assert '- Record progress: `ralphstate criteria set "NAME" true`,' in unchecked


def test_a_long_spec_cut_says_so_and_where_it_is_whole() -> None:
    whole = "x" * limits.MAX_SPEC_CHARS
    assert restore.SPEC_CUT not in restore.context(loop(spec=whole), "resume")
    cut = restore.context(loop(spec=whole + "y"), "resume")
    assert f"Spec: {'x' * (limits.MAX_SPEC_CHARS - 1)}… {restore.SPEC_CUT}\n" in cut
    assert "`ralphstate show` prints it whole" in restore.SPEC_CUT


def test_a_loop_too_long_for_the_context_says_it_was_cut() -> None:
    names = [f"{i} " + "z" * (limits.MAX_ITEM_CHARS - 5) for i in range(limits.MAX_LIST_ITEMS)]
    steps = [f"{i} " + "w" * (limits.MAX_ITEM_CHARS - 5) for i in range(limits.MAX_LIST_ITEMS)]
    state = loop(names, spec="s" * limits.MAX_SPEC_CHARS, steps=steps)
    context = restore.context(state, "resume")
    assert len(context) <= limits.MAX_CONTEXT_CHARS
    assert f"\n{restore.DATA_CUT}\n</loop-state>\n" in context
    assert context.endswith("until then.")  # the protocol is whole


# -- counts ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "word", "counted", "all_"),
    [
        (0, "criterion", "0 criteria", "all 0 criteria"),
        (1, "criterion", "1 criterion", "the one criterion"),
        (2, "criterion", "2 criteria", "all 2 criteria"),
        (1, "check", "1 check", "the one check"),
        (3, "check", "3 checks", "all 3 checks"),
        (1, "step", "1 step", "the one step"),
    ],
)
def test_counts_agree_with_their_noun(n: int, word: str, counted: str, all_: str) -> None:
    assert count(n, word) == counted
    assert noun(n, word) == counted.split(" ", 1)[1]
    assert all_of(n, word) == all_


def test_one_of_everything_reads_in_the_singular() -> None:
    one = loop(iteration=1, blocksWithoutProgress=1, checks={"tests pass": "true"})
    done = loop(iteration=1, criteriaStatus={"tests pass": True})
    texts = [
        render.block_unmet(one, ["tests pass"]),
        render.block_marker(done),
        render.paused_max(one),
        render.paused_stall(one),
        restore.untrusted_line(one),
        render.completed(done),
        restore.session_line(one),
    ]
    for text in texts:
        for wrong in ("1 criteria", "1 checks", "1 steps", "1 iterations", "1 blocked stops"):
            assert wrong not in text, text
    assert render.completed(done) == (
        "ralphstate: loop complete after 1 iteration; claimed, without a check: tests pass."
    )
    assert "0 of 1 criterion" not in texts[0] and "1 of 1 criterion not verified" in texts[0]
    assert "the one criterion is recorded as met (1 claimed)" in texts[1]
    assert "after 1 iteration (maxIterations); 1 criterion unmet" in texts[2]
    assert "no progress in 1 blocked stop (stallLimit)" in texts[3]
    assert texts[4].startswith("Its 1 check is not trusted")
    assert texts[6] == "ralphstate: loop resumed: 0/1 criterion, iteration 1/20."
