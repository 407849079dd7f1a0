"""Desktop notifications through the terminal, for the moments a person wants to know
about without watching: a loop complete, a loop paused, a Stop gate that failed open.

Claude Code passes a hook output's `terminalSequence` to the terminal when it is one
of the sequences it allows (OSC 0/1/2/9/99/777, BEL). OSC 9 (iTerm2, WezTerm, Ghostty,
kitty, Windows Terminal) is the default; OSC 777 (`notify`: VTE terminals such as
GNOME Terminal, foot, urxvt) where the environment names such a terminal.
`RALPHSTATE_NOTIFY` chooses: `off` (or `0`, `no`, `false`) for none, `9` or `777` for
that sequence. Other agents take no such field: nothing is added for them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ralphstate.agents.table import get
from ralphstate.core.text import plain_output, visible

if TYPE_CHECKING:
    from ralphstate.core.decide import Decision

ENV = "RALPHSTATE_NOTIFY"
OFF = frozenset({"0", "off", "no", "false"})
MAX_TEXT = 120


def failed_open(problem: str) -> str:
    """The notification of a Stop gate that let the agent go because of `problem`."""
    return f"the Stop gate failed open, the loop is not enforced: {problem}"


def sequence(text: str, env: Mapping[str, str]) -> str | None:
    """The escape sequence that shows `text` as a notification, or None when they are
    turned off."""
    setting = env.get(ENV, "").strip().lower()
    if setting in OFF:
        return None
    # `visible`, the one sanitiser of what reaches a terminal: an 8-bit control (a string
    # terminator, CSI), a bidi override or any other unprintable character a cloned
    # loop's spec holds is shown as text, never sent as part of the sequence.
    body = visible(" ".join(plain_output(text).split()))
    body = body.replace(";", ",")[:MAX_TEXT]
    if setting == "777" or (setting != "9" and _prefers_777(env)):
        return f"\x1b]777;notify;ralphstate;{body}\x07"
    return f"\x1b]9;ralphstate: {body}\x07"


def _prefers_777(env: Mapping[str, str]) -> bool:
    term = env.get("TERM", "")
    return bool(env.get("VTE_VERSION")) or term.startswith(("rxvt", "foot"))


def attach(
    out: dict[str, object] | None, agent: str, text: str, env: Mapping[str, str]
) -> dict[str, object] | None:
    """`out` with the notification for `text` added, when `agent` takes one
    (`Agent.terminal_sequence`)."""
    if not get(agent).terminal_sequence:
        return out
    found = sequence(text, env)
    if found is None:
        return out
    return {**(out or {}), "terminalSequence": found}


def after_stop(
    out: dict[str, object] | None, agent: str, decision: Decision, env: Mapping[str, str]
) -> dict[str, object] | None:
    """The Stop hook's `out` with the notification its `decision` calls for, if any: a
    completion or a pause made just now, in the words of its rule's `notice`
    (`core.outcomes.OUTCOMES`); a budget's names which budget it is."""
    from ralphstate.core.outcomes import OUTCOMES  # the Stop hook has imported it

    outcome = OUTCOMES[decision.rule]
    if decision.state is None or outcome.notice is None:
        return out
    what = outcome.notice
    if outcome.pause == "budget":
        from ralphstate.core.budgets import over_budget

        what = f"{what}, {over_budget(decision.state)}"
    if outcome.complete:  # how it was verified, in the words every view uses
        from ralphstate.core import provenance

        state = decision.state
        level = provenance.weakest(state["evidence"], state["criteria"])
        if level is not None:
            what = f"{what}, verified ({provenance.WORDS[level]})"
    return attach(out, agent, f"{what} ({decision.state['spec']})", env)
