"""Where a loop starts, for red before green (docs/explanation/proof.md): `init` records
the tree the loop started on, and `init --expect-fail` first runs the loop's checks
once, when they are trusted here, so that each check's first result is taken before
any work and the person reads what each did."""

from __future__ import annotations

from ralphstate.core import redgreen
from ralphstate.core import state as st
from ralphstate.core.text import visible
from ralphstate.storage.loopdir.store import Store
from ralphstate.storage.peruser import truststore
from ralphstate.verify import firsts, pipeline


def begin(store: Store, state: st.State, expect_fail: bool) -> list[str]:
    """Record where the loop starts; with `expect_fail`, take the baseline first. The
    lines for the person (none without `expect_fail`)."""
    if not expect_fail:
        firsts.start(store, state)
        return []
    names = redgreen.expect_fail(state)
    armed = truststore.armed(state)
    if armed and not truststore.is_trusted(store.paths, state):
        firsts.start(store, state)
        said = (
            f"expect-fail: {_count(names)} must fail before a pass counts; the checks are not"
            " trusted here yet, so none ran: each counts a pass once it has failed, after"
            " `ralphstate trust`"
        )
        return [said]
    results = pipeline.verify(store, pipeline.Ask(by="init")).results if armed else []
    code = next((r.code for r in results if r.code is not None), None)
    firsts.start(store, state, code.tree if code else None)
    ran = {r.criterion: r for r in results}
    lines = [f"expect-fail: {_count(names)} must fail before a pass counts"]
    for name in names:
        result = ran.get(name)
        if result is None:
            lines.append(
                f"  {visible(name)}: no check yet; the check it gets must fail first"
                " (`ralphstate verify` before the work takes its first result)"
            )
        elif result.held or result.passed:
            lines.append(f"  {visible(name)}: passes already: will not count until it fails")
        else:
            lines.append(f"  {visible(name)}: failing as expected ({visible(result.summary)})")
    return lines


def _count(names: list[str]) -> str:
    return "1 criterion" if len(names) == 1 else f"{len(names)} criteria"
