"""One-time approvals: how a command the person approved at Claude Code's permission
prompt runs as theirs (docs/explanation/proof.md, "Only a person approves").

When the agent's Bash tool is about to run `ralphstate trust` (or `review --approve`),
the PreToolUse hook `mint`s a token, has Claude Code ask the person, and hands the
command on with the token in its environment (`core.approving.APPROVAL_ENV`). Only a
command the person let run carries it; `consume` accepts it once, for the loop and the
session it was made for, within `TTL_SECONDS`.

The file, `approvals.json` in the per-user data directory (outside every project),
holds one pending approval per loop: the SHA-256 of its token (the file alone lets no
command through), the session and the time it expires. Making one replaces the loop's
last, and drops every expired one, so the file stays small.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from ralphstate.storage.peruser import home, jsonstore
from ralphstate.storage.peruser.jsonstore import Entries, Entry
from ralphstate.storage.system.paths import LoopPaths

APPROVALS_NAME = "approvals.json"
# How long the person has to answer the prompt, from the moment it is shown.
TTL_SECONDS = 300
TOKEN_BYTES = 16

# Why a token was not accepted (`consume`).
EXPIRED = "expired"
UNKNOWN = "unknown"
ELSEWHERE = "elsewhere"
# The client never asked the person about the call the token was made for, or the
# person already answered it (declined, or it ran): the token dies.
UNASKED = "unasked"


def _path() -> Path:
    return home.data_dir() / APPROVALS_NAME


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def _now() -> float:
    return time.time()


def mint(paths: LoopPaths, session: str | None, call: str = "", transcript: str = "") -> str:
    """A new token approving one command for the loop at `paths`, made in `session`
    for the client's tool call `call` (its tool_use_id), whose transcript is at
    `transcript`; the loop's earlier pending approval no longer counts.
    RalphstateError when the file cannot be written."""
    token = secrets.token_hex(TOKEN_BYTES)
    now = _now()
    entry = {
        "token": _digest(token),
        "session": session or "",
        "expires": now + TTL_SECONDS,
        "call": call,
        "transcript": transcript,
    }

    def add(loops: Entries) -> None:
        _drop_expired(loops, now)
        loops[jsonstore.key(paths)] = entry

    jsonstore.change(_path(), "the approvals file", add)
    return token


def consume(
    token: str,
    paths: LoopPaths,
    session: str | None,
    asked: Callable[[Entry], bool] = lambda entry: True,
) -> str | None:
    """Accept `token` for the loop at `paths` in `session`, once, if `asked(entry)`
    says the client asked the person about the call it was made for: None when it is
    accepted (and no longer counts), else why not: EXPIRED, ELSEWHERE (made for another
    loop or session), UNASKED (it dies) or UNKNOWN. RalphstateError when the file
    cannot be written."""
    digest = _digest(token)
    where = jsonstore.key(paths)
    if not any(e.get("token") == digest for e in jsonstore.read(_path()).values()):
        return UNKNOWN  # nothing to take: no lock, no write
    verdict: list[str | None] = [UNKNOWN]

    def take(loops: Entries) -> None:
        now = _now()
        for loop, entry in list(loops.items()):
            if entry.get("token") != digest:
                continue
            expires = entry.get("expires")
            if not isinstance(expires, (int, float)) or expires < now:
                verdict[0] = EXPIRED
            elif loop != where or entry.get("session", "") not in ("", session or ""):
                verdict[0] = ELSEWHERE
                continue  # it still counts where it was made
            elif not asked(entry):
                verdict[0] = UNASKED
            else:
                verdict[0] = None
            del loops[loop]
        _drop_expired(loops, now)

    jsonstore.change(_path(), "the approvals file", take)
    return verdict[0]


def _drop_expired(loops: Entries, now: float) -> None:
    for loop, entry in list(loops.items()):
        expires = entry.get("expires")
        if not isinstance(expires, (int, float)) or expires < now:
            del loops[loop]
