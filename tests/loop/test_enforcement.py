"""Forgetting `ralphstate install` is not silent: `init` and `status` say in one line,
as real processes, when nothing will enforce the loop (no agent's hook file runs
ralphstate's Stop hook, the plugin is not enabled, no run drove it) and what to run;
`doctor` in a subdirectory checks the loop's own project and names the file `install`
writes, passes a loop that only `ralphstate run` drives, and never says "ok" for
advice. The status line's part is in tests/hooks/test_statusline.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ralphstate.install.agents import install_agent
from ralphstate.loop.enforcement import ENV_PLUGIN, MISSING, RUNS, enforcer
from ralphstate.run import runfiles
from tests.helpers import REPO, run_process
from tests.helpers.homes import bare_home


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory in a home of its own where nothing enforces a loop."""
    bare_home(tmp_path, monkeypatch)
    project = tmp_path / "my project"
    project.mkdir()
    return project


def ralphstate(where: Path, *args: str, code: int = 0) -> list[str]:
    done = run_process(list(args), cwd=where)
    assert done.returncode == code, done.stdout + done.stderr
    return done.stdout.decode().splitlines()


def git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True, timeout=30)


def test_init_and_status_say_nothing_enforces_the_loop_and_what_to_run(bare: Path) -> None:
    said = ralphstate(bare, "init", "Add a CSV export", "-c", "tests pass")
    assert said[0].startswith("started a loop")
    assert said[-1] == MISSING
    assert MISSING.startswith("nothing enforces this loop:")
    assert "run `ralphstate install`" in MISSING and "`ralphstate run`" in MISSING
    assert ralphstate(bare, "status")[-1] == MISSING
    ralphstate(bare, "install")
    assert MISSING not in ralphstate(bare, "status")
    ralphstate(bare, "cancel")
    ralphstate(bare, "uninstall")
    assert MISSING not in ralphstate(bare, "status")  # a loop that is over is not nagged


@pytest.mark.parametrize(
    "how",
    [
        "install",
        "install --scope project",
        "install --scope user",
        "install --agent codex",
        "install --agent gemini --scope user",
        "install --agent cursor",
        "install --agent copilot",
        "install --agent opencode",
        "plugin enabled for the user",
        "plugin enabled in the project",
        "the plugin's own command",
        "a run drove it",
    ],
)
def test_any_agent_s_hooks_the_plugin_or_a_run_silence_it(bare: Path, how: str) -> None:
    home = Path(os.environ["HOME"])
    env: dict[str, str] = {}
    if how.startswith("install"):
        ralphstate(bare, *how.split())
    elif how.startswith("plugin enabled"):
        where = home if how.endswith("user") else bare
        name = "settings.json" if how.endswith("user") else "settings.local.json"
        path = where / ".claude" / name
        path.parent.mkdir()
        path.write_text(json.dumps({"enabledPlugins": {"ralphstate@my-marketplace": True}}))
    elif how == "the plugin's own command":
        env["RALPHSTATE_PLUGIN"] = "/plugins/ralphstate"
    else:
        (bare / ".loop" / "runs").mkdir(parents=True)
    done = run_process(["init", "Add a CSV export", "-c", "tests pass"], cwd=bare, env=env)
    assert done.returncode == 0, done.stderr
    assert MISSING not in done.stdout.decode()


def test_claude_code_s_config_directory_is_where_its_user_settings_are(
    bare: Path, tmp_path: Path
) -> None:
    config = tmp_path / "claude-work"
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    done = run_process(["install", "--scope", "user"], cwd=bare, env=env)
    assert done.returncode == 0, done.stderr
    assert (config / "settings.json").is_file()
    assert not (Path(os.environ["HOME"]) / ".claude").exists()
    done = run_process(["init", "x", "-c", "a"], cwd=bare, env=env)
    assert MISSING not in done.stdout.decode()
    # Without the variable, not that file: the loop it enforced as it started is said
    # to be no longer enforced (loop/gateoff.py), which the plain line would understate.
    said = "\n".join(ralphstate(bare, "status"))
    assert "this loop is no longer enforced:" in said and MISSING not in said


# -- doctor ----------------------------------------------------------------------------


def levels(lines: list[str]) -> dict[str, str]:
    return {line[5:]: line[:4].strip() for line in lines}


def test_doctor_in_a_subdirectory_points_at_the_file_the_agent_reads(bare: Path) -> None:
    """No git: the project is the directory `init` put the loop in; `doctor` and
    `install` in a subdirectory below it take that project, not the subdirectory."""
    ralphstate(bare, "init", "Add a CSV export", "-c", "tests pass")
    sub = bare / "src" / "export"
    sub.mkdir(parents=True)
    local = bare / ".claude" / "settings.local.json"
    said = ralphstate(sub, "doctor", code=1)
    fail = f"no Stop hook installed; run `ralphstate install`, which writes it to {local}"
    assert levels(said)[fail] == "fail"
    ralphstate(sub, "install")  # following it, here
    assert local.is_file() and not (sub / ".claude").exists()
    said = ralphstate(sub, "doctor")
    assert levels(said)[f"Stop hook in {local} runs {Path(sys.executable).absolute()}"] == "ok"
    assert MISSING not in ralphstate(sub, "status")


def test_doctor_passes_a_loop_only_ralphstate_run_drives(bare: Path) -> None:
    git_init(bare)
    ralphstate(bare, "init", "Add a CSV export", "-c", "tests pass")
    assert ralphstate(bare, "doctor", code=1)
    (bare / ".loop" / "runs").mkdir()
    said = levels(ralphstate(bare, "doctor"))
    assert (
        said[
            "no agent's hooks are installed: `ralphstate run` drives this loop and needs none"
            " (`ralphstate install` adds them, for a session that runs it)"
        ]
        == "note"
    )
    assert "fail" not in said.values()


def test_doctor_with_the_plugin_enabled_misses_no_hook(bare: Path) -> None:
    user = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    user.parent.mkdir()
    user.write_text(json.dumps({"enabledPlugins": {"ralphstate@ralphstate": True}}))
    said = levels(ralphstate(bare, "doctor"))
    assert said[f"the ralphstate plugin is enabled in {user}; its hooks run here"] == "ok"
    assert not any(line.startswith("no Stop hook") for line in said)
    advice = next(line for line in said if "ask for permission first" in line)
    assert said[advice] == "note" and "/ralphstate:allow" in advice


def test_doctor_says_advice_as_a_note_never_ok(bare: Path) -> None:
    ralphstate(bare, "install", "--no-allow")
    said = levels(ralphstate(bare, "doctor"))
    advice = [line for line, level in said.items() if "`ralphstate install" in line]
    advice += [line for line in said if "no loop here" in line]
    assert len(advice) >= 3, said
    assert {said[line] for line in advice} == {"note"}
    ralphstate(bare, "install")
    said = levels(ralphstate(bare, "doctor"))
    ok = "the agent's own ralphstate commands run without a permission prompt"
    assert said[ok] == "ok"


def test_a_loop_a_hook_file_does_not_enforce_is_still_missing(bare: Path) -> None:
    """Only ralphstate's Stop hook counts: not another hook of ours, nor a rule."""
    path = bare / ".claude" / "settings.local.json"
    install_agent("claude", "local", bare, allow=True)
    data = json.loads(path.read_text())
    del data["hooks"]["Stop"]
    path.write_text(json.dumps(data))
    assert ralphstate(bare, "init", "x", "-c", "a")[-1] == MISSING


# -- what counts -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "counts"),
    [
        ('"/venv/bin/python" -I -c "from ralphstate.hooks.entry import main; main()" stop', True),
        ("& 'C:/py/python.exe' -I -c 'from ralphstate.hooks.entry import main; main()' stop", True),
        ('"/home/me/.local/bin/ralphstate" hook stop --agent codex', True),
        ("ralphstate hook stop", True),
        ("python -m ralphstate hook stop", True),
        ('"C:\\py\\python.exe" "C:\\src\\ralphstate\\hooks\\__main__.py" stop', True),
        ('"/py" -I -c "from ralphstate.hooks.entry import main; main()" stop-failure', False),
        ("ralphstate hook session-start", False),
        ("echo ralphstate stop", False),
    ],
)
def test_the_stop_hook_in_any_form_install_writes_or_wrote(
    bare: Path, command: str, counts: bool
) -> None:
    path = bare / ".claude" / "settings.json"
    path.parent.mkdir()
    group = {"hooks": [{"type": "command", "command": command}]}
    path.write_text(json.dumps({"hooks": {"Stop": [group]}}, indent=2))
    assert (enforcer([str(bare)], None) is not None) is counts


def test_the_names_agree_with_the_files_that_make_them() -> None:
    assert RUNS == runfiles.RUNS_DIR
    launcher = (REPO / "hooks" / "plugin_launcher.py").read_text()
    assert f'ENV_PLUGIN = "{ENV_PLUGIN}"' in launcher
