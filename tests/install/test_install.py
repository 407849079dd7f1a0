"""`ralphstate install` (merging hooks into Claude Code's settings) and the plugin
launcher `hooks/launch.py`, run as a real process."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

import ralphstate
from ralphstate.agents import claude as inst
from ralphstate.agents.contract import TIMEOUTS
from ralphstate.core.errors import RalphstateError
from ralphstate.install import command as command_module
from ralphstate.install import settings
from ralphstate.install.agents import AgentHook, hook_command, hooks_path, install_agent, read_file
from ralphstate.install.agents import find_installed as find_any
from ralphstate.install.command import (
    HOOK_CODE,
    SUBCOMMANDS,
    command_script,
    command_target,
    command_words,
    own_subcommand,
    powershell_command,
    runs_hook_code,
)
from ralphstate.install.settings import InstallResult
from ralphstate.storage.system import fsio
from tests.helpers import REPO, run_process
from tests.helpers.plugin import launcher_own

LAUNCH = REPO / "hooks" / "launch.py"
POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell and permissions")


def install(scope: str, root: Path, **options: Any) -> InstallResult:
    """`install` for Claude Code, the default agent."""
    return install_agent("claude", scope, root, **options)


def settings_path(scope: str, root: Path, home: Path | None = None) -> Path:
    return hooks_path("claude", scope, root, home)


def find_installed(root: Path, home: Path | None = None) -> list[AgentHook]:
    return find_any(root, home, "claude")


def InstalledHook(scope: str, path: Path, event: str, command: str) -> AgentHook:
    return AgentHook("claude", scope, path, event, command)


STOP = hook_command("Stop")
START = hook_command("SessionStart")
COMPACT = hook_command("PreCompact")
FAIL = hook_command("StopFailure")
PRE = hook_command("PreToolUse")
END = hook_command("SessionEnd")
PERM = hook_command("PermissionRequest")
CONFIG = hook_command("ConfigChange")


def ours(command: str) -> dict[str, Any]:
    timeout = {STOP: TIMEOUTS["stop"], END: TIMEOUTS["session-end"]}.get(command, 30)
    return {"type": "command", "command": command, "timeout": timeout}


def dump(data: object) -> str:
    return json.dumps(data, indent=2) + "\n"


def write(path: Path, data: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = dump(data).encode()
    path.write_bytes(raw)
    return raw


# A settings file a real user might have: other settings, other hooks in our events
# (their own groups, and a SessionStart group with a specific matcher), other events.
USER_SETTINGS: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ralphstate:*)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}
        ],
    },
    "env": {"FOO": "1"},
}

INSTALLED: dict[str, Any] = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ralphstate:*)"]},
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]},
            {"matcher": "Bash|Edit|Write|MultiEdit", "hooks": [ours(PRE)]},
        ],
        "Stop": [
            {"hooks": [{"type": "command", "command": "notify-send done"}]},
            {"hooks": [ours(STOP)]},
        ],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]},
            {"matcher": "", "hooks": [ours(START)]},
        ],
        "PreCompact": [{"matcher": "", "hooks": [ours(COMPACT)]}],
        "StopFailure": [{"hooks": [ours(FAIL)]}],
        "SessionEnd": [{"hooks": [ours(END)]}],
        "PermissionRequest": [{"matcher": "Bash", "hooks": [ours(PERM)]}],
        "ConfigChange": [{"hooks": [ours(CONFIG)]}],
    },
    "env": {"FOO": "1"},
}


# ---------------------------------------------------------------- settings_path


def test_settings_path_for_each_scope(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    assert settings_path("project", root, home) == root / ".claude" / "settings.json"
    assert settings_path("local", root, home) == root / ".claude" / "settings.local.json"
    assert settings_path("user", root, home) == home / ".claude" / "settings.json"


def test_settings_path_user_defaults_to_the_home_directory(tmp_path: Path) -> None:
    assert settings_path("user", tmp_path) == Path.home() / ".claude" / "settings.json"


def test_settings_path_refuses_an_unknown_scope(tmp_path: Path) -> None:
    with pytest.raises(RalphstateError) as err:
        settings_path("global", tmp_path)
    assert str(err.value) == "Unknown scope 'global'; expected project, local or user."


# ---------------------------------------------------------------- hook_command


def expected_path(path: Path | str) -> str:
    return str(path).replace("\\", "/") if os.name == "nt" else str(path)


def fake_interpreter(directory: Path) -> Path:
    directory.mkdir(parents=True)
    python = directory / ("python.exe" if os.name == "nt" else "python")
    python.write_bytes(b"")
    return python


class ImportCheck:
    """Stands in for `install`'s check that an interpreter imports the hook in isolated
    mode: answers `ok`, and keeps the interpreters asked."""

    def __init__(self) -> None:
        self.ok = True
        self.asked: list[str] = []

    def __call__(self, python: str) -> bool:
        self.asked.append(python)
        return self.ok


@pytest.fixture
def imports(monkeypatch: pytest.MonkeyPatch) -> ImportCheck:
    check = ImportCheck()
    monkeypatch.setattr(command_module, "imports_isolated", check)
    return check


def test_hook_command_has_this_interpreter_import_the_hook_in_isolated_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: ImportCheck
) -> None:
    python = fake_interpreter(tmp_path / "my venv" / "bin")
    monkeypatch.setattr(sys, "executable", str(python))
    exe = expected_path(python)
    code = "from ralphstate.hooks.entry import main; main()"
    assert code == HOOK_CODE
    assert hook_command("Stop") == f'"{exe}" -I -c "{code}" stop'
    assert hook_command("SessionStart") == f'"{exe}" -I -c "{code}" session-start'
    assert hook_command("PreCompact") == f'"{exe}" -I -c "{code}" pre-compact'
    assert shlex.split(hook_command("Stop")) == [exe, "-I", "-c", code, "stop"]
    assert imports.asked and set(imports.asked) == {str(python)}
    # every hook: the task list's (`install --tasks`) and the others
    assert {*inst.EVENTS.values(), *inst.TASK_EVENTS.values()} == set(SUBCOMMANDS)
    for event, sub in {**inst.EVENTS, **inst.TASK_EVENTS}.items():
        assert own_subcommand(hook_command(event)) == sub
        assert runs_hook_code(hook_command(event))


def test_hook_command_names_the_interpreter_as_called_not_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: ImportCheck
) -> None:
    """A venv's python is a symlink to the base interpreter: resolved, it would run
    without the venv's packages."""
    base = fake_interpreter(tmp_path / "base")
    venv_bin = tmp_path / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    link = venv_bin / "python"
    try:
        link.symlink_to(base)
    except OSError:
        pytest.skip("no symlinks here")
    monkeypatch.setattr(sys, "executable", str(link))
    assert command_target(hook_command("Stop")) == expected_path(link)
    assert imports.asked[-1] == str(link)


def test_hook_command_for_powershell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: ImportCheck
) -> None:
    python = fake_interpreter(tmp_path / "it's here")
    monkeypatch.setattr(sys, "executable", str(python))
    exe = expected_path(python).replace("'", "''")
    command = powershell_command("stop", "gemini")
    assert command == f"& '{exe}' -I -c '{HOOK_CODE}' stop --agent gemini"
    assert command_target(command) == expected_path(python)
    assert command_words(command, limit=7) == [
        expected_path(python),
        "-I",
        "-c",
        HOOK_CODE,
        "stop",
        "--agent",
        "gemini",
    ]
    assert own_subcommand(command) == "stop"
    assert runs_hook_code(command)


def test_hook_command_without_an_interpreter_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys, "executable", "")
    with pytest.raises(RalphstateError) as err:
        hook_command("Stop")
    assert str(err.value) == (
        "Cannot tell which Python runs ralphstate; run `ralphstate install` from an"
        " installed ralphstate command."
    )


def scripts_dirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Path]:
    """sysconfig's scripts directories, made empty directories of `tmp_path`."""
    dirs = {
        scheme: tmp_path / f"{scheme}-scripts"
        for scheme in (sysconfig.get_default_scheme(), sysconfig.get_preferred_scheme("user"))
    }
    for path in dirs.values():
        path.mkdir(exist_ok=True)

    def get_path(name: str, scheme: str = sysconfig.get_default_scheme()) -> str:
        assert name == "scripts"
        return str(dirs[scheme])

    monkeypatch.setattr(sysconfig, "get_path", get_path)
    return dirs


CONSOLE = "ralphstate.exe" if os.name == "nt" else "ralphstate"


@pytest.mark.parametrize("where", ["beside the interpreter", "default", "user"])
def test_a_python_that_cannot_import_the_hook_isolated_gets_the_console_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: ImportCheck, where: str
) -> None:
    """`pip install --user`: `-I` hides the user site-packages, so the hook could not be
    imported; the console script, as older versions wrote, runs it instead."""
    imports.ok = False
    python = fake_interpreter(tmp_path / "py" / "bin")
    monkeypatch.setattr(sys, "executable", str(python))
    dirs = scripts_dirs(monkeypatch, tmp_path)
    directory = {
        "beside the interpreter": python.parent,
        "default": dirs[sysconfig.get_default_scheme()],
        "user": dirs[sysconfig.get_preferred_scheme("user")],
    }[where]
    script = directory / CONSOLE
    script.write_text("")
    shown = expected_path(script)
    assert hook_command("Stop", agent="codex") == f'"{shown}" hook stop --agent codex'
    assert powershell_command("pre-compact", "copilot") == (
        f"& '{shown}' hook pre-compact --agent copilot"
    )
    for event, sub in inst.EVENTS.items():
        assert own_subcommand(hook_command(event)) == sub
        assert not runs_hook_code(hook_command(event))


def test_no_isolated_import_and_no_console_script_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: ImportCheck
) -> None:
    imports.ok = False
    python = fake_interpreter(tmp_path / "py" / "bin")
    monkeypatch.setattr(sys, "executable", str(python))
    scripts_dirs(monkeypatch, tmp_path)
    with pytest.raises(RalphstateError) as err:
        hook_command("Stop")
    assert str(err.value) == (
        f"{python} cannot import ralphstate in isolated mode (-I) and there is no"
        " `ralphstate` command beside it; install ralphstate into a virtual environment"
        " or with pipx and run `ralphstate install` from there."
    )


def test_the_isolated_import_is_checked_once_for_real(
    monkeypatch: pytest.MonkeyPatch, bare_python: Path
) -> None:
    asked: list[str] = []
    real = command_module.isolated_import

    def counted(
        python: str, timeout: float = command_module.CHECK_TIMEOUT
    ) -> tuple[str | None, str]:
        asked.append(python)
        return real(python, timeout)

    monkeypatch.setattr(command_module, "isolated_import", counted)
    command_module.imports_isolated.cache_clear()
    try:
        for _ in range(2):
            for event in inst.EVENTS:
                assert runs_hook_code(hook_command(event))
            assert runs_hook_code(powershell_command("stop", "copilot"))
        assert asked == [str(Path(sys.executable).absolute())]
        assert command_module.imports_isolated(str(bare_python)) is False
    finally:
        command_module.imports_isolated.cache_clear()
    assert real(str(bare_python)) == ("ModuleNotFoundError: No module named 'ralphstate'", "")
    assert real(str(bare_python.parent / "gone"))[0] is not None
    problem, found = real(str(Path(sys.executable).absolute()))
    assert problem is None
    assert Path(found).resolve() == Path(ralphstate.__file__).resolve()


def test_an_isolated_python_that_finds_another_ralphstate_gets_the_console_script(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`pip install --user` over an older copy in the system's site-packages: isolated
    mode would import the old copy, so the hook runs this one's console script."""
    older = tmp_path / "system" / "ralphstate" / "__init__.py"
    monkeypatch.setattr(command_module, "isolated_import", lambda python: (None, str(older)))
    command_module.imports_isolated.cache_clear()
    try:
        command = hook_command("Stop")
    finally:
        command_module.imports_isolated.cache_clear()
    assert not runs_hook_code(command)
    assert command.endswith(" hook stop")
    assert own_subcommand(command) == "stop"


def test_a_program_that_says_nothing_of_ralphstate_does_not_import_it(tmp_path: Path) -> None:
    """Exit 0 is not enough: the check must name the ralphstate package it imported."""
    quiet = tmp_path / "python"
    quiet.write_text("#!/bin/sh\nexit 0\n")
    quiet.chmod(0o755)
    if os.name == "nt":
        pytest.skip("a POSIX program")
    assert command_module.isolated_import(str(quiet)) == (
        "it did not say where it found ralphstate",
        "",
    )


def test_hook_command_with_an_agent() -> None:
    assert hook_command("Stop", agent="codex") == STOP + " --agent codex"
    with pytest.raises(ValueError):
        hook_command("Stop", agent="codex; rm -rf /")


def test_hook_command_refuses_an_unknown_event() -> None:
    with pytest.raises(ValueError):
        hook_command("UserPromptSubmit")


AWKWARD = "a dir $HOME `x` \"q\" \\b 's'"


def argv_printer(directory: Path) -> Path:
    """A program that prints the arguments it was given, at `directory`/python."""
    directory.mkdir(parents=True)
    python = directory / "python"
    python.write_text(f"#!{sys.executable}\nimport sys\nprint(sys.argv)\n")
    python.chmod(0o755)
    return python


@POSIX_ONLY
def test_hook_command_survives_a_real_shell_with_awkward_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: ImportCheck
) -> None:
    """The command runs through sh exactly as Claude Code runs it, from another directory:
    the interpreter, its options and the code reach the program as themselves."""
    python = argv_printer(tmp_path / AWKWARD / "bin")
    monkeypatch.setattr(sys, "executable", str(python))
    command = hook_command("Stop", agent="codex")
    assert command_target(command) == str(python)
    assert own_subcommand(command) == "stop"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        ["/bin/sh", "-c", command], cwd=elsewhere, capture_output=True, text=True, check=True
    )
    expected = [str(python), "-I", "-c", HOOK_CODE, "stop", "--agent", "codex"]
    assert done.stdout == repr(expected) + "\n"


@POSIX_ONLY
def test_the_powershell_command_survives_awkward_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: ImportCheck
) -> None:
    """The same for PowerShell: read back word by word here, and run by a real pwsh when
    this machine has one."""
    python = argv_printer(tmp_path / AWKWARD / "bin")
    monkeypatch.setattr(sys, "executable", str(python))
    command = powershell_command("stop", "copilot")
    expected = [str(python), "-I", "-c", HOOK_CODE, "stop", "--agent", "copilot"]
    assert command_words(command, limit=8) == expected
    pwsh = shutil.which("pwsh") or shutil.which("powershell")
    if pwsh is None:
        pytest.skip("no PowerShell here to run the command")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run(
        [pwsh, "-NoProfile", "-NonInteractive", "-Command", command],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == repr(expected) + "\n"


@POSIX_ONLY
def test_a_hook_left_behind_by_an_uninstall_never_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: ImportCheck, bare_python: Path
) -> None:
    """ralphstate uninstalled, its entry left in the settings: the interpreter cannot
    import the hook, exit 1, an error the agents show the person without blocking (2
    would be "block"); an interpreter that is gone too is the shell's 127."""
    monkeypatch.setattr(sys, "executable", str(bare_python))
    command = hook_command("Stop")
    project = tmp_path / "project"
    project.mkdir()
    env = env_for(tmp_path, project, [no_dir(tmp_path)])
    done = run(["/bin/sh", "-c", command], hook_input(project), env, project)
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr.decode().splitlines()[-1] == (
        "ModuleNotFoundError: No module named 'ralphstate'"
    )
    monkeypatch.setattr(sys, "executable", str(tmp_path / "gone" / "python"))
    gone = run(["/bin/sh", "-c", hook_command("Stop")], hook_input(project), env, project)
    assert gone.returncode == 127


# ---------------------------------------------------------------- command_target


@pytest.mark.parametrize(
    ("command", "target"),
    [
        ('"/opt/my venv/bin/ralphstate" hook stop', "/opt/my venv/bin/ralphstate"),
        ('"/usr/bin/python3" -m ralphstate hook stop', "/usr/bin/python3"),
        (
            '"C:/Program Files/py/Scripts/ralphstate.exe" hook stop',
            "C:/Program Files/py/Scripts/ralphstate.exe",
        ),
        ('"/a \\"b\\" \\$c" hook stop', '/a "b" $c'),
        ("ralphstate hook stop", "ralphstate"),
        ("  python3 -m ralphstate hook stop", "python3"),
        ("'/opt/x y/ralphstate' hook stop", "/opt/x y/ralphstate"),
        ('"/unterminated hook stop', None),
        ("", None),
        ("   ", None),
        ('"" hook stop', None),
        (f'"/v/bin/python" -I -c "{HOOK_CODE}" stop', "/v/bin/python"),
        (
            f"& 'C:/Program Files/py/python.exe' -I -c '{HOOK_CODE}' stop",
            "C:/Program Files/py/python.exe",
        ),
        (f"& 'C:/it''s/python.exe' -I -c '{HOOK_CODE}' stop", "C:/it's/python.exe"),
        ('"/v/bin/python" "/v/site/ralphstate/hooks/__main__.py" stop', "/v/bin/python"),
        ("& 'C:/unterminated/python.exe stop", None),
    ],
)
def test_command_target(command: str, target: str | None) -> None:
    assert command_target(command) == target


@pytest.mark.parametrize(
    ("command", "script"),
    [
        (
            '"/v/bin/python" "/v/my \\"site\\"/ralphstate/hooks/__main__.py" stop',
            '/v/my "site"/ralphstate/hooks/__main__.py',
        ),
        (
            "& 'C:/py/python.exe' 'C:/py/Lib/site-packages/RalphState/Hooks/__main__.py' stop",
            "C:/py/Lib/site-packages/RalphState/Hooks/__main__.py",
        ),
        (
            '"C:\\py\\python.exe" "C:\\py\\ralphstate\\hooks\\__main__.py" stop',
            "C:\\py\\ralphstate\\hooks\\__main__.py",
        ),
        ("python3 /v/ralphstate/hooks/__main__.py stop", "/v/ralphstate/hooks/__main__.py"),
        ('"/v/bin/ralphstate" hook stop', None),
        ('"/v/bin/python" -m ralphstate hook stop', None),
        (f'"/v/bin/python" -I -c "{HOOK_CODE}" stop', None),
        ('"/v/bin/python" "/v/other/hooks/__main__.py" stop', None),
        ('"/v/bin/python" "/v/ralphstate/hooks/__main__.py stop', None),
        ('"/v/bin/python"', None),
    ],
)
def test_command_script_of_the_development_builds_form(command: str, script: str | None) -> None:
    assert command_script(command) == script


def test_command_target_reads_back_every_generated_command() -> None:
    for command in (STOP, START, COMPACT):
        words = shlex.split(command)
        assert command_target(command) == words[0] == expected_path(Path(sys.executable).absolute())
        assert words[1:4] == ["-I", "-c", HOOK_CODE]
        assert command_script(command) is None
        assert runs_hook_code(command)


# ---------------------------------------------------------------- own commands

# This version's form, with another interpreter in front (with and without -I).
CURRENT_FORMS = [
    f'"/other venv/bin/python" -I -c "{HOOK_CODE}" {{sub}}',
    f"& 'C:/Py/python.exe' -I -c '{HOOK_CODE}' {{sub}}",
    f'"C:\\Py\\python.exe" -c "{HOOK_CODE}" {{sub}}',
]
# Every form an older version (or a development build) wrote, any interpreter or path
# in front: the console script, `-m ralphstate hook`, and the hook script by its path,
# with the tail that made a failure exit 1 and without.
OLD_FORMS = [
    '"/old venv/bin/ralphstate" hook {sub}',
    "ralphstate hook {sub}",
    "C:/venv/Scripts/RalphState.EXE hook {sub}",
    "& 'C:/venv/Scripts/ralphstate.exe' hook {sub}",
    "python3 -m ralphstate hook {sub}",
    '"C:\\Py\\python.exe" -m ralphstate hook {sub}',
    '"/old/bin/python" "/old/lib/python3.11/site-packages/ralphstate/hooks/__main__.py" {sub}',
    '"/old/bin/python" "/old/site-packages/ralphstate/hooks/__main__.py" {sub} || exit 1',
    "& 'C:/Py/python.exe' 'C:/Py/Lib/site-packages/ralphstate/hooks/__main__.py' {sub}",
    (
        "& 'C:/Py/python.exe' 'C:/Py/Lib/site-packages/ralphstate/hooks/__main__.py' {sub}"
        "; if ($LASTEXITCODE -ne 0) {{ exit 1 }}"
    ),
    '"C:\\Py\\python.exe" "C:\\Py\\Lib\\ralphstate\\hooks\\__main__.py" {sub}',
]
NOT_OURS = [
    "myralphstate hook stop",
    "ralphstate-notify hook stop",
    "echo ralphstate",
    "ralphstate hook stopper",
    "ralphstate status",
    '"/x/notralphstate/hooks/__main__.py" stop',
    '"/x/ralphstate/hooks/__main__.py" stopper',
    '"/x/ralphstate/hooks/main.py" stop',
    '"/x/ralphstate/hooks/__main__.py" hook stop',
    "python3 -m ralphstate.hooksx stop",
    "python3 -m ralphstate.hooks.entry stop",
    "python3 -m ralphstate.hooks stop",  # never written by any version
    f'python3 -I -c "{HOOK_CODE}" stopper',
    'python3 -I -c "from ralphstate.hooks.entry import run_hook" stop',
    'python3 -I -c "import ralphstate" stop',
    'python3 -I -c "from ralphstatex.hooks.entry import main; main()" stop',
]


@pytest.mark.parametrize("form", CURRENT_FORMS + OLD_FORMS)
@pytest.mark.parametrize("sub", list({**inst.EVENTS, **inst.TASK_EVENTS}.values()))
def test_every_form_of_our_command_is_recognised_here_and_by_the_launcher(
    form: str, sub: str
) -> None:
    command = form.format(sub=f"{sub} --agent codex")
    assert own_subcommand(command) == sub
    match = launcher_own().search(command)
    assert match is not None and sub in match.groups()


def test_the_commands_this_version_writes_are_recognised_by_the_launcher() -> None:
    for event, sub in {**inst.EVENTS, **inst.TASK_EVENTS}.items():
        for command in (hook_command(event), powershell_command(sub, "copilot")):
            match = launcher_own().search(command)
            assert match is not None and sub in match.groups()


@pytest.mark.parametrize("command", NOT_OURS)
def test_other_commands_are_not_ours_here_nor_for_the_launcher(command: str) -> None:
    assert own_subcommand(command) is None
    assert launcher_own().search(command) is None


# ---------------------------------------------------------------- install / uninstall


def test_install_into_a_missing_file_creates_claude_dir(tmp_path: Path) -> None:
    result = install("project", tmp_path)
    path = tmp_path / ".claude" / "settings.json"
    assert result.path == path
    assert result.changed is True
    assert result.actions == [
        f"added Stop hook: {STOP}",
        f"added SessionStart hook: {START}",
        f"added PreCompact hook: {COMPACT}",
        f"added StopFailure hook: {FAIL}",
        f"added PreToolUse hook: {PRE}",
        f"added SessionEnd hook: {END}",
        f"added PermissionRequest hook: {PERM}",
        f"added ConfigChange hook: {CONFIG}",
    ]
    assert path.read_text(encoding="utf-8") == dump(
        {
            "hooks": {
                "Stop": [{"hooks": [ours(STOP)]}],
                "SessionStart": [{"matcher": "", "hooks": [ours(START)]}],
                "PreCompact": [{"matcher": "", "hooks": [ours(COMPACT)]}],
                "StopFailure": [{"hooks": [ours(FAIL)]}],
                "PreToolUse": [{"matcher": "Bash|Edit|Write|MultiEdit", "hooks": [ours(PRE)]}],
                "SessionEnd": [{"hooks": [ours(END)]}],
                "PermissionRequest": [{"matcher": "Bash", "hooks": [ours(PERM)]}],
                "ConfigChange": [{"hooks": [ours(CONFIG)]}],
            }
        }
    )


def test_install_keeps_other_settings_and_hooks_and_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.local.json"
    write(path, USER_SETTINGS)
    first = install("local", tmp_path)
    assert first.changed is True
    written = path.read_bytes()
    assert written.decode() == dump(INSTALLED)  # exact content and key order

    second = install("local", tmp_path)
    assert second.changed is False
    assert second.actions == [
        f"Stop hook already installed: {STOP}",
        f"SessionStart hook already installed: {START}",
        f"PreCompact hook already installed: {COMPACT}",
        f"StopFailure hook already installed: {FAIL}",
        f"PreToolUse hook already installed: {PRE}",
        f"SessionEnd hook already installed: {END}",
        f"PermissionRequest hook already installed: {PERM}",
        f"ConfigChange hook already installed: {CONFIG}",
    ]
    assert path.read_bytes() == written


def test_uninstall_removes_only_ours_and_restores_the_file(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    original = write(path, USER_SETTINGS)
    install("project", tmp_path)
    result = install("project", tmp_path, uninstall=True)
    assert result.changed is True
    assert result.actions == [
        f"removed Stop hook: {STOP}",
        f"removed SessionStart hook: {START}",
        f"removed PreCompact hook: {COMPACT}",
        f"removed StopFailure hook: {FAIL}",
        f"removed PreToolUse hook: {PRE}",
        f"removed SessionEnd hook: {END}",
        f"removed PermissionRequest hook: {PERM}",
        f"removed ConfigChange hook: {CONFIG}",
    ]
    assert path.read_bytes() == original

    again = install("project", tmp_path, uninstall=True)
    assert again == InstallResult(path, False, ["no ralphstate hooks to remove"])
    assert path.read_bytes() == original


def test_install_then_uninstall_from_nothing_leaves_an_empty_object(tmp_path: Path) -> None:
    install("project", tmp_path)
    install("project", tmp_path, uninstall=True)
    assert (tmp_path / ".claude" / "settings.json").read_text() == "{}\n"


def test_uninstall_without_a_file_writes_nothing(tmp_path: Path) -> None:
    result = install("local", tmp_path, uninstall=True)
    assert result.changed is False
    assert result.actions == ["no ralphstate hooks to remove"]
    assert not (tmp_path / ".claude").exists()


def test_an_unchanged_file_is_not_rewritten_even_when_formatted_differently(
    tmp_path: Path,
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    raw = json.dumps(INSTALLED, indent=4).encode()  # no trailing newline, 4 spaces
    path.write_bytes(raw)
    assert install("project", tmp_path).changed is False
    assert path.read_bytes() == raw


def test_our_hook_inside_someone_elses_matcher_group(tmp_path: Path) -> None:
    """Upgrade replaces our handler in place; uninstall leaves the group's other hooks."""
    path = tmp_path / ".claude" / "settings.json"
    old = '"/old venv/bin/ralphstate" hook session-start'
    write(
        path,
        {
            "hooks": {
                "SessionStart": [
                    {
                        "matcher": "startup|resume",
                        "hooks": [
                            {"type": "command", "command": "echo before"},
                            {"type": "command", "command": old, "timeout": 99},
                            {"type": "command", "command": "echo after"},
                        ],
                    }
                ]
            }
        },
    )
    result = install("project", tmp_path)
    assert f"updated SessionStart hook: {START} (was: {old})" in result.actions
    group = json.loads(path.read_text())["hooks"]["SessionStart"]
    assert group == [
        {
            "matcher": "startup|resume",
            "hooks": [
                {"type": "command", "command": "echo before"},
                {"type": "command", "command": START, "timeout": 99},
                {"type": "command", "command": "echo after"},
            ],
        }
    ]
    install("project", tmp_path, uninstall=True)
    assert json.loads(path.read_text()) == {
        "hooks": {
            "SessionStart": [
                {
                    "matcher": "startup|resume",
                    "hooks": [
                        {"type": "command", "command": "echo before"},
                        {"type": "command", "command": "echo after"},
                    ],
                }
            ]
        }
    }


@pytest.mark.parametrize("form", OLD_FORMS)
def test_install_upgrades_each_older_form_in_place_and_uninstall_removes_it(
    tmp_path: Path, form: str
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    old = {sub: form.format(sub=sub) for sub in inst.EVENTS.values()}
    theirs = {"type": "command", "command": "notify-send done"}
    write(
        path,
        {
            "hooks": {
                "Stop": [{"hooks": [theirs, {"type": "command", "command": old["stop"]}]}],
                "SessionStart": [
                    {"matcher": "", "hooks": [{"type": "command", "command": old["session-start"]}]}
                ],
                "PreCompact": [
                    {"matcher": "", "hooks": [{"type": "command", "command": old["pre-compact"]}]}
                ],
            }
        },
    )
    result = install("project", tmp_path)
    assert result.actions == [
        f"updated Stop hook: {STOP} (was: {old['stop']})",
        f"updated SessionStart hook: {START} (was: {old['session-start']})",
        f"updated PreCompact hook: {COMPACT} (was: {old['pre-compact']})",
        f"added StopFailure hook: {FAIL}",
        f"added PreToolUse hook: {PRE}",
        f"added SessionEnd hook: {END}",
        f"added PermissionRequest hook: {PERM}",
        f"added ConfigChange hook: {CONFIG}",
    ]
    assert json.loads(path.read_text()) == {
        "hooks": {
            "Stop": [{"hooks": [theirs, ours(STOP)]}],
            "SessionStart": [{"matcher": "", "hooks": [ours(START)]}],
            "PreCompact": [{"matcher": "", "hooks": [ours(COMPACT)]}],
            "StopFailure": [{"hooks": [ours(FAIL)]}],
            "PreToolUse": [{"matcher": "Bash|Edit|Write|MultiEdit", "hooks": [ours(PRE)]}],
            "SessionEnd": [{"hooks": [ours(END)]}],
            "PermissionRequest": [{"matcher": "Bash", "hooks": [ours(PERM)]}],
            "ConfigChange": [{"hooks": [ours(CONFIG)]}],
        }
    }
    write(
        path,
        {
            "hooks": {
                "Stop": [{"hooks": [theirs, {"type": "command", "command": old["stop"]}]}],
                "PreCompact": [{"hooks": [{"type": "command", "command": old["pre-compact"]}]}],
            }
        },
    )
    removed = install("project", tmp_path, uninstall=True)
    assert removed.actions == [
        f"removed Stop hook: {old['stop']}",
        f"removed PreCompact hook: {old['pre-compact']}",
    ]
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [{"hooks": [theirs]}]}}


def test_upgrade_replaces_old_commands_in_place_and_drops_duplicates(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(
        path,
        {
            "hooks": {
                "Stop": [
                    {"hooks": [{"type": "command", "command": '"/old/bin/ralphstate" hook stop'}]},
                    {"hooks": [{"type": "command", "command": "other"}]},
                    {"hooks": [{"type": "command", "command": "python3 -m ralphstate hook stop"}]},
                ],
                "SessionStart": [
                    {
                        "matcher": "",
                        "hooks": [
                            {
                                "type": "command",
                                "command": '"C:\\Py\\python.exe" -m ralphstate hook session-start',
                                "timeout": 30,
                            }
                        ],
                    }
                ],
                "PreCompact": [
                    {
                        "matcher": "",
                        "hooks": [
                            {
                                "type": "command",
                                "command": "C:/venv/Scripts/RalphState.EXE hook pre-compact",
                                "timeout": 30,
                            }
                        ],
                    }
                ],
            }
        },
    )
    result = install("project", tmp_path)
    assert result.actions == [
        f'updated Stop hook: {STOP} (was: "/old/bin/ralphstate" hook stop)',
        "removed duplicate Stop hook: python3 -m ralphstate hook stop",
        (
            f'updated SessionStart hook: {START} (was: "C:\\Py\\python.exe" -m ralphstate hook'
            " session-start)"
        ),
        (
            f"updated PreCompact hook: {COMPACT} (was: C:/venv/Scripts/RalphState.EXE hook"
            " pre-compact)"
        ),
        f"added StopFailure hook: {FAIL}",
        f"added PreToolUse hook: {PRE}",
        f"added SessionEnd hook: {END}",
        f"added PermissionRequest hook: {PERM}",
        f"added ConfigChange hook: {CONFIG}",
    ]
    assert json.loads(path.read_text()) == {
        "hooks": {
            "Stop": [
                {"hooks": [ours(STOP)]},
                {"hooks": [{"type": "command", "command": "other"}]},
            ],
            "SessionStart": [{"matcher": "", "hooks": [ours(START)]}],
            "PreCompact": [{"matcher": "", "hooks": [ours(COMPACT)]}],
            "StopFailure": [{"hooks": [ours(FAIL)]}],
            "PreToolUse": [{"matcher": "Bash|Edit|Write|MultiEdit", "hooks": [ours(PRE)]}],
            "SessionEnd": [{"hooks": [ours(END)]}],
            "PermissionRequest": [{"matcher": "Bash", "hooks": [ours(PERM)]}],
            "ConfigChange": [{"hooks": [ours(CONFIG)]}],
        }
    }


@pytest.mark.parametrize(
    "command",
    [
        *NOT_OURS,
        '"/x/ralphstate" hook session-start',  # another event's command under Stop
        '"/x/python" "/x/ralphstate/hooks/__main__.py" pre-compact',
    ],
)
def test_commands_that_are_not_our_stop_hook_are_left_alone(tmp_path: Path, command: str) -> None:
    path = tmp_path / ".claude" / "settings.json"
    theirs = {"hooks": [{"type": "command", "command": command}]}
    write(path, {"hooks": {"Stop": [theirs]}})
    install("project", tmp_path)
    assert json.loads(path.read_text())["hooks"]["Stop"] == [theirs, {"hooks": [ours(STOP)]}]
    install("project", tmp_path, uninstall=True)
    assert json.loads(path.read_text()) == {"hooks": {"Stop": [theirs]}}


def test_malformed_entries_inside_our_events_are_kept(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    odd = ["text", {"matcher": "x"}, {"hooks": "nope"}, {"hooks": [5, {"command": 7}]}]
    write(path, {"hooks": {"Stop": list(odd)}})
    install("project", tmp_path)
    install("project", tmp_path, uninstall=True)
    assert json.loads(path.read_text()) == {"hooks": {"Stop": odd}}


def test_an_empty_file_counts_as_an_empty_object(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(b"\n")
    assert install("project", tmp_path).changed is True
    assert set(json.loads(path.read_text())["hooks"]) == {
        "Stop",
        "SessionStart",
        "PreCompact",
        "StopFailure",
        "PreToolUse",
        "SessionEnd",
        "PermissionRequest",
        "ConfigChange",
    }


def test_a_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(b"\xef\xbb\xbf" + dump({"model": "opus"}).encode())
    install("project", tmp_path)
    assert json.loads(path.read_text(encoding="utf-8"))["model"] == "opus"


def test_non_ascii_text_is_written_as_itself(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(path, {"note": "café ✓"})
    install("project", tmp_path)
    assert '"note": "café ✓"' in path.read_text(encoding="utf-8")


def test_disable_all_hooks_is_pointed_out(tmp_path: Path) -> None:
    write(tmp_path / ".claude" / "settings.json", {"disableAllHooks": True})
    result = install("project", tmp_path)
    assert result.actions[-1] == (
        "note: disableAllHooks is true in this file, so Claude Code runs no hooks"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            b'{"hooks": {',
            (
                "is not valid JSON (Expecting property name enclosed in double quotes"
                " at line 1, column 12); fix it and run again, nothing was changed."
            ),
        ),
        (b"[1, 2]", "does not hold a JSON object; nothing was changed."),
        (b'"text"', "does not hold a JSON object; nothing was changed."),
        (b"\xff\xfe{}", "is not UTF-8 text; nothing was changed."),
    ],
)
@pytest.mark.parametrize("uninstall", [False, True])
def test_an_unusable_file_is_reported_and_left_alone(
    tmp_path: Path, content: bytes, problem: str, uninstall: bool
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(content)
    with pytest.raises(RalphstateError) as err:
        install("project", tmp_path, uninstall=uninstall)
    assert str(err.value) == f"{path} {problem}"
    assert path.read_bytes() == content
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"hooks": []}, '"hooks" in {path} is not an object; nothing was changed.'),
        ({"hooks": None}, '"hooks" in {path} is not an object; nothing was changed.'),
        ({"hooks": {"Stop": {}}}, '"hooks.Stop" in {path} is not a list; nothing was changed.'),
        (
            {"hooks": {"PreCompact": "x"}},
            '"hooks.PreCompact" in {path} is not a list; nothing was changed.',
        ),
    ],
)
@pytest.mark.parametrize("uninstall", [False, True])
def test_wrong_types_are_reported_and_left_alone(
    tmp_path: Path, data: dict[str, Any], problem: str, uninstall: bool
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    raw = write(path, data)
    with pytest.raises(RalphstateError) as err:
        install("project", tmp_path, uninstall=uninstall)
    assert str(err.value) == problem.format(path=path)
    assert path.read_bytes() == raw


def test_user_scope_writes_under_home(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    root.mkdir()
    result = install("user", root, home=home)
    assert result.path == home / ".claude" / "settings.json"
    assert result.path.is_file()
    assert not (root / ".claude").exists()


@POSIX_ONLY
def test_a_symlinked_settings_file_is_written_through(tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "settings.json"
    write(dotfiles, {"model": "opus"})
    link = tmp_path / "home" / ".claude" / "settings.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    install("user", tmp_path, home=tmp_path / "home")
    assert link.is_symlink()
    assert "Stop" in json.loads(dotfiles.read_text())["hooks"]


@POSIX_ONLY
def test_a_private_settings_file_stays_private(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.local.json"
    write(path, {"env": {"TOKEN": "secret"}})
    path.chmod(0o600)
    install("local", tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@POSIX_ONLY
@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores modes")
def test_an_unwritable_directory_is_one_clear_error(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    claude.mkdir()
    claude.chmod(0o500)
    try:
        with pytest.raises(RalphstateError) as err:
            install("project", tmp_path)
    finally:
        claude.chmod(0o700)
    assert str(err.value) == f"Cannot write {claude / 'settings.json'}: Permission denied."


def test_a_write_failure_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(target: Path, data: bytes, **how: Any) -> bool:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(settings, "atomic_write", failing)
    with pytest.raises(RalphstateError) as err:
        install("project", tmp_path)
    path = tmp_path / ".claude" / "settings.json"
    assert str(err.value) == f"Cannot write {path}: Permission denied."
    assert not path.exists()


def test_a_write_by_someone_else_meanwhile_is_merged_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    write(path, {"model": "opus"})
    real = fsio.atomic_write  # the function settings calls by that name
    calls: list[int] = []

    def racing(target: Path, data: bytes, **how: Any) -> bool:
        if not calls:  # Claude Code saves a permission between our read and our replace
            write(path, {"model": "opus", "permissions": {"allow": ["Bash(ls)"]}})
        calls.append(1)
        return real(target, data, **how)

    monkeypatch.setattr(settings, "atomic_write", racing)
    assert install("project", tmp_path).changed is True
    assert len(calls) == 2
    data = json.loads(path.read_text())
    assert data["permissions"] == {"allow": ["Bash(ls)"]}
    assert list(data["hooks"]) == [
        "Stop",
        "SessionStart",
        "PreCompact",
        "StopFailure",
        "PreToolUse",
        "SessionEnd",
        "PermissionRequest",
        "ConfigChange",
    ]


# ---------------------------------------------------------------- find_installed


def test_find_installed_over_all_scopes(tmp_path: Path) -> None:
    root, home = tmp_path / "proj", tmp_path / "home"
    root.mkdir()
    install("project", root, home=home)
    write(
        root / ".claude" / "settings.local.json",
        {
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "/gone/ralphstate hook stop"}]}]
            }
        },
    )
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text("{broken")
    project = root / ".claude" / "settings.json"
    assert find_installed(root, home) == [
        InstalledHook("project", project, "Stop", STOP),
        InstalledHook("project", project, "SessionStart", START),
        InstalledHook("project", project, "PreCompact", COMPACT),
        InstalledHook("project", project, "StopFailure", FAIL),
        InstalledHook("project", project, "PreToolUse", PRE),
        InstalledHook("project", project, "SessionEnd", END),
        InstalledHook("project", project, "PermissionRequest", PERM),
        InstalledHook("project", project, "ConfigChange", CONFIG),
        InstalledHook(
            "local", root / ".claude" / "settings.local.json", "Stop", "/gone/ralphstate hook stop"
        ),
    ]


def test_find_installed_reports_a_file_shared_by_two_scopes_once(tmp_path: Path) -> None:
    install("user", tmp_path, home=tmp_path)
    found = find_installed(tmp_path, tmp_path)
    assert [(hook.scope, hook.event) for hook in found] == [
        ("project", "Stop"),
        ("project", "SessionStart"),
        ("project", "PreCompact"),
        ("project", "StopFailure"),
        ("project", "PreToolUse"),
        ("project", "SessionEnd"),
        ("project", "PermissionRequest"),
        ("project", "ConfigChange"),
    ]


def test_find_installed_with_nothing(tmp_path: Path) -> None:
    assert find_installed(tmp_path, tmp_path / "home") == []


def test_read_settings_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    assert read_file("claude", path) is None
    path.write_text("[]")
    with pytest.raises(RalphstateError, match="does not hold a JSON object"):
        read_file("claude", path)


# ---------------------------------------------------------------- the plugin


def test_plugin_manifest() -> None:
    manifest = json.loads((REPO / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "ralphstate"
    assert manifest["version"] == ralphstate.__version__
    assert manifest["hooks"] == "./hooks/hooks.json"
    assert manifest["description"]
    assert manifest["author"]["name"]


def test_plugin_hooks_run_the_launcher_for_each_event() -> None:
    config = json.loads((REPO / "hooks" / "hooks.json").read_text())
    launch = '"${CLAUDE_PLUGIN_ROOT}/hooks/launch.py"'
    expected = {}
    for event, sub in {**inst.EVENTS, **inst.TASK_EVENTS}.items():
        group: dict[str, Any] = {"matcher": ""} if event in inst.MATCHER_EVENTS else {}
        if event in inst.MATCHERS:
            group["matcher"] = inst.MATCHERS[event]
        command = f"python3 {launch} {sub} || python {launch} {sub} || py -3 {launch} {sub}"
        if event == "TaskCompleted":  # its exit 2 is not retried with the next interpreter,
            # and a missing launcher (Python's own exit 2) lets the task complete
            command = (
                f'[ -f {launch} ] || {{ echo "ralphstate: the plugin has no hooks/launch.py'
                ' (being updated?); the task is not checked." >&2; exit 0; }; '
                f"python3 {launch} {sub} || {{ [ $? -eq 2 ] && exit 2; python {launch} {sub}"
                f" || {{ [ $? -eq 2 ] && exit 2; py -3 {launch} {sub}; }}; }}"
            )
        group["hooks"] = [{"type": "command", "command": command, "timeout": TIMEOUTS.get(sub, 30)}]
        expected[event] = [group]
    assert config["hooks"] == expected


# ---------------------------------------------------------------- the launcher, for real
# (the plugin's own environment, its build and bin/ralphstate: tests/plugin)

SESSION = "sess-1"


def hook_input(project: Path) -> bytes:
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": str(project / "t.jsonl"),
            "cwd": str(project),
            "hook_event_name": "Stop",
            "stop_hook_active": False,
            "last_assistant_message": "I think I am done.",
        }
    ).encode()


def loop_project(path: Path) -> Path:
    """A project whose loop, owned by SESSION, has one unmet criterion: Stop blocks."""
    state = {
        "version": 1,
        "spec": "build it",
        "criteria": ["tests pass"],
        "status": "in_progress",
        "sessionId": SESSION,
    }
    write(path / ".loop" / "state.json", state)
    return path


def env_for(tmp_path: Path, project: Path | None, path_dirs: list[Path]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("SYSTEMROOT", "WINDIR", "LANG")}
    temp = tmp_path / "temp"
    temp.mkdir(exist_ok=True)
    env.update(
        PATH=os.pathsep.join(str(d) for d in path_dirs),
        HOME=str(tmp_path / "home"),
        USERPROFILE=str(tmp_path / "home"),
        TMPDIR=str(temp),
        TEMP=str(temp),
        TMP=str(temp),
        RALPHSTATE_HOME=str(tmp_path / "ralphstate-home"),
    )
    if project is not None:
        env["CLAUDE_PROJECT_DIR"] = str(project)
    return env


def run(
    args: list[str], data: bytes, env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(args, input=data, env=env, cwd=cwd, capture_output=True, timeout=60)


def no_dir(tmp_path: Path) -> Path:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return empty


def direct(tmp_path: Path, name: str) -> bytes:
    """What the real hook prints for a fresh copy of the loop project."""
    project = loop_project(tmp_path / name)
    env = env_for(tmp_path, project, [no_dir(tmp_path)])
    done = run(
        [sys.executable, "-m", "ralphstate", "hook", "stop"], hook_input(project), env, tmp_path
    )
    assert done.returncode == 0
    assert json.loads(done.stdout)["decision"] == "block"
    return done.stdout


# ---------------------------------------------------------------- the installed command, for real

HOSTILE = "import pathlib; pathlib.Path({marker!r}).write_text('imported')\n"
PLANTED = ("ralphstate/__init__.py", "orjson.py", "filelock.py")


def plant(directory: Path, marker: Path, *names: str) -> None:
    """Modules in `directory` that leave `marker` behind when anything imports them."""
    for name in names:
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HOSTILE.format(marker=str(marker)))


def through_sh(command: str) -> list[str]:
    """The command as Claude Code runs it: sh -c (on Windows, Git Bash's is not at hand:
    its words)."""
    return shlex.split(command) if os.name == "nt" else ["/bin/sh", "-c", command]


def test_the_installed_command_never_imports_from_the_project_directory(tmp_path: Path) -> None:
    """A repository holding its own `ralphstate` package (or `orjson`, `filelock`) is the
    current directory of the hook, and PYTHONPATH may name another; the installed
    command still runs the installed ralphstate and imports neither."""
    expected = direct(tmp_path, "a")
    project = loop_project(tmp_path / "hostile repo")
    in_project, on_pythonpath = tmp_path / "imported-from-project", tmp_path / "imported-from-env"
    plant(project, in_project, *PLANTED)
    elsewhere = tmp_path / "on pythonpath"
    plant(elsewhere, on_pythonpath, *PLANTED)
    env = env_for(tmp_path, project, [no_dir(tmp_path)])
    env["PYTHONPATH"] = str(elsewhere)
    done = run(through_sh(STOP), hook_input(project), env, project)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, b"")
    assert not in_project.exists() and not on_pythonpath.exists()
    # Without -I the same command imports them: the plants above are real. (Which plant
    # comes first depends on how ralphstate is installed: an editable install's finder
    # outranks the current directory for `ralphstate` itself, not for orjson.)
    assert " -I " in STOP
    bare = STOP.replace(" -I ", " ", 1)
    run(through_sh(bare), hook_input(project), env, project)
    assert in_project.exists()
    run(through_sh(bare), hook_input(project), env, tmp_path)
    assert on_pythonpath.exists()


@POSIX_ONLY
def test_the_installed_command_runs_through_sh_without_a_loop(tmp_path: Path) -> None:
    """The common case, as Claude Code runs it: no loop here, nothing printed."""
    project = tmp_path / "no loop"
    project.mkdir()
    env = env_for(tmp_path, project, [no_dir(tmp_path)])
    done = run(["/bin/sh", "-c", hook_command("Stop")], hook_input(project), env, project)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def descendants(pid: int) -> set[int]:
    """`pid` and every process below it (Linux: /proc)."""
    parents: dict[int, int] = {}
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(stat_file.parent.name)] = int(fields[1])
    found, todo = {pid}, [pid]
    while todo:
        parent = todo.pop()
        children = {child for child, ppid in parents.items() if ppid == parent}
        todo += children - found
        found |= children
    return found


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def executable(pid: int) -> str | None:
    try:
        return str(Path(f"/proc/{pid}/exe").readlink())
    except OSError:
        return None


def outlives_sigterm(command: str, tmp_path: Path) -> bool:
    """Run `command` with bash -c, the hook waiting for its input; once the hook's Python
    runs, send SIGTERM to bash, as an agent does to the shell on a timeout or Esc; whether
    that Python still runs a second later."""
    import signal
    import time

    python = os.path.realpath(sys.executable)
    env = env_for(tmp_path, tmp_path, [no_dir(tmp_path)])
    shell = subprocess.Popen(
        [shutil.which("bash") or "bash", "-c", command],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
    )
    assert shell.stdin is not None
    hooks: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while not hooks:
            assert time.monotonic() < deadline, "the hook never started"
            time.sleep(0.01)
            hooks = [pid for pid in descendants(shell.pid) if executable(pid) == python]
        shell.send_signal(signal.SIGTERM)
        shell.wait(timeout=10)
        deadline = time.monotonic() + 1
        while any(running(pid) for pid in hooks) and time.monotonic() < deadline:
            time.sleep(0.01)
        return any(running(pid) for pid in hooks)
    finally:
        shell.stdin.close()  # a hook that outlived bash reads the end of its input and ends
        shell.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(running(pid) for pid in hooks) and time.monotonic() < deadline:
            time.sleep(0.01)


@pytest.mark.skipif(
    not Path("/proc/self/exe").exists() or shutil.which("bash") is None,
    reason="follows the processes through /proc (Linux) and needs bash",
)
def test_sigterm_to_the_shell_reaches_the_hook(tmp_path: Path) -> None:
    """bash runs the installed command, one simple command, by exec'ing it: the shell's
    process is the hook's, and a SIGTERM to the shell ends the hook at once. With a tail
    (`|| exit 1`, as earlier versions wrote) bash forks instead, and the hook would go on
    (verify-on-stop's checks, a decision written after the agent gave up)."""
    assert not outlives_sigterm(STOP, tmp_path)
    assert outlives_sigterm(STOP + " || exit 1", tmp_path)  # the check can fail


def test_launcher_runs_ralphstate_in_process(tmp_path: Path) -> None:
    expected = direct(tmp_path, "a")
    project = loop_project(tmp_path / "b")
    env = env_for(tmp_path, project, [no_dir(tmp_path)])
    done = run([sys.executable, str(LAUNCH), "stop"], hook_input(project), env, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, expected, b"")


def test_launcher_ignores_an_unknown_event(tmp_path: Path) -> None:
    project = loop_project(tmp_path / "p")
    env = env_for(tmp_path, project, [no_dir(tmp_path)])
    for args in (["post-tool-use"], []):
        done = run([sys.executable, str(LAUNCH), *args], hook_input(project), env, tmp_path)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_launcher_stays_silent_when_settings_already_run_the_hook(tmp_path: Path) -> None:
    project = loop_project(tmp_path / "p")
    install("local", project, home=tmp_path / "home")
    env = env_for(tmp_path, project, [no_dir(tmp_path)])
    done = run([sys.executable, str(LAUNCH), "stop"], hook_input(project), env, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert state.get("iteration", 0) == 0  # not judged by the plugin as well


def test_launcher_honours_user_settings_too(tmp_path: Path) -> None:
    project = loop_project(tmp_path / "p")
    install("user", project, home=tmp_path / "home")
    env = env_for(tmp_path, None, [no_dir(tmp_path)])  # project found from the input's cwd
    done = run([sys.executable, str(LAUNCH), "stop"], hook_input(project), env, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


@POSIX_ONLY
@pytest.mark.parametrize("interpreter", ["python3", "python"])
def test_plugin_command_runs_through_sh(tmp_path: Path, interpreter: str) -> None:
    """The hooks.json command itself, under sh, with only `interpreter` on PATH."""
    expected = direct(tmp_path, "a")
    project = loop_project(tmp_path / "b")
    bindir = tmp_path / "interp"
    bindir.mkdir()
    wrapper = bindir / interpreter
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    config = json.loads((REPO / "hooks" / "hooks.json").read_text())
    command = config["hooks"]["Stop"][0]["hooks"][0]["command"]
    env = env_for(tmp_path, project, [bindir])
    env["CLAUDE_PLUGIN_ROOT"] = str(REPO)
    done = run(["/bin/sh", "-c", command], hook_input(project), env, tmp_path)
    assert (done.returncode, done.stdout) == (0, expected)


def test_launcher_bound_matches_the_hook_input_limit() -> None:
    import importlib.util

    from ralphstate.core import limits

    spec = importlib.util.spec_from_file_location("launch", REPO / "hooks" / "launch.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.MAX_INPUT_BYTES == limits.MAX_HOOK_INPUT_BYTES
    from ralphstate.hooks.entry import APPROVING_WORDS, GATE_WORDS

    assert module.APPROVING_WORDS == APPROVING_WORDS
    assert module.GATE_WORDS == GATE_WORDS


@POSIX_ONLY
@pytest.mark.parametrize("agent", ["claude", "codex"])
def test_a_project_settings_file_leading_out_of_the_project_is_refused(
    tmp_path: Path, agent: str
) -> None:
    """A clone whose settings file links to `../../../.bash_profile`: `install` (a real
    process) refuses in one sentence and writes nothing there, for Claude Code's
    `.claude/settings.local.json` and Codex's `.codex/hooks.json` alike."""
    home = tmp_path / "home"
    profile = home / ".bash_profile"
    profile.parent.mkdir()
    profile.write_text("export PATH=$HOME/bin:$PATH\n")
    project = home / "src" / "clone"
    folder = project / (".claude" if agent == "claude" else ".codex")
    folder.mkdir(parents=True)
    name = "settings.local.json" if agent == "claude" else "hooks.json"
    (folder / name).symlink_to(Path("..", "..", "..", ".bash_profile"))
    done = run_process(["install", "--agent", agent], cwd=project, env={"HOME": str(home)})
    assert done.returncode == 1, done
    said = done.stderr.decode()
    assert said.count("\n") == 1 and "leads outside" in said and "refuses" in said, said
    assert profile.read_text() == "export PATH=$HOME/bin:$PATH\n"
