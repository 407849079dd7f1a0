"""Claude Code hook entry points: `ralphstate hook stop|session-start|pre-compact`.

Hygiene for all three: stdin is read once and bounded; stdout is one JSON object
or nothing; the exit code is always 0; a fault is one line on stderr and an entry
in the log, and never blocks (fail open). Nothing heavy is imported before a loop
is known to exist.
"""

from __future__ import annotations

import os
import sys

from ralphstate.agents import table as adapters
from ralphstate.core import limits
from ralphstate.storage import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Output = dict[str, Any]

USAGE = (
    "usage: ralphstate hook stop|session-start|pre-compact [--agent NAME]\n"
    "Run by the agent's hooks with the hook input as JSON on stdin; prints one JSON"
    " object or nothing, and always exits 0."
)
ENV_RUNNER = "RALPHSTATE_RUNNER"


class Fault(Exception):
    """Something is wrong with the input or the state: allow, and say why."""


def run_hook(args: list[str]) -> int:
    """Run one hook; never raises, always returns 0."""
    real_stdout = sys.stdout
    out: Output | None = None
    event = args[0] if args else ""
    try:
        sys.stdout = sys.stderr  # nothing but our one JSON object reaches stdout
        if event in ("-h", "--help"):
            real_stdout.write(USAGE + "\n")
            return 0
        try:
            agent = adapters.get(_option(args[1:], "--agent") or "claude")
        except KeyError as exc:
            raise Fault(str(exc.args[0])) from None
        handler = HANDLERS.get(event)
        if handler is None:
            raise Fault(f"unknown hook {event!r}; expected stop, session-start or pre-compact")
        data = _read_stdin()
        start = agent.project_dir(os.environ)
        if start and paths.find_dir(start) is None:
            return 0  # the common case: no loop here, nothing more to read or import
        out = handler(agent, _parse(data))
    except Fault as exc:
        _complain(event, str(exc))
    except BaseException as exc:  # noqa: BLE001 - a hook must never crash its caller
        _complain(event, f"unexpected error ({type(exc).__name__}: {exc})", exc)
    finally:
        sys.stdout = real_stdout
    if out:
        import orjson

        try:
            real_stdout.buffer.write(orjson.dumps(out) + b"\n")
            real_stdout.flush()
        except (OSError, ValueError):
            pass
    return 0


def _option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _complain(event: str, message: str, exc: BaseException | None = None) -> None:
    line = f"ralphstate hook {event}: {message}; allowing."
    where = None
    try:
        from ralphstate.storage import logs

        where = logs.write(line, exc)
    except Exception:  # noqa: BLE001
        pass
    if exc is not None and where is not None:
        line += f" Details in {where}."
    try:
        sys.stderr.write(line + "\n")
    except (OSError, ValueError):
        pass


def _read_stdin() -> bytes:
    stream = sys.stdin.buffer if sys.stdin is not None else None
    if stream is None:
        raise Fault("no input on stdin")
    data = stream.read(limits.MAX_HOOK_INPUT_BYTES + 1)
    if len(data) > limits.MAX_HOOK_INPUT_BYTES:
        raise Fault(f"input is larger than {limits.MAX_HOOK_INPUT_BYTES} bytes")
    return data


def _parse(data: bytes) -> dict[str, Any]:
    import orjson

    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise Fault("input is not valid JSON") from None
    if not isinstance(raw, dict):
        raise Fault("input is not a JSON object")
    return raw


def _locate(hook_input: dict[str, Any], agent: adapters.Agent) -> paths.LoopPaths | None:
    start = agent.project_dir(os.environ)
    cwd = agent.cwd(hook_input)
    return paths.find(start or cwd or os.getcwd())


def _claude_pid(agent: adapters.Agent | None = None) -> str | None:
    if agent is not None and agent is not adapters.CLAUDE:
        return None  # only a Claude Code session is tied to its process
    return os.environ.get("CLAUDE_PID") or None


def _foreign(state: dict[str, Any], session_id: str | None, agent: adapters.Agent) -> bool:
    """Owned by another session, or by a session of another agent."""
    owner = state.get("sessionId")
    return bool(owner) and (owner != session_id or _owner_agent(state) != agent.name)


def _owner_agent(state: dict[str, Any]) -> str:
    return str(state.get("ownerAgent") or adapters.CLAUDE.name)


def _load(loop: paths.LoopPaths) -> tuple[Any, Any] | None:
    """The store and state, or None when there is no state file; Fault if unusable."""
    from ralphstate.core.errors import NoLoop, RalphstateError
    from ralphstate.storage.store import Store

    store = Store(loop, lock_timeout=limits.HOOK_LOCK_TIMEOUT)
    if not store.exists():
        return None
    try:
        return store, store.load()
    except NoLoop:
        return None
    except RalphstateError as exc:
        raise Fault(str(exc).rstrip(".")) from None


def _find(agent: adapters.Agent, hook_input: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    """The loop, its store and its state; None when there is no loop; Fault if unusable."""
    loop = _locate(hook_input, agent)
    if loop is None:
        return None
    loaded = _load(loop)
    if loaded is None:
        return None
    return (loop, *loaded)


def stop(agent: adapters.Agent, hook_input: dict[str, Any]) -> Output | None:
    if not agent.turn_finished(hook_input):
        return None  # the person stopped this turn: never hold it open
    found = _find(agent, hook_input)
    if found is None:
        return None
    loop, store, state = found
    session_id = agent.session_id(hook_input)
    if session_id is None:
        raise Fault("input has no session id")
    runner = bool(os.environ.get(ENV_RUNNER))
    if state["status"] != "in_progress" or runner:
        return None
    owner = state.get("sessionId")
    if _foreign(state, session_id, agent):
        return None

    from ralphstate.core.decide import decide_stop
    from ralphstate.core.errors import RalphstateError
    from ralphstate.storage import registry
    from ralphstate.storage.store import Unchanged

    known = True if owner else registry.knows(loop, state)
    if not known:
        return None
    message = agent.last_message(hook_input)
    results, untrusted = _verify_claim(store, state, session_id, message, agent.name)
    decision_box: list[Any] = []

    def change(current: dict[str, Any]) -> list[dict[str, Any]]:
        checked: list[dict[str, Any]] = []
        if results:
            from ralphstate.verify.execute import apply

            checked = apply(current, results, "stop")
        ran = {e["criterion"] for e in checked}
        decision = decide_stop(
            current,
            session_id,
            message,
            known_here=True if current.get("sessionId") else registry.knows(loop, current),
            failures=[r for r in results if not r.passed and r.criterion in ran],
            untrusted=untrusted,
            agent=agent.name,
        )
        decision_box[:] = [decision]
        if decision.state is None:
            raise Unchanged
        current.clear()
        current.update(decision.state)
        return checked + decision.events

    try:
        written = store.update(change)
    except RalphstateError as exc:
        raise Fault(str(exc).rstrip(".")) from None
    decision = decision_box[0]
    if decision.adopted or decision.rule in (
        "complete",
        "max_iterations",
        "stall",
        "untrusted_checks",
    ):
        try:
            registry.record(loop, written, _claude_pid(agent) if decision.adopted else None)
        except Exception as exc:  # noqa: BLE001 - the registry is a convenience
            _complain("stop", f"could not update the loop registry ({exc})")
    return agent.render_stop(decision)


def _verify_claim(
    store: Any, state: dict[str, Any], session_id: str, message: str | None, agent: str = "claude"
) -> tuple[list[Any], bool]:
    """Verify-on-stop: when the loop asks for it and this stop would complete it, run
    the trusted checks first (outside the lock, within limits.STOP_VERIFY_BUDGET).
    Returns (results, untrusted); untrusted checks are never run."""
    if not state["verifyOnStop"] or not any(c in state["checks"] for c in state["criteria"]):
        return [], False
    from ralphstate.core.decide import decide_stop

    if decide_stop(state, session_id, message, known_here=True, agent=agent).rule != "complete":
        return [], False
    from ralphstate.core.errors import RalphstateError
    from ralphstate.verify import execute as verify

    try:
        with verify.terminate_as_interrupt():
            results = verify.run_checks(store, budget=limits.STOP_VERIFY_BUDGET, record=False)
    except verify.Untrusted:
        return [], True
    except RalphstateError as exc:
        raise Fault(str(exc).rstrip(".")) from None
    except KeyboardInterrupt:  # SIGTERM: the client gave up waiting for this hook
        raise Fault(
            "stopped while running the loop's checks; the running check was killed"
        ) from None
    return results, False


def _trusted(loop: paths.LoopPaths, state: dict[str, Any]) -> bool:
    from ralphstate.storage import trust

    return trust.is_trusted(loop, state)


def session_start(agent: adapters.Agent, hook_input: dict[str, Any]) -> Output | None:
    try:
        found = _find(agent, hook_input)
    except Fault as exc:
        return agent.render_notice(f"ralphstate: {exc}; the loop is ignored until it is fixed.")
    if found is None:
        return None
    loop, store, state = found
    from ralphstate.core import render
    from ralphstate.core import state as st
    from ralphstate.storage import registry

    if state["status"] not in st.ACTIVE:
        return None
    session_id = agent.session_id(hook_input)
    source = str(hook_input.get("source") or "startup")
    if os.environ.get(ENV_RUNNER) and registry.knows(loop, state):
        # An iteration of `ralphstate run`, which owns the loop: restore it, take nothing.
        return agent.render_context(render.context(state, source), render.session_line(state))
    owner = state.get("sessionId")
    known = registry.knows(loop, state)
    take = False
    if not owner:
        if not known:
            checks = ""
            if not _trusted(loop, state):
                checks = (
                    f" Its {len(state['checks'])} checks will not run until you review them"
                    " (`ralphstate status`) and run `ralphstate trust`."
                )
            return agent.render_notice(
                f"ralphstate: this project has a loop that was not started on this machine"
                f" ({len(state['criteria'])} criteria, status {state['status']})."
                " It is ignored until you run `ralphstate adopt`." + checks
            )
        take = True
    elif _foreign(state, session_id, agent):
        from ralphstate.cli.views import visible

        entry = registry.entry(loop) or {}
        pid = _claude_pid(agent)
        same_process = bool(pid) and entry.get("claudePid") == pid
        same_agent = _owner_agent(state) == agent.name
        if not (known and source == "clear" and same_process and same_agent):
            whose = "" if same_agent else f"{visible(_owner_agent(state)[:20])} "
            return agent.render_context(
                "A ralphstate loop in this project belongs to another session; do not work on"
                " it unless the person asks. To take it over here: `ralphstate adopt`.",
                "ralphstate: the loop here belongs to another session"
                f" ({whose}{visible(str(owner)[:8])}…); run `ralphstate adopt` to continue"
                " it in this one.",
            )
        take = True
    if take and session_id:
        from ralphstate.core.errors import RalphstateError

        def own(current: dict[str, Any]) -> list[dict[str, Any]]:
            previous = current.get("sessionId")
            current["sessionId"], current["ownerAgent"] = session_id, agent.name
            return [
                {
                    "event": "adopted",
                    "session": session_id,
                    "agent": agent.name,
                    "from": previous,
                    "by": source,
                }
            ]

        try:
            state = store.update(own)
        except RalphstateError as exc:
            raise Fault(str(exc).rstrip(".")) from None
        try:
            registry.record(loop, state, _claude_pid(agent))
        except Exception as exc:  # noqa: BLE001 - the registry is a convenience
            _complain("session-start", f"could not update the loop registry ({exc})")
    trusted = _trusted(loop, state)
    line = render.session_line(state)
    if not trusted:
        line += " " + render.untrusted_line(state)
    return agent.render_context(render.context(state, source, trusted), line)


def pre_compact(agent: adapters.Agent, hook_input: dict[str, Any]) -> Output | None:
    found = _find(agent, hook_input)
    if found is None:
        return None
    loop, store, state = found
    from ralphstate.core import clock
    from ralphstate.core import state as st
    from ralphstate.core.errors import RalphstateError

    session_id = agent.session_id(hook_input)
    if state["status"] not in st.ACTIVE or _foreign(state, session_id, agent):
        return None
    from ralphstate.storage import registry

    if not state.get("sessionId") and not registry.knows(loop, state):
        return None  # a loop that arrived with a clone is left alone until it is adopted
    trigger = str(hook_input.get("trigger") or "")[:20]

    def checkpoint(current: dict[str, Any]) -> list[dict[str, Any]]:
        current["lastCheckpoint"] = clock.now_iso()
        return [{"event": "checkpoint", "trigger": trigger}]

    try:
        store.update(checkpoint)
    except RalphstateError as exc:
        raise Fault(str(exc).rstrip(".")) from None
    return None


HANDLERS = {"stop": stop, "session-start": session_start, "pre-compact": pre_compact}
