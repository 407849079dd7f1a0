from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import Result


def lines(result: Result) -> list[str]:
    return result.out.splitlines()


def shown(path: str) -> str:
    """A path as a hook command holds it (forward slashes on Windows)."""
    return path.replace("\\", "/") if os.name == "nt" else path


PYTHON = shown(str(Path(sys.executable).absolute()))


CODE = "from ralphstate.hooks.entry import main; main()"


def settings_with(
    project: Path, command: str, event: str = "Stop", name: str = "settings.local.json"
) -> Path:
    settings = project / ".claude" / name
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(
        json.dumps({"hooks": {event: [{"hooks": [{"type": "command", "command": command}]}]}})
    )
    return settings


def test_doctor_without_hooks_fails_and_says_what_to_run(
    rs: Any, project: Path, home: Path
) -> None:
    result = rs("doctor")
    assert result.code == 1
    local = project / ".claude" / "settings.local.json"
    assert (
        f"fail no Stop hook installed; run `ralphstate install`, which writes it to {local}"
        in lines(result)
    )


def test_doctor_after_install_is_happy(rs: Any, project: Path, home: Path) -> None:
    assert rs("install").code == 0
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    result = rs("doctor")
    assert result.code == 0, result.out
    out = result.out
    for event in ("Stop", "SessionStart", "PreCompact"):
        assert (
            f"ok   {event} hook in {project / '.claude' / 'settings.local.json'} runs {PYTHON}\n"
            in out
        )
    assert "ok   .loop/state.json is valid: in_progress, 0/1 criterion, iteration 0/20" in out
    assert "the loop has no owner yet" in out


def test_doctor_flags_a_hook_whose_program_is_gone(rs: Any, project: Path, home: Path) -> None:
    settings_with(project, '"/nowhere/bin/ralphstate" hook stop')
    result = rs("doctor")
    assert result.code == 1
    assert any(
        line.startswith("fail Stop hook in") and "/nowhere/bin/ralphstate" in line
        for line in lines(result)
    )


def test_doctor_warns_about_the_block_cap_and_foreign_loops(
    rs: Any, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rs("install")
    rs("init", "Build it", "-c", "tests pass", "--stall-limit", "9")
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "mine-0000")
    state = json.loads((project / ".loop" / "state.json").read_text())
    state["sessionId"] = "theirs-000"
    (project / ".loop" / "state.json").write_text(json.dumps(state))
    result = rs("doctor")
    assert "stallLimit 9 is not below Claude Code's cap of 8" in result.out
    assert "the loop belongs to session theirs-0…, not this one (mine-000…)" in result.out


def test_doctor_reports_a_corrupt_state(rs: Any, project: Path, home: Path) -> None:
    rs("install")
    (project / ".loop").mkdir()
    (project / ".loop" / "state.json").write_text("{nope")
    result = rs("doctor")
    assert result.code == 1
    assert any(
        line.startswith("fail .loop/state.json is not valid JSON (line 1, column 2)")
        for line in lines(result)
    )


def test_a_broken_hook_in_the_shared_file_is_moved_to_the_local_one(
    rs: Any, project: Path, home: Path
) -> None:
    """A project-scope hook that names a Python this machine lacks (it came with a
    clone): `install` again would write the local file, so doctor says to do that and
    to take the shared file's out."""
    settings = settings_with(
        project,
        f'"/home/alice/.venv/bin/python3" -I -c "{CODE}" stop',
        name="settings.json",
    )
    result = rs("doctor")
    assert result.code == 1
    assert (
        f"fail Stop hook in {settings} runs /home/alice/.venv/bin/python3, which is missing or"
        " not executable; run `ralphstate install` (this machine's hooks, in"
        " .claude/settings.local.json) and `ralphstate install --scope project --uninstall`"
    ) in lines(result)


def test_doctor_flags_a_hook_whose_script_is_gone(rs: Any, project: Path, home: Path) -> None:
    gone = "/nowhere/lib/ralphstate/hooks/__main__.py"
    settings = settings_with(project, f'"{PYTHON}" "{gone}" stop')
    result = rs("doctor")
    assert result.code == 1
    assert (
        f"fail Stop hook in {settings} runs {gone}, which is missing or not executable;"
        " run `ralphstate install` again"
    ) in lines(result)


@pytest.mark.parametrize(
    "form",
    [
        f'"{{python}}" -I -c "{CODE}" stop',
        f"& '{{python}}' -I -c '{CODE}' stop --agent copilot",
        '"{python}" "{script}" stop',
        "& '{python}' '{script}' stop",
        '"{python}" "{script}" stop || exit 1',
        '"{python}" -m ralphstate hook stop',
    ],
)
def test_doctor_accepts_every_form_whose_program_is_there(
    rs: Any, project: Path, home: Path, tmp_path: Path, form: str
) -> None:
    script = tmp_path / "site" / "ralphstate" / "hooks" / "__main__.py"
    script.parent.mkdir(parents=True)
    script.write_text("")
    settings = settings_with(project, form.format(python=PYTHON, script=shown(str(script))))
    result = rs("doctor")
    assert f"ok   Stop hook in {settings} runs {PYTHON}" in lines(result), result.out


def test_doctor_fails_a_hook_whose_python_cannot_import_the_hook(
    rs: Any, project: Path, home: Path, bare_python: Path
) -> None:
    """ralphstate uninstalled from the interpreter the hook names (or installed with
    --user, which isolated mode does not see): the program is there, the hook is not."""
    python = shown(str(bare_python))
    settings = settings_with(project, f'"{python}" -I -c "{CODE}" stop')
    result = rs("doctor")
    assert result.code == 1
    assert (
        f"fail Stop hook in {settings} runs {python}, which cannot import ralphstate's hook in"
        " isolated mode (ModuleNotFoundError: No module named 'ralphstate'); run"
        " `ralphstate install` again"
    ) in lines(result), result.out


@pytest.mark.skipif(os.name == "nt", reason="a POSIX program")
def test_doctor_never_starts_a_program_in_the_project(
    rs: Any, project: Path, home: Path, tmp_path: Path
) -> None:
    """A hook file in the project may have come with a clone, and so may the program it
    names: `doctor` checks that it is there, and does not run it to see it import the
    hook. The same program outside the project is run: the check can fail."""
    marker = tmp_path / "ran"
    program = f"#!/bin/sh\necho ran > '{marker}'\n"
    planted = project / "bin" / "python"
    planted.parent.mkdir()
    planted.write_text(program)
    planted.chmod(0o755)
    for command in (f'./bin/python -I -c "{CODE}" stop', f'"{planted}" -I -c "{CODE}" stop'):
        settings = settings_with(project, command)
        result = rs("doctor")
        target = command.split(" -I")[0].strip('"')
        assert (
            f"ok   Stop hook in {settings} runs {target} (a program in the project: not"
            " started to check it)"
        ) in lines(result), result.out
        assert not marker.exists()
    outside = tmp_path / "elsewhere" / "python"
    outside.parent.mkdir()
    outside.write_text(program)
    outside.chmod(0o755)
    settings = settings_with(project, f'"{outside}" -I -c "{CODE}" stop')
    result = rs("doctor")
    assert marker.exists()  # started: it is a Python by name, outside the project
    assert result.code == 1  # and exit 0 without naming ralphstate proves nothing
    assert (
        f"fail Stop hook in {settings} runs {outside}, which cannot import ralphstate's hook"
        " in isolated mode (it did not say where it found ralphstate); run `ralphstate"
        " install` again"
    ) in lines(result), result.out


@pytest.mark.skipif(os.name == "nt", reason="a POSIX shell")
def test_doctor_never_starts_a_program_that_is_not_a_python(
    rs: Any, project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cloned hook file naming a shell: `sh -I -c "import ..."` would run a program
    called `import` from the PATH, which the project may provide."""
    marker = tmp_path / "ran"
    planted = project / "bin" / "import"
    planted.parent.mkdir()
    planted.write_text(f"#!/bin/sh\necho ran > '{marker}'\n")
    planted.chmod(0o755)
    monkeypatch.setenv("PATH", f"{project / 'bin'}{os.pathsep}{os.environ['PATH']}")
    settings = settings_with(project, f'"/bin/sh" -I -c "{CODE}" stop')
    result = rs("doctor")
    assert (
        f"ok   Stop hook in {settings} runs /bin/sh (not a Python: not started to check it)"
    ) in lines(result), result.out
    assert not marker.exists()
