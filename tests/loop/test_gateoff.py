"""The gate switched off is not silent (loop/gateoff.py): a loop that ralphstate's hooks
enforced when it started, whose hooks are then removed from the settings or switched
off with `disableAllHooks`, is said by `status`, by every other command of the loop
(on stderr), by the status line and by the next session's start, with since when and
the file, as real processes. A loop that was never enforced keeps the plain line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest

from ralphstate.loop.enforcement import MISSING, SWITCHED_OFF, enforcer, hooks_switched_off
from tests.helpers import run_process
from tests.helpers.homes import bare_home

NO_LONGER = "this loop is no longer enforced:"


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bare_home(tmp_path, monkeypatch)
    project = tmp_path / "project"
    project.mkdir()
    return project


def ralphstate(where: Path, *args: str, code: int = 0) -> tuple[str, str]:
    done = run_process(list(args), cwd=where)
    assert done.returncode == code, done.stdout + done.stderr
    return done.stdout.decode(), done.stderr.decode()


def enforced_loop(project: Path) -> Path:
    """`install` (the local settings file), then a loop: enforced as it starts."""
    ralphstate(project, "install")
    ralphstate(project, "init", "Add a CSV export", "-c", "tests pass")
    local = project / ".claude" / "settings.local.json"
    assert local.is_file()
    out, _ = ralphstate(project, "status")
    assert NO_LONGER not in out and MISSING not in out
    return local


def set_key(path: Path, **values: object) -> None:
    settings = json.loads(path.read_text()) if path.is_file() else {}
    settings.update(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))


def test_disable_all_hooks_set_mid_loop_is_said_by_every_command(bare: Path) -> None:
    local = enforced_loop(bare)
    set_key(local, disableAllHooks=True)
    out, _ = ralphstate(bare, "status")
    assert NO_LONGER in out
    assert f"{local} sets `disableAllHooks`, not by ralphstate" in out
    assert "since 20" in out  # the file's change, dated
    _, err = ralphstate(bare, "log")  # any other command of the loop: on stderr
    assert NO_LONGER in err
    set_key(local, disableAllHooks=False)
    out, _ = ralphstate(bare, "status")
    assert NO_LONGER not in out and MISSING not in out
    _, err = ralphstate(bare, "log")
    assert NO_LONGER not in err


def test_the_stop_hook_removed_from_the_settings_is_said(bare: Path) -> None:
    local = enforced_loop(bare)
    local.write_text(json.dumps({"permissions": {"allow": []}}))
    out, _ = ralphstate(bare, "status")
    assert NO_LONGER in out and f"{local} changed" in out
    line = run_process(["statusline"], cwd=bare, input=b"{}").stdout.decode()
    assert "NOT enforced since 20" in line


def test_a_loop_never_enforced_keeps_the_plain_line(bare: Path) -> None:
    out, _ = ralphstate(bare, "init", "Add a CSV export", "-c", "tests pass")
    assert MISSING in out
    out, _ = ralphstate(bare, "status")
    assert MISSING in out and NO_LONGER not in out


def test_the_next_session_s_start_says_it(bare: Path) -> None:
    """A SessionStart hook still runs (the Stop hook alone was removed): the person
    hears it at the session's start."""
    local = enforced_loop(bare)
    settings = json.loads(local.read_text())
    del settings["hooks"]["Stop"]
    local.write_text(json.dumps(settings))
    data = orjson.dumps({"session_id": "s2", "cwd": str(bare), "source": "startup"})
    done = run_process(["hook", "session-start"], cwd=bare, input=data)
    out = orjson.loads(done.stdout)
    assert NO_LONGER in out["systemMessage"], out
    # and a desktop notification, for a person who does not read the session's line
    assert out["terminalSequence"].startswith("\x1b]"), out
    assert NO_LONGER in out["terminalSequence"]


def test_disable_all_hooks_is_read_as_claude_code_reads_it(bare: Path) -> None:
    home = Path(os.environ["HOME"])
    ralphstate(bare, "install")
    assert enforcer([str(bare)], None) is not None
    set_key(home / ".claude" / "settings.json", disableAllHooks=True)
    assert hooks_switched_off([str(bare)]) == str(home / ".claude" / "settings.json")
    assert enforcer([str(bare)], None) is None
    set_key(bare / ".claude" / "settings.json", disableAllHooks=False)  # nearer: wins
    assert hooks_switched_off([str(bare)]) is None
    assert enforcer([str(bare)], None) is not None
    (bare / ".claude" / "settings.json").unlink()
    out, _ = ralphstate(bare, "init", "x", "-c", "a")
    assert SWITCHED_OFF.format(path=home / ".claude" / "settings.json") in out


def config_change(project: Path, path: Path) -> bytes:
    data = orjson.dumps(
        {
            "session_id": "s1",
            "cwd": str(project),
            "hook_event_name": "ConfigChange",
            "source": "local_settings",
            "file_path": str(path),
        }
    )
    done = run_process(["hook", "config-change"], cwd=project, input=data)
    assert done.returncode == 0, done
    return done.stdout


def test_a_change_that_switches_the_gate_off_is_blocked_and_said(bare: Path) -> None:
    """Claude Code runs ConfigChange as the file changes: the running session keeps
    ralphstate's hooks, and a notification says it (the client shows a block to nobody)."""
    local = enforced_loop(bare)
    set_key(local, model="sonnet")  # a change that leaves the hooks: passes untouched
    assert config_change(bare, local).strip() in (b"", b"{}")
    set_key(local, disableAllHooks=True)
    out = orjson.loads(config_change(bare, local))
    assert out["decision"] == "block", out
    assert NO_LONGER in out["reason"]
    assert "ralphstate kept its hooks in this session" in out["terminalSequence"]
