"""Which plugins pytest itself registered while a check ran in a clean room
(docs/explanation/proof.md, "Test strength"): a small pytest plugin of
ralphstate's, put in the room beside the tree and named to pytest through
`PYTEST_PLUGINS`, records the file of every plugin pytest's plugin manager registers
(conftest files, the modules a test module's `pytest_plugins` names, entry points,
objects registered by code), as they are registered, into a file of the room.

    extra = probe.arm(room_top, criterion)   # variables to add to the check's env
    ...                                       # the check runs
    found = probe.read(room_top, criterion)  # the plugin files in the room, or None

The files inside the room that the approved tree of the guarded files does not hold
are kept (by their path from its top) with the check's test counts (`plugins`,
verify/strength.py): a pass whose pytest registered such a file that its baseline
run did not name is weakened (core/proof.py `weaker_tests`), which stops a new test
module whose `pytest_plugins` names a module that forges every report, or one that
deselects. Plugins outside the room are the toolchain's (storage/peruser/toolchain.py).
The probe runs in the check's own process, so code that patches pytest itself, or
removes the probe, can hide from it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from ralphstate.storage.system.paths import LoopPaths

# The directory of the probe in the room's top directory, and its module's name.
DIR_NAME = ".ralphstate-probe"
MODULE = "ralphstate_probe"
# The variable naming the file the probe writes, one JSON list a pytest session.
OUT_VAR = "RALPHSTATE_PROBE_FILE"
# The most of the probe's file read, and the most plugin files kept.
_READ_BYTES = 1024 * 1024
MAX_PLUGINS = 100

# A word of a command line that may be Python's `-I` or `-E` (with other short flags).
_ISOLATED = re.compile(r"(?:^|\s)-[A-Za-z]*[IE][A-Za-z]*(?=\s|$)")

_SOURCE = '''\
"""ralphstate's probe: the files of the plugins pytest registers (verify/probe.py)."""
import json
import os
import sys

import pytest

# Where this session's record goes, read as the probe is loaded, before any test
# module or the code it imports runs (and could take the variable away).
_OUT = os.environ.get("RALPHSTATE_PROBE_FILE")
_seen = set()
# Each test's last call: whether it raised, as it raised (before any report is made
# of it, so code that rewrites reports cannot hide it), a skip or an expected failure
# aside.
_raised = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    error = outcome.excinfo[1] if outcome.excinfo else None
    quiet = (pytest.skip.Exception, pytest.xfail.Exception)
    _raised[item.nodeid] = (
        error is not None
        and not isinstance(error, quiet)
        and item.get_closest_marker("xfail") is None
    )


def _file(plugin):
    found = getattr(plugin, "__file__", None)
    if not isinstance(found, str):
        module = sys.modules.get(getattr(type(plugin), "__module__", "") or "")
        found = getattr(module, "__file__", None)
    return found if isinstance(found, str) else None


def pytest_plugin_registered(plugin, manager):
    found = _file(plugin)
    if found:
        _seen.add(os.path.realpath(found))


def pytest_unconfigure(config):
    out = _OUT
    if not out:
        return
    for plugin in config.pluginmanager.get_plugins():
        pytest_plugin_registered(plugin, config.pluginmanager)
    with open(out, "a") as handle:
        handle.write(json.dumps(sorted(_seen)) + "\\n")
        handle.write(json.dumps({"raised": sorted(k for k, v in _raised.items() if v)}) + "\\n")
'''


def _out(top: Path, criterion: str) -> Path:
    name = hashlib.sha256(criterion.encode()).hexdigest()[:16]
    return top / DIR_NAME / f"{name}.jsonl"


def arm(top: Path, criterion: str, env: dict[str, str], command: str = "") -> dict[str, str]:
    """`env` with the probe named to pytest (the person's `PYTEST_PLUGINS` and
    `PYTHONPATH` kept, the probe's directory last); `env` as it is when the probe
    cannot be written, or when `command` may start Python with `-I` or `-E` (which
    ignore `PYTHONPATH`: pytest would fail to import the probe it was named)."""
    if _ISOLATED.search(command):
        return env
    folder = top / DIR_NAME
    try:
        folder.mkdir(exist_ok=True)
        module = folder / f"{MODULE}.py"
        if not module.exists():  # whole before any check can import it
            part = folder / f"{MODULE}.{os.getpid()}.{threading.get_ident()}.part"
            part.write_text(_SOURCE)
            part.replace(module)
        _out(top, criterion).unlink(missing_ok=True)
    except OSError:
        return env
    armed = dict(env)
    plugins = [p for p in env.get("PYTEST_PLUGINS", "").split(",") if p]
    armed["PYTEST_PLUGINS"] = ",".join([*plugins, MODULE])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    armed["PYTHONPATH"] = os.pathsep.join([*paths, str(folder)])
    armed[OUT_VAR] = str(_out(top, criterion))
    return armed


def read(top: Path, criterion: str) -> list[str] | None:
    """The plugin files inside the room that pytest registered in the check's runs,
    by their path from the room's top, sorted; None when no pytest session wrote."""
    path = _out(top, criterion)
    with contextlib.suppress(OSError, ValueError):
        with path.open("rb") as handle:
            lines = handle.read(_READ_BYTES).splitlines()
        real = os.path.realpath(top)
        found: set[str] = set()
        seen = False
        for line in lines:
            files = json.loads(line)
            if not isinstance(files, list):
                continue
            seen = True
            for name in files:
                if not isinstance(name, str) or os.path.commonpath([real, name]) != real:
                    continue
                relative = Path(os.path.relpath(name, real)).as_posix()
                if not relative.startswith(DIR_NAME + "/"):
                    found.add(relative)
        return sorted(found)[:MAX_PLUGINS] if seen else None
    return None


def raised(top: Path, criterion: str) -> list[str]:
    """The tests whose last call raised (not a skip, not an expected failure) in the
    check's pytest sessions, as the probe saw them raise: [] when none did or no
    session wrote."""
    found: list[str] = []
    with contextlib.suppress(OSError, ValueError):
        with _out(top, criterion).open("rb") as handle:
            lines = handle.read(_READ_BYTES).splitlines()
        for line in lines:
            said = json.loads(line)
            if isinstance(said, dict) and isinstance(said.get("raised"), list):
                found += [str(name) for name in said["raised"]]
    return found[:MAX_PLUGINS]


def approved_files(paths: LoopPaths) -> set[str] | None:
    """The files of the guarded files' approved tree (the guarded files and the test
    configuration as the person approved them), by their path from the top of the
    work tree; None when the loop has no approved tree, or git cannot say."""
    from ralphstate.core import limits
    from ralphstate.storage.peruser import ledger
    from ralphstate.storage.repo import roomfiles

    tree = (ledger.read(paths) or {}).get("guardTree")
    if not isinstance(tree, str) or not tree:
        return None
    found = roomfiles.listing(paths.root, tree, limits.GIT_TIMEOUT)
    return set(found) if found is not None else None


def attach(
    strength: dict[str, Any] | None,
    found: list[str] | None,
    approved: set[str] | None,
    armed: bool = True,
) -> None:
    """Keep, with a pytest run's counts, as `plugins`, the plugin files of `found`
    (`read`'s answer) that the `approved` tree does not hold: the project's plugins
    no person approved. Nothing when either is unknown. A pytest run the probe was
    `armed` for and that left no record is `unprobed`: something in its process
    silenced the probe (core/proof.py `weaker_tests` holds it against the baseline)."""
    if not isinstance(strength, dict) or "pytest" not in str(strength.get("runner")):
        return
    if found is None and armed:
        strength["unprobed"] = True
    if approved is not None and found is not None:
        strength["plugins"] = [name for name in found if name not in approved]
