"""`ralphstate install --agent opencode`: the plugin file, written with this
installation's program, idempotent, removable, never over a file of someone else's;
`doctor` reports it. The plugin itself runs in tests/e2e/test_opencode_e2e.py."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from ralphstate.agents import opencode
from ralphstate.core.errors import RalphstateError
from ralphstate.install.agents import find_installed, install_agent
from ralphstate.install.command import HOOK_CODE
from tests.install.test_settings_lossless import save_at_the_last_moment


def test_install_writes_the_plugin_once_and_uninstall_removes_it(
    rs: Any, project: Path, home: Path
) -> None:
    path = project / ".opencode" / "plugin" / "ralphstate.ts"
    first = rs("install", "--agent", "opencode")
    assert first.code == 0, first.err
    program = str(Path(sys.executable).absolute())
    command = f'"{program}" -I -c "{HOOK_CODE}" stop --agent opencode'
    assert first.out.splitlines() == [f"added session.idle plugin: {command}", f"updated: {path}"]
    text = path.read_text(encoding="utf-8")
    assert text.startswith(opencode.HEADER)
    assert f"const PROGRAM = {program!r}".replace("'", '"') in text
    assert f'const ARGS = ["-I", "-c", "{HOOK_CODE}"]' in text
    assert 'spawn(PROGRAM, [...ARGS, sub, "--agent", "opencode"]' in text
    assert "client.session.promptAsync" in text
    written = path.read_bytes()
    again = rs("install", "--agent", "opencode")
    assert again.out.splitlines()[-1] == f"unchanged: {path}"
    assert path.read_bytes() == written
    removed = rs("install", "--agent", "opencode", "--uninstall")
    assert removed.code == 0, removed.err
    assert not path.exists()
    assert rs("install", "--agent", "opencode", "--uninstall").out.splitlines()[0] == (
        "no ralphstate plugin to remove"
    )


def test_a_plugin_of_someone_elses_is_left_alone(rs: Any, project: Path, home: Path) -> None:
    path = project / ".opencode" / "plugin" / "ralphstate.ts"
    path.parent.mkdir(parents=True)
    path.write_text("export const Mine = async () => ({})\n", encoding="utf-8")
    for args in ([], ["--uninstall"]):
        result = rs("install", "--agent", "opencode", *args)
        assert result.code == 1
        assert result.err == (
            f"ralphstate: {path} was not written by ralphstate (its first line is not"
            f" {opencode.HEADER!r}); nothing was changed.\n"
        )
        assert path.read_text(encoding="utf-8") == "export const Mine = async () => ({})\n"


def test_an_older_plugin_is_updated_in_place(rs: Any, project: Path, home: Path) -> None:
    path = project / ".opencode" / "plugin" / "ralphstate.ts"
    path.parent.mkdir(parents=True)
    path.write_text(opencode.plugin_text("/old/python", ["-I", "-c", HOOK_CODE]))
    result = rs("install", "--agent", "opencode")
    assert result.out.splitlines()[0].startswith("updated session.idle plugin: ")
    assert "/old/python" not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("xdg", [False, True])
def test_user_scope_is_opencodes_config_directory(
    rs: Any, project: Path, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, xdg: bool
) -> None:
    config = tmp_path / "xdg" if xdg else home / ".config"
    if xdg:
        monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    assert rs("install", "--agent", "opencode", "--scope", "user").code == 0
    path = config / "opencode" / "plugin" / "ralphstate.ts"
    assert path.is_file()
    found = [(h.agent, h.scope, h.path, h.event) for h in find_installed(project, home)]
    assert found == [("opencode", "user", path, "session.idle")]
    assert rs("install", "--agent", "opencode", "--scope", "local").code == 1


def test_doctor_checks_the_program_the_plugin_runs(rs: Any, project: Path, home: Path) -> None:
    path = project / ".opencode" / "plugin" / "ralphstate.ts"
    assert rs("install", "--agent", "opencode").code == 0
    program = str(Path(sys.executable).absolute())
    lines = rs("doctor").out.splitlines()
    assert f"ok   opencode session.idle hook in {path} runs {program}" in lines
    path.write_text(opencode.plugin_text("/nowhere/python", ["-I", "-c", HOOK_CODE]))
    result = rs("doctor")
    assert result.code == 1
    assert (
        f"fail opencode session.idle hook in {path} runs /nowhere/python, which is missing or"
        " not executable; run `ralphstate install --agent opencode` again"
    ) in result.out.splitlines()


def test_a_save_at_the_last_moment_is_kept_by_install_and_uninstall(
    project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plugin file is ralphstate's, but a person may edit it: a save landing after
    install read the file is neither written over nor removed (the write of
    tests/install/test_settings_lossless.py)."""
    path = project / ".opencode" / "plugin" / "ralphstate.ts"
    path.parent.mkdir(parents=True)
    path.write_text(opencode.HEADER + "\n// an older plugin\n", encoding="utf-8")
    saved = opencode.HEADER + "\n// the person's edit\n"
    with monkeypatch.context() as patched:
        save_at_the_last_moment(patched, path, lambda: path.write_text(saved, encoding="utf-8"))
        with pytest.raises(RalphstateError, match="changed while ralphstate was updating it"):
            install_agent("opencode", "project", project, home=home)
    assert path.read_text(encoding="utf-8") == saved
    with monkeypatch.context() as patched:
        save_at_the_last_moment(patched, path, lambda: path.write_text(saved + "//\n"))
        with pytest.raises(RalphstateError, match="changed while ralphstate was updating it"):
            install_agent("opencode", "project", project, uninstall=True, home=home)
    assert path.read_text(encoding="utf-8") == saved + "//\n"
    assert [p.name for p in path.parent.iterdir()] == ["ralphstate.ts"]
    assert install_agent("opencode", "project", project, uninstall=True, home=home).changed is True
    assert not path.exists()
