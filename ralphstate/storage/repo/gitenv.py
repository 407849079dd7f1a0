"""The environment every git ralphstate starts runs in (`storage/repo/git.py`
`run_git`, with this module the only places that start git; docs/explanation/proof.md,
"Clean-room verification"): the caller's variables without those that would point git
elsewhere or make it start a program, and every setting that starts a program turned
off, on git's command-line scope, where it wins over every configuration file. The
project's `.git/config` is the agent's to write: an fsmonitor, a hook, a filter, a
pager or a credential helper there never runs in a git of ralphstate's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ralphstate.storage.system import children

# Variables a git hook's environment sets that would point these commands elsewhere,
# and the caller's variables that would make git start a program or read configuration
# given on the side (the agent's shell can set any of them for one `ralphstate verify`).
_GIT_ENV = ("GIT_INDEX_FILE", "GIT_WORK_TREE", "GIT_PREFIX")
_PROGRAM_ENV = (
    "GIT_EXTERNAL_DIFF",
    "GIT_DIFF_OPTS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PROXY_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
)
# The settings that make git start a program, each turned off for every git ralphstate
# runs: given last, on git's command-line scope, they win over every configuration file
# (the project's `.git/config` is the agent's to write). Filters are turned off by name
# (`_filters`): git cannot be told to run none.
SAFE_CONFIG = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    ("commit.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)
_FILTER_KEYS = ("clean", "smudge", "process")
# The most of the configuration's filter names read.
_LIST_BYTES = 256 * 1024
# How long the filters a directory's configuration names are taken as known: the
# commands of one verification ask once, and a long `ralphstate run` asks again.
FILTERS_SECONDS = 2.0
# The filters each directory's configuration names, and when they were asked.
_filters_of: dict[str, tuple[float, list[str]]] = {}


def git_env(**extra: str) -> dict[str, str]:
    """The environment of ralphstate's git commands: the caller's, without what would
    point them elsewhere, and with git's replacement objects off (`git replace` could
    make a tree read as other content than it holds: a clean room, or the approved
    tests, must be what their ids say)."""
    env = {k: v for k, v in os.environ.items() if not _unsafe(k)}
    env.update(GIT_NO_REPLACE_OBJECTS="1", GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
    env.update(extra)
    return env


def _unsafe(name: str) -> bool:
    return (
        name in _GIT_ENV
        or name in _PROGRAM_ENV
        or name.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
    )


def safe_env(env: dict[str, str], cwd: Path | str, timeout: float) -> dict[str, str]:
    """`env` (from `git_env`) with every setting that makes git start a program turned
    off (`SAFE_CONFIG`, and each filter the configuration in `cwd` names), appended to
    its `GIT_CONFIG_COUNT` pairs so that they come last and win."""
    done = {k: v for k, v in env.items() if k not in _PROGRAM_ENV or k == "GIT_CONFIG_COUNT"}
    pairs = [*SAFE_CONFIG]
    for name in _filters(done, cwd, timeout):
        pairs += [(f"filter.{name}.{key}", "") for key in _FILTER_KEYS]
        pairs.append((f"filter.{name}.required", "false"))
    given = done.get("GIT_CONFIG_COUNT", "0")
    count = int(given) if given.isdigit() else 0
    for number, (key, value) in enumerate(pairs, count):
        done[f"GIT_CONFIG_KEY_{number}"], done[f"GIT_CONFIG_VALUE_{number}"] = key, value
    done["GIT_CONFIG_COUNT"] = str(count + len(pairs))
    return done


def _filters(env: dict[str, str], cwd: Path | str, timeout: float) -> list[str]:
    """The names of the filters git's configuration in `cwd` gives a program to, asked
    at most once every `FILTERS_SECONDS` (reading configuration runs nothing). A
    filter added within that time is not turned off; the room's files are compared with
    what ralphstate wrote there before the checks run (`storage/repo/cleanroom.py`)."""
    key = str(Path(cwd).absolute())
    now = time.monotonic()
    known = _filters_of.get(key)
    if known is not None and now - known[0] < FILTERS_SECONDS:
        return known[1]
    asked = ["git", "config", "-z", "--name-only", "--get-regexp", r"^filter\..*\."]
    try:
        said = children.run(asked, cwd=cwd, env=env, timeout=timeout, limit=_LIST_BYTES)
    except OSError:
        said = None
    found: set[str] = set()
    if said is not None and said.code == 0:
        for item in said.out.decode("utf-8", "surrogateescape").split("\0"):
            head, _, last = item.rpartition(".")
            if head.startswith("filter.") and last.lower() in _FILTER_KEYS:
                found.add(head[len("filter.") :])
    _filters_of[key] = (now, sorted(found))
    return _filters_of[key][1]
