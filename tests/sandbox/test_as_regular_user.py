"""The attempts of a goal-seeking agent, as a regular user: each test below, which the
suite runs as whoever runs it (root here, in a container), runs again whole as a user
made for the test with `useradd`, in a pytest of that user's own, so that what holds
for root is seen to hold without root's reach as well. The user's Python is the
system's, in a venv of their own that imports this checkout and the suite's libraries
(the test user may not enter the home of the Python the tests run on). One user and
one pytest run them all; each attempt is a test of its own here."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.conftest import needs_bwrap
from tests.sandbox.test_privileges import made_user, system_python

pytestmark = [needs_bwrap, pytest.mark.xdist_group("regular-user")]

ROOT = Path(__file__).resolve().parents[2]

# Each attempt of the list, by the test that tries it (SECURITY.md, promise 44).
ATTEMPTS = {
    "the agent's capabilities: remount the store, unmount the home, the network": (
        "tests/sandbox/test_privileges.py::"
        "test_a_root_agent_holds_no_capability_and_cannot_remount_or_unmount"
    ),
    "the check imports the agent's code, which writes the home and the trust file": (
        "tests/adversarial/test_confined.py::"
        "test_the_agent_s_code_in_the_check_reaches_nothing_and_does_not_complete"
    ),
    "the same under `run`": (
        "tests/adversarial/test_confined.py::"
        "test_under_run_the_agent_s_code_in_the_check_reaches_nothing"
    ),
    "ralphstate's git runs the project's fsmonitor and hooks": (
        "tests/adversarial/test_room.py::test_no_program_in_the_projects_git_config_runs"
    ),
    "a new .git in place of the approved one": (
        "tests/adversarial/test_room.py::"
        "test_a_new_repository_in_place_of_the_approved_one_pauses_for_review"
    ),
    "a .git/commondir written into git": (
        "tests/adversarial/test_room.py::test_a_commondir_written_into_git_pauses_for_review"
    ),
    "the agent switches the sandbox off in the config": (
        "tests/sandbox/test_person_settings.py::"
        "test_a_sandbox_off_the_agent_wrote_is_refused_until_the_person_trusts_it"
    ),
    "the agent gives --no-sandbox": (
        "tests/sandbox/test_person_settings.py::test_no_sandbox_from_an_agent_is_refused"
    ),
    "the person's secrets in the environment": (
        "tests/sandbox/test_env_allowlist.py::"
        "test_the_confined_agent_gets_only_the_allowlist_and_what_the_person_names"
    ),
}


def as_user(name: str) -> list[str]:
    return ["setpriv", "--reuid", name, "--regid", name, "--init-groups"]


def user_python(home: Path, name: str, python: str) -> Path:
    """A venv of the system's `python` in the user's `home`, made by the user, importing
    this checkout and the suite's own libraries (a `.pth` file: read under `-I` too)."""
    base = home / "venv"
    make = [*as_user(name), python, "-m", "venv", "--without-pip", str(base)]
    subprocess.run(make, check=True, capture_output=True, cwd=home, env={"PATH": "/usr/bin:/bin"})
    suite = next(p for p in sys.path if p.endswith("site-packages"))
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    pth = base / "lib" / version / "site-packages" / "suite.pth"
    pth.write_text(f"{ROOT}\nimport site; site.addsitedir({suite!r})\n")
    return base / "bin" / "python"


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[str, str]]:
    """Each attempt's test run as the test user: its node id, and "" when it passed or
    what went wrong."""
    with made_user() as (name, home):
        python = user_python(home, name, system_python())
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "TMPDIR": str(home),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        who = [str(python), "-c", "import os, ralphstate; print(os.geteuid())"]
        uid = subprocess.run([*as_user(name), *who], env=env, capture_output=True, text=True)
        assert uid.returncode == 0 and uid.stdout.strip() not in ("", "0"), uid
        report = home / "report.xml"
        argv = [str(python), "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider"]
        argv += ["--basetemp", str(home / "base"), f"--junitxml={report}", *ATTEMPTS.values()]
        done = subprocess.run(
            [*as_user(name), *argv], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert report.exists(), done.stdout[-4000:] + done.stderr[-2000:]
        found = {}
        for case in ET.parse(report).iter("testcase"):
            node = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
            wrong = [
                f"{c.tag}: {c.get('message', '')}\n{c.text or ''}"
                for c in case
                if c.tag in ("failure", "error", "skipped")
            ]
            found[node] = "\n".join(wrong)[-6000:]
        yield found


@pytest.mark.parametrize("node", list(ATTEMPTS.values()), ids=list(ATTEMPTS))
def test_each_attempt_fails_as_a_regular_user_too(outcomes: dict[str, str], node: str) -> None:
    assert node in outcomes, sorted(outcomes)
    assert outcomes[node] == "", outcomes[node]
