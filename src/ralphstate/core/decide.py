"""The Stop decision: a pure function of (state, hook input).

The rules of SPEC.md in order; the first that applies wins. Faults (no state, a
state that does not parse, bad input) are rule 1 and are handled by the hook
before this function is called: it only ever sees a valid state.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ralphstate.core import render
from ralphstate.core import state as st
from ralphstate.core.marker import contains_marker


@dataclass
class Decision:
    rule: str
    block: bool = False
    reason: str | None = None
    system_message: str | None = None
    # The state to write, or None to leave the file as it is.
    state: st.State | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    adopted: bool = False


def decide_stop(
    state: st.State,
    session_id: str | None,
    last_message: str | None,
    *,
    known_here: bool,
    runner: bool = False,
    agent: str = st.DEFAULT_AGENT,
    failures: Sequence[Any] = (),
    untrusted: bool = False,
) -> Decision:
    """`failures`: the checks that failed when the hook verified a claimed completion
    (already applied to `state`; they only shape the reason). `untrusted`: the loop asks
    for verification but its checks are not trusted here, so a completion pauses."""
    if runner:
        return Decision("runner")
    if state["status"] != "in_progress":
        return Decision("not_in_progress")
    owner = state.get("sessionId")
    owner_agent = state.get("ownerAgent") or st.DEFAULT_AGENT
    if owner and (owner != session_id or owner_agent != agent):
        return Decision("other_session")
    new = copy.deepcopy(state)
    events: list[dict[str, Any]] = []
    adopted = False
    if not owner:
        if not known_here or not session_id:
            return Decision("unknown_loop")
        new["sessionId"], new["ownerAgent"] = session_id, agent
        events.append({"event": "adopted", "session": session_id, "agent": agent, "by": "stop"})
        adopted = True

    def done(rule: str, **kw: Any) -> Decision:
        events.append({"event": rule, **kw.pop("details", {})})
        return Decision(rule, state=new, events=events, adopted=adopted, **kw)

    if new["iteration"] >= new["maxIterations"]:
        new["status"], new["pauseReason"] = "paused", "max_iterations"
        return done("max_iterations", system_message=render.paused_max(new))

    marker_seen = contains_marker(last_message or "", new["completionMarker"])
    fingerprint = st.progress(new, marker_seen)
    changed = fingerprint != new.get("lastProgress")
    if not changed and new["blocksWithoutProgress"] >= new["stallLimit"]:
        new["status"], new["pauseReason"] = "paused", "stall"
        return done("stall", system_message=render.paused_stall(new))

    unmet = st.unmet(new)
    if unmet or not marker_seen:
        reason = render.block_unmet(new, unmet, failures) if unmet else render.block_marker(new)
        new["iteration"] += 1
        new["blocksWithoutProgress"] = 0 if changed else new["blocksWithoutProgress"] + 1
        new["lastProgress"] = fingerprint
        rule = "unmet" if unmet else "no_marker"
        return done(rule, block=True, reason=reason, details={"unmet": unmet} if unmet else {})

    new["lastProgress"] = fingerprint
    if untrusted:  # completion waits until a person trusts the checks and resumes
        new["status"], new["pauseReason"] = "paused", "untrusted_checks"
        return done("untrusted_checks", system_message=render.paused_untrusted(new))
    new["status"], new["pauseReason"] = "complete", None
    return done("complete", system_message=render.completed(new))
