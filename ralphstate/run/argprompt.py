"""`--prompt-mode arg`: the prompt as the agent's last argument, when it can be one.

An argument ends at a NUL, so a prompt holding one (a UTF-16 `--context` file, a
hand-edited spec, a lesson) cannot be passed, nor one longer than an argument may be
(`limits.RUN_ARG_PROMPT_BYTES`). The run refuses such a prompt before its first
iteration (`check`), and ends as an error, recorded, when one appears later
(`refusal`, at every iteration); each time in one sentence that names the file.
"""

from __future__ import annotations

import sys

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.core.errors import RalphstateError
from ralphstate.run import prompt
from ralphstate.run.plan import Plan
from ralphstate.storage.loopdir import lessons
from ralphstate.storage.loopdir.store import Store


def check(store: Store, plan: Plan, state: st.State) -> None:
    """RalphstateError, before the first iteration, when its prompt could not be passed
    as an argument."""
    if plan.prompt_mode != "arg":
        return
    text = prompt.assemble(
        state,
        iteration=1,
        limit=plan.limit,
        notes=prompt.recent_notes(store, state),
        context=prompt.read_context(plan.context, store.paths.root),
        lessons=lessons.read(store.paths.dir),
        commits=plan.commit,
    )
    refused = refusal(store, plan, text)
    if refused is not None:
        raise RalphstateError(refused)


def refusal(store: Store, plan: Plan, text: str) -> str | None:
    """The sentence that refuses the prompt `text` under `--prompt-mode arg`, naming
    the file that brought a NUL into it; None when it can be passed (or the prompt does
    not go as an argument)."""
    problem = unpassable(text) if plan.prompt_mode == "arg" else None
    if problem is None:
        return None
    said = "--prompt-mode arg cannot pass the prompt as an argument"
    if problem != "nul":
        fix = "use --prompt-mode stdin or file, or give fewer --context files"
        return f"{said}: {problem}; {fix}."
    found = lessons.read(store.paths.dir) or ""
    context = prompt.read_context(plan.context, store.paths.root)
    where = next((f.name for f in context if "\0" in f.text), None)
    if where is not None:
        held = f"the context file {where} holds a NUL character (is it UTF-16?); save it as UTF-8"
    elif "\0" in found:
        held = f".loop/{lessons.LESSONS} holds a NUL character; remove it"
    else:
        held = "it holds a NUL character (the loop's spec, criteria, steps or notes); remove it"
    return f"{said}: {held}, or use --prompt-mode stdin or file."


def unpassable(text: str) -> str | None:
    """Why `text` cannot be one argument of a process (None: it can): "nul", or that it
    is longer than `limits.RUN_ARG_PROMPT_BYTES` (Windows: its whole command line,
    `limits.RUN_ARG_PROMPT_CHARS_WINDOWS` characters)."""
    if "\0" in text:
        return "nul"
    if sys.platform == "win32":
        size = len(text)
        most = limits.RUN_ARG_PROMPT_CHARS_WINDOWS
        unit = "characters"
    else:
        size, most = len(text.encode("utf-8", "surrogateescape")), limits.RUN_ARG_PROMPT_BYTES
        unit = "bytes"
    if size > most:
        return f"it is {size:,} {unit}, more than the {most:,} one argument may hold"
    return None
