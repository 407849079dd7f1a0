"""The environment a check runs with: the one recorded when a person approved it.

A check's runner reads its environment (`PYTEST_ADDOPTS`, `PYTHONPATH`,
`PYTHONSTARTUP`, `NODE_OPTIONS`, `GOFLAGS`, `RUSTFLAGS`, `LD_PRELOAD`, ...), so whoever
sets a variable for one `ralphstate verify` could change what the check runs. A check
therefore never gets the caller's environment. At `ralphstate trust` (and whenever a
person's own change carries trust forward, `truststore.record`), the values of an
allowlist of essentials and of the variables the person named (`--env NAME` at
`trust` or `criteria check`) are taken from the person's shell and kept in the trust
store; every check of the loop then runs with exactly those values.

The essentials are what a program needs to start and to find its files, and nothing a
runner reads as options: `PATH`; `HOME`, `USER`, `LOGNAME` (where files and caches
live); `LANG`, `LANGUAGE`, `LC_*` and `TZ` (how text and times read); `TERM`, `NO_COLOR`
(how output is drawn); `PYTHONDONTWRITEBYTECODE`, `PYTHONUNBUFFERED` (whether Python
writes bytecode files and buffers its output: neither changes what a test does);
`TMPDIR`, `TEMP`, `TMP` (where temporary files go); `XDG_*`
(the user's directories); and on Windows the variables a process cannot start without
(`SYSTEMROOT`, `COMSPEC`, `PATHEXT`, `USERPROFILE`, `APPDATA`, ...).

A loop trusted before the environment was recorded (its trust record has no `env`)
runs its checks with the essentials taken from the caller, and nothing else: no
runner variable reaches it. The next person's trust records the environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

# Names a check always gets, with the value recorded at approval.
ESSENTIALS = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "LANG",
        "LANGUAGE",
        "TZ",
        "TERM",
        "NO_COLOR",
        # Python's switches that change no outcome: no bytecode files written, output
        # not buffered.
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUNBUFFERED",
        "TMPDIR",
        "TEMP",
        "TMP",
        # Windows: what a process needs to start, and where the user's files are.
        "SYSTEMROOT",
        "SYSTEMDRIVE",
        "WINDIR",
        "COMSPEC",
        "PATHEXT",
        "USERPROFILE",
        "HOMEDRIVE",
        "HOMEPATH",
        "APPDATA",
        "LOCALAPPDATA",
        "PROGRAMDATA",
        "PROGRAMFILES",
        "PROGRAMFILES(X86)",
        "NUMBER_OF_PROCESSORS",
        "PROCESSOR_ARCHITECTURE",
    }
)
_ESSENTIAL_PREFIXES = ("LC_", "XDG_")
# What a variable name may look like when a person names one.
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The most variables a person may name, and the longest value recorded.
MAX_NAMES = 100
MAX_VALUE_CHARS = 32 * 1024


def essential(name: str) -> bool:
    """Whether `name` is one of the essentials every check gets."""
    upper = name.upper()
    return upper in ESSENTIALS or upper.startswith(_ESSENTIAL_PREFIXES)


def bad_names(names: Iterable[str]) -> list[str]:
    """The names that are not variable names."""
    return [name for name in names if not NAME.match(name)]


def capture(names: Iterable[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values to record now, from `environ` (this process's environment): every
    essential that is set, and each of `names` that is set."""
    environ = os.environ if environ is None else environ
    wanted = set(names)
    return {
        name: value
        for name, value in environ.items()
        if (essential(name) or name in wanted) and len(value) <= MAX_VALUE_CHARS
    }


def for_check(
    recorded: Mapping[str, object] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment a check runs with: `recorded` (the trust record's `env`), as it
    is; without one, the essentials of `environ` (this process's environment)."""
    if isinstance(recorded, Mapping):
        return {str(k): str(v) for k, v in recorded.items() if isinstance(v, str)}
    return capture((), environ)
