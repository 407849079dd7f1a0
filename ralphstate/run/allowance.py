"""The budgets a `ralphstate run` keeps to: the loop's own (`maxCost`, `maxTokens`,
`maxDuration`, spent across every run and session) and this run's (`--max-cost`,
`--max-tokens`, `--max-duration`), measured from what the loop's `usage` was when the
run began (docs/how-to/overnight.md, "Budgets")."""

from __future__ import annotations

from typing import Literal

from ralphstate.core import budgets, fields
from ralphstate.core import state as st
from ralphstate.run.plan import Plan

Figure = Literal["cost", "tokens", "seconds"]


class Allowance:
    def __init__(self, plan: Plan) -> None:
        self.budget: budgets.Budget = {
            "cost": plan.max_cost,
            "tokens": plan.max_tokens,
            "seconds": plan.max_duration,
        }
        self.baseline: fields.Usage = {"tokens": 0, "cost": 0.0, "seconds": 0.0}

    def begin(self, state: st.State) -> None:
        """The run starts counting from what the loop has spent so far."""
        self.baseline = budgets.spent(state)

    def used(self, state: st.State) -> fields.Usage:
        """What this run has spent so far."""
        return budgets.used_since(budgets.spent(state), self.baseline)

    def over(self, state: st.State) -> tuple[str, str] | None:
        """The budget reached, the loop's or this run's: whose (budgets.LOOPS, budgets.RUNS) and
        how a person reads it; None when neither is. The loop's is named first: another
        run would meet it too."""
        over = budgets.over_budget(state)
        if over is not None:
            return budgets.LOOPS, over
        over = budgets.reached(self.used(state), self.budget, budgets.RUNS)
        return None if over is None else (budgets.RUNS, over)

    def left(self, state: st.State, key: Figure) -> float | None:
        """The smaller of what the loop's budget and this run's leave of one figure."""
        given = [value for value in self.both_left(state, key) if value is not None]
        return min(given) if given else None

    def both_left(self, state: st.State, key: Figure) -> tuple[float | None, float | None]:
        """What the loop's budget and this run's each leave of one figure (None: no
        budget of that figure)."""
        return (
            budgets.left(budgets.spent(state), budgets.loop_budget(state), key),
            budgets.left(self.used(state), self.budget, key),
        )

    def given(self, state: st.State) -> dict[str, object]:
        """This run's budget and the loop's, as `run_started` names them (only the
        figures that have one)."""
        fields: dict[str, object] = {}
        for key, budget in (("budget", self.budget), ("loopBudget", budgets.loop_budget(state))):
            given = {k: v for k, v in budget.items() if v is not None}
            if given:
                fields[key] = given
        return fields
