"""The one function family that finds ralphstate's per-user directories.

`$RALPHSTATE_HOME` overrides all of them (tests point it at a temporary directory);
otherwise platformdirs chooses the platform's usual places.
"""

from __future__ import annotations

import os
from pathlib import Path

from ralphstate.core.errors import RalphstateError

ENV_HOME = "RALPHSTATE_HOME"


class NoHome(RalphstateError):
    """No home directory can be found: the per-user directories have no place."""

    def __init__(self) -> None:
        super().__init__(
            "cannot find your home directory, where ralphstate keeps what this machine"
            " knows (HOME is not set, and your user has no home in the password database);"
            f" set HOME, or {ENV_HOME} to a directory of your own."
        )


def _dir(kind: str) -> Path:
    override = os.environ.get(ENV_HOME)
    if override:
        return Path(override).expanduser() / kind
    import platformdirs  # only off the hot path

    try:
        if kind == "state":
            found = platformdirs.user_state_dir("ralphstate", appauthor=False)
        elif kind == "log":
            found = platformdirs.user_log_dir("ralphstate", appauthor=False)
        else:
            found = platformdirs.user_data_dir("ralphstate", appauthor=False)
    except (RuntimeError, KeyError, OSError):  # no HOME, no passwd entry
        raise NoHome from None
    if not Path(found).is_absolute():  # "~" left as it is: no home either
        raise NoHome
    return Path(found)


def state_dir() -> Path:
    return _dir("state")


def log_dir() -> Path:
    return _dir("log")


def data_dir() -> Path:
    return _dir("data")


def loop_key(loop_dir: Path) -> str:
    """The key of a loop's entries in the per-user files: the loop directory's path, its
    parent's real path joined with its own name. The name itself is not followed: a
    `.loop` that comes to be a link to another directory of the project is the same
    loop, with the same trust and record of approvals (following it, the record was not
    found, and a weakened contract was taken as the loop first seen)."""
    return str(Path(os.path.realpath(loop_dir.parent)) / loop_dir.name)


def ledger_path(loop_dir: Path) -> Path:
    """The loop's own file of what ralphstate wrote and what a person approved
    (storage/peruser/ledger.py), named by a hash of its key."""
    import hashlib

    key = loop_key(loop_dir)
    name = hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return data_dir() / "loops" / f"{name}.json"
