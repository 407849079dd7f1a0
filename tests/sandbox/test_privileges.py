"""No capability inside the sandbox, as root too: the agent of `ralphstate run --sandbox
bwrap` and a confined check read their own `/proc/self/status`, and a root agent tries
what the capabilities it must not hold would allow (remounting the per-user store
read-write, unmounting the hidden home). The same from a regular user, made for the test
with `useradd` where the tests run as root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run.spawn import join_command
from tests.adversarial.scripted import Person
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap

# Writes the status lines that say what the process may do, then tries as root what a
# capability would allow.
PROBE = r"""
import json, subprocess, sys
lines = open("/proc/self/status").read().splitlines()
got = dict(line.split(":\t", 1) for line in lines if ":\t" in line)
wanted = {k: got[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs")}
wanted["uid_map"] = open("/proc/self/uid_map").read().split()
for name, argv in sys_argv_attempts():
    wanted[name] = subprocess.run(argv, capture_output=True).returncode
open("caps.json", "w").write(json.dumps(wanted))
"""


def probe_script(attempts: dict[str, list[str]]) -> str:
    given = orjson.dumps(attempts).decode()
    head = f"import json\ndef sys_argv_attempts():\n    return json.loads({given!r}).items()\n"
    return head + PROBE


def assert_powerless(caps: dict[str, Any]) -> None:
    for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        assert caps[name] == "0000000000000000", caps
    assert caps["NoNewPrivs"] == "1", caps
    # A user namespace of its own (this kernel allows one): one id mapped, not all.
    assert caps["uid_map"][2] == "1", caps


def test_a_root_agent_holds_no_capability_and_cannot_remount_or_unmount(
    calc: Path, person: Person, isolated: Path, tmp_path: Path
) -> None:
    """As root where the suite runs as root; again as a regular user from
    test_as_regular_user.py, whose agent must hold no more."""
    script = tmp_path / "probe.py"
    attempts = {
        "remount store": ["mount", "-o", "remount,rw", str(isolated)],
        "unmount home": ["umount", os.environ["HOME"]],
        "network": ["ip", "link", "set", "lo", "down"],
    }
    script.write_text(probe_script(attempts))
    command = join_command([sys.executable, str(script)])
    done = person.rs(
        "run", "--sandbox", "bwrap", "--agent", command, "--max", "1", "--json", ok=False
    )
    assert orjson.loads(done.stdout)["runs"][0]["exit"] == 0, done.stderr
    caps = orjson.loads((calc / "caps.json").read_bytes())
    assert_powerless(caps)
    for name in attempts:
        assert caps[name] != 0, (name, caps)


def system_python() -> str:
    """The system's python3, which a test user can run with this checkout's libraries
    when it is this suite's own version; else the test skips, saying why."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("the regular user needs the system's python3")
    same = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True, text=True, check=False,
    ).stdout.strip() != same:  # fmt: skip
        pytest.skip(f"the system's python3 is not {same}, whose packages the user would import")
    return python


@pytest.fixture
def regular_user() -> Iterator[tuple[str, Path]]:
    """A user made for the test, and a home of theirs that anyone may enter."""
    with made_user() as found:
        yield found


@contextmanager
def made_user() -> Iterator[tuple[str, Path]]:
    """A user made with `useradd` and a home of theirs that anyone may enter, removed at
    the end; the test skips, saying why, where none can be made."""
    if shutil.which("useradd") is None or os.geteuid() != 0:
        pytest.skip("making a test user needs root and useradd")
    name = f"rstest{uuid.uuid4().hex[:8]}"
    home = Path(tempfile.mkdtemp(prefix="ralphstate-user-"))
    home.chmod(0o755)
    subprocess.run(["useradd", "-M", "-d", str(home), "-s", "/bin/sh", name], check=True)
    shutil.chown(home, user=name, group=name)
    try:
        yield name, home
    finally:
        subprocess.run(["userdel", name], check=False, capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


# Run as the test user: the run's own sandbox layout (sandbox/bubblewrap.py) and a
# check's (verify/confine.py), each with the probe inside.
AS_USER = r"""
import json, subprocess, sys
from pathlib import Path
from typing import Any
from ralphstate.sandbox import bubblewrap
from ralphstate.sandbox.reach import Reach
from ralphstate.storage.system import bwrapargs
from ralphstate.verify import confine

project = Path(sys.argv[1])
where = Reach(root=project, writable=[project], hidden=bwrapargs.socket_dirs())
program, userns = bubblewrap.ready(where, offline=False)
argv = bubblewrap.command(program, where, False, [sys.executable, sys.argv[2]], userns)
subprocess.run(argv, check=True, cwd=project)
agent = json.loads((project / "caps.json").read_text())
wrapped = confine.wrap(f"{sys.executable} {sys.argv[2]}", room=project, cwd=project)
subprocess.run(wrapped.args, shell=wrapped.shell, env=wrapped.env, check=True, cwd=project)
check = json.loads((project / "caps.json").read_text())
print(json.dumps({"agent": agent, "check": check, "confined": wrapped.confined}))
"""


def test_a_regular_users_agent_and_check_hold_no_capability(
    regular_user: tuple[str, Path],
) -> None:
    name, home = regular_user
    project = home / "project"
    project.mkdir()
    shutil.chown(project, user=name, group=name)
    script = project / "probe.py"  # a check sees its room only
    script.write_text(probe_script({}))
    runner = home / "as_user.py"
    runner.write_text(AS_USER)
    # The system's Python, with this checkout and its libraries: the test user may not
    # enter the home of the Python the tests run on.
    python = system_python()
    root = Path(__file__).resolve().parents[2]
    site = next(p for p in sys.path if p.endswith("site-packages"))
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "RALPHSTATE_HOME": str(home / "rs"),
        "PYTHONPATH": os.pathsep.join([str(root), site]),
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    setpriv = ["setpriv", "--reuid", name, "--regid", name, "--init-groups"]
    done = subprocess.run(
        [*setpriv, python, str(runner), str(project), str(script)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = orjson.loads(done.stdout)
    assert found["confined"], found
    assert_powerless(found["agent"])
    assert_powerless(found["check"])
