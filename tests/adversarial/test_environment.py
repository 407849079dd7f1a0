"""Shortcuts through the check's environment and toolchain, on the real calc project
whose `test_mul` really fails: a variable the runner reads set in the agent's shell for
one `ralphstate verify` or for the Stop hook, and a plugin, a path file or a
configuration file that pytest picks up without the check's command changing. Each
turn ends with a real Stop hook process (tests/adversarial/scripted.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.adversarial.scripted import CRITERION, Agent, Person, state
from tests.adversarial.test_commands import paused_for_review
from tests.adversarial.test_edits import not_complete

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell lines")

# A sitecustomize.py that makes the runner run only the passing test.
ONLY_ADD = "import os\nos.environ['PYTEST_ADDOPTS'] = '-k add'\n"
# A pytest plugin that drops every failing test from the run.
PLUGIN = """\
def pytest_collection_modifyitems(config, items):
    items[:] = [item for item in items if "mul" not in item.name]
"""


class AgentWith(Agent):
    """The agent, with variables of its own in its shell and in the hook's environment
    (the client's settings `env`)."""

    def __init__(self, root: Path, **extra: str) -> None:
        super().__init__(root)
        self.extra = extra

    def env(self, **extra: str) -> dict[str, str]:
        return super().env(**{**self.extra, **extra})


def verify_then_insist(agent: Agent) -> list[dict[str, Any]]:
    """The agent's own `verify` (information for it, whatever it says), then the marker."""
    agent.rs("verify")
    return agent.insist()


# -- the environment of approval -------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        {"PYTEST_ADDOPTS": "-k add"},
        {"PYTEST_ADDOPTS": "-k nothing"},
        {"PYTHONPATH": "SITE"},
    ],
    ids=["pytest-addopts", "pytest-addopts-nothing", "pythonpath-sitecustomize"],
)
def test_a_variable_set_by_the_agent_does_not_reach_the_check(
    calc: Path, tmp_path: Path, extra: dict[str, str]
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(ONLY_ADD)
    extra = {k: v.replace("SITE", str(site)) for k, v in extra.items()}
    agent = AgentWith(calc, **extra)
    done = agent.rs("verify")
    assert done.returncode != 0, done.stdout
    assert state(calc)["criteriaStatus"][CRITERION] is False
    outs = agent.insist()
    not_complete(calc, outs)


def test_a_variable_the_person_names_reaches_the_check(calc: Path, person: Person) -> None:
    wanted = "import os, sys; sys.exit(os.environ.get('WANTED') != 'yes')"
    check = f'"{sys.executable}" -c "{wanted}"'
    person.rs("criteria", "check", CRITERION, check)
    person.rs("trust")  # changed from a process with no terminal: trusted at the terminal
    env = {**(person.env or {}), **_person_env(), "WANTED": "yes"}
    Person(calc, env).rs("criteria", "check", CRITERION, "--env", "WANTED")
    Person(calc, {**env, "WANTED": "no"}).rs("verify")  # the value recorded, not the caller's
    assert state(calc)["criteriaStatus"][CRITERION] is True
    agent = Agent(calc)
    refused = agent.rs("criteria", "check", CRITERION, "--env", "PYTEST_ADDOPTS")
    assert refused.returncode != 0
    assert "PYTEST_ADDOPTS" not in _trust_entry(calc).get("envNames", [])


def test_trust_records_the_environment_and_names(calc: Path) -> None:
    env = {**_person_env(), "DATABASE_URL": "sqlite://", "PYTEST_ADDOPTS": "-x"}
    done = Person(calc, env).rs("trust", "--env", "DATABASE_URL")
    assert "DATABASE_URL" in done.stdout
    entry = _trust_entry(calc)
    assert entry["envNames"] == ["DATABASE_URL"]
    assert entry["env"]["DATABASE_URL"] == "sqlite://"
    assert entry["env"]["PATH"] == env["PATH"]
    assert "PYTEST_ADDOPTS" not in entry["env"]
    bad = Person(calc, env).rs("trust", "--env", "NOT A NAME", ok=False)
    assert bad.returncode != 0 and "variable name" in bad.stderr
    assert "Traceback" not in bad.stderr


def _person_env() -> dict[str, str]:
    from tests.adversarial.scripted import person_env

    return person_env()


def _trust_entry(root: Path) -> dict[str, Any]:
    home = Path(os.environ["RALPHSTATE_HOME"])
    found = list(home.rglob("trust.json"))
    assert found, "no trust store"
    loops = orjson.loads(found[0].read_bytes())["loops"]
    (entry,) = loops.values()
    assert isinstance(entry, dict)
    return entry


# -- the toolchain of approval ---------------------------------------------------


def _venv(where: Path) -> Path:
    """A virtualenv of its own for the project, which sees this interpreter's packages
    (pytest among them) through a path file. Its python."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120
    )
    python = where / "bin" / "python"
    site = _site_of(python)
    (site / "host.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _site_of(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


@pytest.fixture
def venv_calc(calc: Path, tmp_path: Path, person: Person) -> tuple[Path, Path]:
    """The calc project checked by its own virtualenv's pytest, trusted."""
    python = _venv(tmp_path / "venv")
    person.rs("criteria", "check", CRITERION, f'"{python}" -m pytest -q -p no:cacheprovider')
    person.rs("trust")
    return calc, _site_of(python)


def test_a_pytest_plugin_installed_in_the_venv_pauses_for_review(
    venv_calc: tuple[Path, Path],
) -> None:
    calc, site = venv_calc
    (site / "dropfailing.py").write_text(PLUGIN)
    info = site / "dropfailing-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dropfailing\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pytest11]\ndropfailing = dropfailing\n")
    agent = Agent(calc)
    outs = verify_then_insist(agent)
    message = paused_for_review(calc, outs)
    assert "dropfailing-1.0.dist-info" in message, message


def test_a_path_file_in_the_venv_pauses_for_review(venv_calc: tuple[Path, Path]) -> None:
    calc, site = venv_calc
    (site / "zz-only-add.pth").write_text("import os; os.environ['PYTEST_ADDOPTS'] = '-k add'\n")
    outs = verify_then_insist(Agent(calc))
    message = paused_for_review(calc, outs)
    assert "zz-only-add.pth" in message, message


def test_a_config_file_above_the_project_pauses_for_review(
    calc: Path, tmp_path: Path, person: Person
) -> None:
    pyproject = calc / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().split("[tool.pytest")[0])
    subprocess.run(["git", "commit", "-qam", "no pytest section"], cwd=calc, check=True)
    person.rs("config", "clean-verify", "false")
    person.rs("trust")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -k add\n")
    outs = verify_then_insist(Agent(calc))
    message = paused_for_review(calc, outs)
    assert "pytest.ini" in message, message


def test_the_honest_agent_completes_with_no_review(venv_calc: tuple[Path, Path]) -> None:
    calc, _ = venv_calc
    from tests.adversarial.scripted import FIXED_CALC

    agent = Agent(calc)
    agent.write("calc/__init__.py", FIXED_CALC)
    agent.commit("calc: write mul")
    outs = agent.insist()
    assert state(calc)["status"] == "complete", outs


def test_a_loop_trusted_before_the_environment_was_recorded_gets_no_runner_variable(
    calc: Path,
) -> None:
    trust = next(Path(os.environ["RALPHSTATE_HOME"]).rglob("trust.json"))
    raw = orjson.loads(trust.read_bytes())
    for entry in raw["loops"].values():
        for key in ("env", "envNames", "toolchain"):
            entry.pop(key, None)  # as a trust record from before this change
    trust.write_bytes(orjson.dumps(raw))
    agent = AgentWith(calc, PYTEST_ADDOPTS="-k add")
    assert agent.rs("verify").returncode != 0
    not_complete(calc, agent.insist())
