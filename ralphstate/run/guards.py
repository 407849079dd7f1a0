"""What keeps an unattended `ralphstate run` from burning its night: the breakers
(consecutive agent failures, a step that stays next) and the wait for a usage limit to
reset, shown as a countdown and read off the clock seam (`clock.now`, `clock.sleep`),
so tests wait without sleeping."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ralphstate.core import clock
from ralphstate.run.result import format_duration

# Defaults: failed iterations in a row before the loop pauses (`agent-errors`), and
# iterations a step may stay next before it does (`step-retries`).
AGENT_ERRORS = 3
STEP_RETRIES = 10
# Unrecognised waits in a row (no reset time) before a run gives up and pauses.
LIMIT_ATTEMPTS = 8
# The breakers, by the pause reason each gives.
Breaker = Literal["agent_errors", "step_retries"]


@dataclass
class Breakers:
    """Counts across a run's iterations; `trip` says which breaker opened, if any."""

    agent_errors: int = AGENT_ERRORS
    step_retries: int = STEP_RETRIES
    failures: int = 0
    step: str | None = None
    step_count: int = 0
    errors: list[str] = field(default_factory=list)

    def after(self, failed: bool, progressed: bool, what: str, next_step: str | None) -> None:
        """Count one iteration: did the agent fail, did anything progress, and the step
        that is next now."""
        if failed and not progressed:
            self.failures += 1
            self.errors = [*self.errors, what][-self.agent_errors :]
        else:
            self.failures = 0
            self.errors = []
        if next_step is not None and next_step == self.step:
            self.step_count += 1
        else:
            self.step = next_step
            self.step_count = 1 if next_step is not None else 0

    def reset_failures(self) -> None:
        self.failures = 0
        self.errors = []

    def trip(self) -> Breaker | None:
        """`agent_errors` or `step_retries` when that breaker opened, else None."""
        if self.failures >= self.agent_errors:
            return "agent_errors"
        if self.step is not None and self.step_count >= self.step_retries:
            return "step_retries"
        return None


def until(
    target: dt.datetime,
    say: Callable[[str], None],
    what: str,
) -> None:
    """Wait until `target` (UTC), saying how long is left now and then: every 15 minutes
    when far, every minute in the last ten. Ctrl-C raises KeyboardInterrupt as usual."""
    while True:
        left = (target - clock.now()).total_seconds()
        if left <= 0:
            return
        local = target.astimezone().strftime("%H:%M")
        say(f"  {what}: waiting until {local} ({format_duration(left)} left); Ctrl-C pauses")
        step = 900.0 if left > 1200 else 60.0
        clock.sleep(min(left, step))
