"""`ralphstate config checks-confined off` is the person's alone: from a process with
no terminal (the agent's tool) it is refused in one sentence and nothing changes; at
the person's terminal it writes the switch, and `on` takes it away."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.adversarial.scripted import Agent, person_env
from tests.helpers.terminal import at_terminal


def test_only_the_person_switches_the_checks_confinement_off(calc: Path, isolated: Path) -> None:
    switch = [p for p in isolated.rglob("checks-unconfined")]
    assert switch == []
    done = Agent(calc).rs("config", "checks-confined", "off")
    assert done.returncode == 1, done
    assert "`ralphstate config checks-confined off`" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert list(isolated.rglob("checks-unconfined")) == []
    argv = [sys.executable, "-I", "-m", "ralphstate", "config", "checks-confined", "off"]
    typed = at_terminal([], cwd=calc, env=person_env(), program=argv, inherit=False)
    assert typed.code == 0, typed.screen
    assert len(list(isolated.rglob("checks-unconfined"))) == 1
    done = Agent(calc).rs("config", "checks-confined", "on")
    assert done.returncode == 0, done.stderr
    assert list(isolated.rglob("checks-unconfined")) == []
