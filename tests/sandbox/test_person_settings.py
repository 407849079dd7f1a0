"""Turning confinement off is the person's act: a sandbox mode or network setting the
agent wrote into the loop's config is refused at the next run, in one sentence naming
it, until the person trusts it; `--no-sandbox` from an agent is refused; the run's
`--json` says which mode ran."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from tests.adversarial.scripted import Agent, Person, person_env
from tests.sandbox import agent
from tests.sandbox.conftest import needs_bwrap


def test_a_sandbox_off_the_agent_wrote_is_refused_until_the_person_trusts_it(
    calc: Path, person: Person, tmp_path: Path
) -> None:
    config = calc / ".loop" / "config.toml"
    command = agent.command(tmp_path / "agent", {}, honest=False)
    config.write_text(f'[run]\nagent = {orjson.dumps(command).decode()}\nsandbox = "off"\n')
    done = person.rs("run", "--max", "1", ok=False)
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "(the agent command and the sandbox mode)" in lines[0], lines
    assert "is not trusted on this machine" in lines[0]
    assert not (calc / "agent-ran").exists()


def test_no_sandbox_from_an_agent_is_refused(calc: Path, tmp_path: Path) -> None:
    command = agent.command(tmp_path / "agent", {}, honest=False)
    done = Agent(calc).rs("run", "--no-sandbox", "--agent", command, "--max", "1")
    assert done.returncode == 1, done
    assert "`ralphstate run --no-sandbox`" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (calc / "agent-ran").exists()


@needs_bwrap
def test_the_runs_json_says_which_mode_ran(calc: Path, person: Person, tmp_path: Path) -> None:
    command = agent.command(tmp_path / "agent", {}, honest=False)
    done = person.rs(
        "run", "--sandbox", "bwrap", "--agent", command, "--max", "1", "--json", ok=False
    )
    assert orjson.loads(done.stdout)["sandbox"] == "bubblewrap", done.stderr
    done = person.rs("run", "--no-sandbox", "--agent", command, "--max", "1", "--json", ok=False)
    assert orjson.loads(done.stdout)["sandbox"] == "unconfined", done.stderr


@needs_bwrap
def test_run_confines_by_default(
    calc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPHSTATE_RUN_SANDBOX")
    command = agent.command(tmp_path / "agent", {}, honest=False)
    done = Person(calc).rs("run", "--agent", command, "--max", "1", "--json", ok=False)
    assert "sandbox: bubblewrap" in done.stderr
    out = orjson.loads(done.stdout)
    assert out["sandbox"] == "bubblewrap" and out["runs"][0]["sandbox"] == "bubblewrap", out


def test_without_a_sandbox_run_refuses_and_names_no_sandbox(
    calc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPHSTATE_RUN_SANDBOX")
    bare = tmp_path / "bin without bwrap"
    bare.mkdir()
    git = shutil.which("git")
    assert git is not None
    (bare / "git").symlink_to(git)
    command = agent.command(tmp_path / "agent", {}, honest=False)
    env = {**person_env(), "PATH": str(bare)}
    done = Person(calc, env).rs("run", "--agent", command, "--max", "1", ok=False)
    assert done.returncode == 1, done
    assert done.stderr.strip().splitlines() == [
        (
            "ralphstate: the bubblewrap sandbox cannot start: `bwrap` is not on PATH (Debian"
            " and Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap); the run"
            " does not go on unconfined unless you give --no-sandbox."
        )
    ], done.stderr
    assert not (calc / "agent-ran").exists()


@needs_bwrap
def test_a_sandbox_setting_the_agent_deleted_is_noticed_at_the_next_run(
    calc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RALPHSTATE_RUN_SANDBOX")  # the default, `auto`
    person = Person(calc, env=person_env())
    config = calc / ".loop" / "config.toml"
    command = agent.command(tmp_path / "agent", {}, honest=False)
    config.write_text('[run]\nsandbox = "bwrap"\nsandbox-network = false\n')
    trusted = person.rs("trust", ok=False)
    assert trusted.returncode == 0, trusted.stdout
    # The agent deletes the person's settings: the network would be on, nothing changed
    # that a person must trust.
    config.write_text("[run]\n")
    done = person.rs("run", "--agent", command, "--max", "1", ok=False)
    assert done.returncode == 1, done
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "the `sandbox` and `sandbox-network` setting you trusted is gone from" in lines[0], lines
    assert not (calc / "agent-ran").exists()
    # Given on the command line, the run goes on.
    done = person.rs(
        "run", "--sandbox", "bwrap", "--no-network", "--agent", command, "--max", "1", ok=False
    )
    assert "is gone from" not in done.stderr, done.stderr
