"""Hostile repositories: what a cloned `.loop/` (or a template, or a config file) may
put in front of a person or run, and what it may not."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

OSC52 = "\x1b]52;c;cHduZWQ=\x07"  # writes "pwned" into the terminal's clipboard
SHOWN_OSC52 = "\\x1b]52;c;cHduZWQ=\\x07"


def start(rs: Any, *args: str) -> None:
    result = rs("init", "Export invoices as CSV", "-c", "tests pass", *args)
    assert result.code == 0, result.err


def edit_state(project: Path, **changes: Any) -> None:
    path = project / ".loop" / "state.json"
    state = json.loads(path.read_text())
    state.update(changes)
    path.write_text(json.dumps(state))


# -- one sanitiser for everything that echoes state-derived text ---------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("criteria", "set", "1", "true"), f"tests {SHOWN_OSC52}pass: met\n"),
        (("criteria", "remove", "1"), f"removed criterion 'tests {SHOWN_OSC52}pass'\n"),
        (("step", "done", "1"), f"done: write {SHOWN_OSC52}it\n"),
        (("step", "undo", "1"), f"not done: write {SHOWN_OSC52}it\n"),
    ],
)
def test_names_from_a_cloned_state_are_echoed_escaped(
    rs: Any, project: Path, args: tuple[str, ...], expected: str
) -> None:
    start(rs)
    edit_state(
        project,
        criteria=[f"tests {OSC52}pass"],
        steps=[f"write {OSC52}it"],
        completedSteps=[f"write {OSC52}it"] if args[1] == "undo" else [],
    )
    done = rs(*args)
    assert done.code == 0, done.err
    assert done.out == expected
    assert "\x1b" not in done.out + done.err


def test_names_the_person_typed_are_echoed_escaped_too(rs: Any, project: Path) -> None:
    start(rs)
    added = rs("criteria", "add", "docs\u202e written")
    assert added.out == "added criterion 'docs\\u202e written'\n"
    step = rs("step", "add", "line\u2028two")
    assert step.out == "added step 'line\\u2028two'\n"


# -- a cloned loop cannot pass for a known one ---------------------------------------------


def test_a_cloned_loop_without_an_identity_is_not_a_known_loop(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ralphstate.storage.peruser import registry
    from ralphstate.storage.system.paths import LoopPaths
    from tests.helpers.hardening import hook, hook_input_for
    from tests.helpers.loops import make_loop, parser_state

    # An earlier loop here had no `startedAt` (written by hand) and was adopted...
    paths = LoopPaths(project, project / ".loop")
    make_loop(project, known=False, session=None, startedAt=None)
    registry.record(paths, parser_state(session=None, startedAt=None))
    # ...and a clone now brings another loop, also without one, to the same place.
    make_loop(project, known=False, session=None, startedAt=None, spec="CLONED spec")
    run = hook("session-start", hook_input_for(project, source="startup"))
    assert b"not started on this machine" in run.out
    assert b"CLONED" not in run.out


def test_adopting_a_loop_without_an_identity_gives_it_one(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ralphstate.core import state as st
    from tests.helpers.hardening import hook, hook_input_for
    from tests.helpers.loops import make_loop

    path = make_loop(project, known=False, session=None, startedAt=None)
    assert rs("adopt").code == 0
    assert st.parse(path.read_bytes())["startedAt"] is not None
    run = hook("session-start", hook_input_for(project, source="startup"))
    assert b"<loop-state>" in run.out


# -- every check that may run was shown first, exactly, and trusted after -------------------


def test_a_templates_checks_are_shown_escaped_and_not_trusted_until_reviewed(
    rs: Any, project: Path, tmp_path: Path
) -> None:
    pwned = project / "PWNED"
    hidden = f"touch {pwned}; true\r\x1b[2Kpytest -q"
    template = tmp_path / "template.json"
    template.write_text(
        json.dumps({"spec": "Export", "criteria": ["tests pass"], "checks": {"tests pass": hidden}})
    )
    started = rs("init", "--from", str(template))
    assert started.code == 0, started.err
    shown = f"touch {pwned}; true\\x0d\\x1b[2Kpytest -q"
    assert f"check (not trusted yet) tests pass: {shown}\n" in started.out
    assert "review it, then run `ralphstate trust`" in started.out
    assert "\x1b" not in started.out and "\r" not in started.out

    refused = rs("verify")
    assert refused.code == 1
    assert "not trusted" in refused.err
    assert not pwned.exists()
    assert "NOT trusted" in rs("status").out


def test_a_check_for_no_criterion_is_shown_and_never_armed_by_criteria_add(
    rs: Any, project: Path
) -> None:
    pwned = project / "PWNED"
    start(rs)
    edit_state(project, checks={"tests pass": "true", "ghost": f"touch {pwned}"})
    status = rs("status")
    assert f"  ghost: touch {pwned}  (no such criterion: never run)\n" in status.out
    trusted = rs("trust")
    assert trusted.code == 0, trusted.err
    assert f"  ghost: touch {pwned}  (no such criterion: not trusted, never run)\n" in trusted.out

    added = rs("criteria", "add", "ghost")
    assert added.code == 0, added.err
    assert "ghost" in added.err and "not trusted" in added.err
    refused = rs("verify")
    assert refused.code == 1
    assert not pwned.exists()
    assert "NOT trusted" in rs("status").out


# -- a cloned configuration does not choose what runs, nor what is read -----------------------


def agent_writing(tmp_path: Path, mark: Path) -> str:
    import sys

    from ralphstate.run import spawn

    script = tmp_path / "agent.py"
    script.write_text(f"from pathlib import Path\nPath({str(mark)!r}).write_text('ran')\n")
    return spawn.join_command([sys.executable, str(script)])


@pytest.mark.parametrize("where", ["loop config", "pyproject"])
def test_a_cloned_config_does_not_choose_the_agent_command_until_trusted(
    rs: Any, project: Path, tmp_path: Path, where: str
) -> None:
    start(rs)
    mark = tmp_path / "the cloned agent ran"
    command = agent_writing(tmp_path, mark).replace("\\", "\\\\")
    if where == "pyproject":
        (project / "pyproject.toml").write_text(f'[tool.ralphstate.run]\nagent = "{command}"\n')
    else:
        (project / ".loop" / "config.toml").write_text(f'[run]\nagent = "{command}"\n')

    refused = rs("run", "--max", "1")
    assert refused.code == 1
    assert "is not trusted on this machine" in refused.err
    assert not mark.exists()
    shown = rs("run", "--dry-run")
    assert "are not trusted on this machine" in shown.out
    trusted = rs("trust")
    assert "  run agent (" in trusted.out
    ran = rs("run", "--max", "1")
    assert ran.code == 3, ran.err  # ran once, the criterion still unmet
    assert mark.exists()


def test_a_changed_config_is_untrusted_again(rs: Any, project: Path, tmp_path: Path) -> None:
    start(rs)
    mark = tmp_path / "ran"
    config = project / ".loop" / "config.toml"
    config.write_text('[run]\nagent = "true"\n')
    assert rs("trust").code == 0
    command = agent_writing(tmp_path, mark).replace("\\", "\\\\")
    config.write_text(f'[run]\nagent = "{command}"\n')
    assert rs("run", "--max", "1").code == 1
    assert not mark.exists()


@pytest.mark.parametrize("target", ["/proc/self/environ", "symlink out"])
def test_context_files_a_config_names_stay_inside_the_project(
    rs: Any, project: Path, tmp_path: Path, target: str
) -> None:
    start(rs)
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-TOKEN")
    if target == "symlink out":
        (project / "notes.md").symlink_to(secret)
        target = "notes.md"
    (project / ".loop" / "config.toml").write_text(f'[run]\ncontext = ["{target}"]\n')
    for args in (("run", "--agent", "true", "--max", "1"), ("run", "--agent", "true", "--dry-run")):
        done = rs(*args)
        assert done.code == 1
        assert "is outside the project; a configuration file may only name files inside it" in (
            done.err
        )
        assert "SECRET" not in done.out + done.err


def test_fallback_agents_a_config_names_are_trusted_with_the_first(
    rs: Any, project: Path, tmp_path: Path
) -> None:
    start(rs)
    config = project / ".loop" / "config.toml"
    config.write_text('[run]\nagent = ["true", "false"]\n')
    assert rs("trust").code == 0
    # The fallback changed; the first agent did not: the whole chain is untrusted again.
    mark = tmp_path / "ran"
    command = agent_writing(tmp_path, mark).replace("\\", "\\\\")
    config.write_text(f'[run]\nagent = ["true", "{command}"]\n')
    refused = rs("run", "--max", "1")
    assert refused.code == 1
    assert "(the agent command and fallbacks) is not trusted" in refused.err
    trusted = rs("trust")
    assert "  run fallback agent (" in trusted.out


def test_a_cloned_config_does_not_choose_the_notifier_until_trusted(
    rs: Any, project: Path, tmp_path: Path
) -> None:
    start(rs)
    mark = tmp_path / "the cloned notifier ran"
    command = agent_writing(tmp_path, mark).replace("\\", "\\\\")
    (project / ".loop" / "config.toml").write_text(f'[run]\nnotify = "{command}"\n')

    refused = rs("run", "--agent", "true", "--max", "1")
    assert refused.code == 1
    assert "(the notifier) is not trusted on this machine" in refused.err
    assert not mark.exists()
    trusted = rs("trust")
    assert "  run notifier (" in trusted.out
    ran = rs("run", "--agent", "true", "--max", "1")
    assert ran.code == 3, ran.err  # ran once and paused at its --max: the notifier is told
    assert mark.exists()
