"""The one function family that finds ralphstate's per-user directories.

`$RALPHSTATE_HOME` overrides all of them (tests point it at a temporary directory);
otherwise platformdirs chooses the platform's usual places.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV_HOME = "RALPHSTATE_HOME"


def _dir(kind: str) -> Path:
    override = os.environ.get(ENV_HOME)
    if override:
        return Path(override).expanduser() / kind
    import platformdirs  # only off the hot path

    if kind == "state":
        found = platformdirs.user_state_dir("ralphstate", appauthor=False)
    elif kind == "log":
        found = platformdirs.user_log_dir("ralphstate", appauthor=False)
    else:
        found = platformdirs.user_data_dir("ralphstate", appauthor=False)
    return Path(found)


def state_dir() -> Path:
    return _dir("state")


def log_dir() -> Path:
    return _dir("log")


def data_dir() -> Path:
    return _dir("data")
