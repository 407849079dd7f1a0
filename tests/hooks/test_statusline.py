"""`ralphstate statusline` with Claude Code's status-line input (2.1.330's, written from
its documented fields and captured from the client: tests/fixtures/statusline), as real
processes, and `ralphstate install
--statusline` wrapping and restoring a person's own status line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as hs

from ralphstate.hooks import statusline
from ralphstate.install import statusline_setup
from ralphstate.install.agents import hook_command, install_agent
from tests.helpers import FIXTURES, run_process
from tests.helpers.homes import bare_home
from tests.helpers.loops import make_loop

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="runs commands with sh")
RECORDED = FIXTURES / "statusline" / "claude-code-2.1.330.json"


def recorded_input(project: Path) -> bytes:
    """The recorded input, for a session in `project`."""
    text = RECORDED.read_text().replace("PROJECT", str(project).replace("\\", "\\\\"))
    return text.encode()


def line(project: Path, data: bytes | None = None, cwd: Path | None = None) -> bytes:
    done = run_process(
        ["statusline"], cwd=cwd or project, input=recorded_input(project) if data is None else data
    )
    assert (done.returncode, done.stderr) == (0, b"")
    return done.stdout


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project whose loop ralphstate's hooks enforce (`ralphstate install`'s file), in
    Claude Code's own sandbox (the project's shared settings: test_statusline_sandbox.py
    has the line without it)."""
    path = tmp_path / "a project"
    (path / "src").mkdir(parents=True)
    install_agent("claude", "local", path)
    (path / ".claude" / "settings.json").write_text('{"sandbox": {"enabled": true}}')
    return path


@pytest.fixture
def bare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project nothing enforces a loop in: no agent's hooks, no plugin, in a home of
    its own."""
    bare_home(tmp_path, monkeypatch)
    path = tmp_path / "bare project"
    path.mkdir()
    return path


def test_a_loop_nothing_enforces_says_so_and_what_to_run(bare: Path, tmp_path: Path) -> None:
    make_loop(bare, steps=[])
    tail = "unconfined · not enforced: run `ralphstate install`"
    assert line(bare, cwd=tmp_path) == f"loop 0/20 · 0/2 verified · $0.42 · {tail}\n".encode()
    make_loop(bare, steps=[], status="paused", pauseReason="user")
    assert line(bare, cwd=tmp_path) == "loop paused (user) · 0/2 verified\n".encode()


@pytest.mark.parametrize(
    "enforced",
    [
        "local hooks",
        "project hooks",
        "user hooks",
        "plugin",
        "codex hooks",
        "opencode plugin",
        "a run",
    ],
)
def test_any_agent_s_hooks_the_plugin_or_a_run_enforce_it(bare: Path, enforced: str) -> None:
    make_loop(bare, steps=[])
    home = Path(os.environ["HOME"])
    if enforced.endswith("hooks") and enforced != "codex hooks":
        scope = enforced.split()[0]
        install_agent("claude", scope, bare)
    elif enforced == "plugin":
        user = home / ".claude" / "settings.json"
        user.parent.mkdir(parents=True)
        user.write_text(json.dumps({"enabledPlugins": {"ralphstate@ralphstate": True}}))
    elif enforced == "codex hooks":
        install_agent("codex", "project", bare)
    elif enforced == "opencode plugin":
        install_agent("opencode", "user", bare)
    else:
        (bare / ".loop" / "runs").mkdir()
    unconfined = b"" if enforced == "a run" else b" \xc2\xb7 unconfined"
    assert line(bare) == b"loop 0/20 \xc2\xb7 0/2 verified \xc2\xb7 $0.42" + unconfined + b"\n"


def test_a_disabled_plugin_or_another_hook_does_not_count(bare: Path) -> None:
    make_loop(bare, steps=[])
    user = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    user.parent.mkdir(parents=True)
    failure = hook_command("StopFailure")
    user.write_text(
        json.dumps(
            {
                "enabledPlugins": {"ralphstate@ralphstate": False, "other@ralphstate": True},
                "hooks": {"StopFailure": [{"hooks": [{"type": "command", "command": failure}]}]},
                "permissions": {"allow": ["Bash(ralphstate hook stop:*)"]},
            }
        )
    )
    assert line(bare).endswith(b" \xc2\xb7 not enforced: run `ralphstate install`\n")


def test_a_running_loop_is_one_line(root: Path, tmp_path: Path) -> None:
    make_loop(
        root,
        criteria=["a", "b", "c", "d", "e"],
        criteriaStatus={"a": True, "c": True},
        steps=["write the exporter", "wire the button", "document it"],
        completedSteps=["write the exporter"],
        iteration=3,
    )
    # Run from elsewhere: the input's project directory is where the loop is looked for.
    assert line(root, cwd=tmp_path) == (
        "loop 3/20 · 0/5 verified, 2 claimed · next: wire the button · $0.42\n".encode()
    )


def test_no_loop_prints_nothing(root: Path) -> None:
    assert line(root) == b""


@pytest.mark.parametrize("status", ["complete", "cancelled"])
def test_a_finished_loop_prints_nothing(root: Path, status: str) -> None:
    make_loop(root, status=status)
    assert line(root) == b""


@pytest.mark.parametrize("status", ["complete", "cancelled"])
def test_a_loop_ended_by_a_hand_edit_says_it_is_not_verified(root: Path, status: str) -> None:
    from ralphstate.core import state as st
    from ralphstate.storage.peruser import ledger
    from ralphstate.storage.system.paths import LoopPaths

    make_loop(root, loopId="0123456789abcdef")
    loop = LoopPaths(root, root / ".loop")
    ledger.note_status(loop, st.parse((root / ".loop" / "state.json").read_bytes()))
    make_loop(root, loopId="0123456789abcdef", status=status)  # a hand edit ends it
    assert line(root) == f"loop {status} outside ralphstate: NOT verified\n".encode()


def test_a_verified_criterion_is_told_from_a_claimed_one(root: Path) -> None:
    verified = {"result": "verified", "command": "true", "at": "2026-01-01T00:00:00Z"}
    make_loop(
        root,
        criteria=["a", "b", "c"],
        criteriaStatus={"a": True, "b": True},
        checks={"a": "true"},
        evidence={"a": verified},
    )
    assert line(root).startswith(
        "loop 0/20 · 1/3 verified (checked in the agent's environment), 1 claimed · ".encode()
    )


def test_a_paused_loop_says_why(root: Path) -> None:
    make_loop(root, status="paused", pauseReason="stall", criteriaStatus={"tests pass": True})
    assert line(root) == "loop paused (stall) · 0/2 verified, 1 claimed\n".encode()


def test_no_steps_left_no_next(root: Path) -> None:
    make_loop(root, completedSteps=["tokenizer", "parser"])
    assert line(root) == "loop 0/20 · 0/2 verified · $0.42\n".encode()


def test_a_step_name_cannot_redraw_the_terminal_and_is_cut_short(root: Path) -> None:
    make_loop(root, steps=["\x1b]0;owned\x07 wire   the\nbutton " + "x" * 60])
    out = line(root).decode()
    assert out.startswith("loop 0/20 · 0/2 verified · next: \\x1b]0;owned\\x07 wire the button")
    assert "\x1b" not in out and out.endswith("… · $0.42\n")
    assert len(out.split("next: ")[1].split(" · ")[0]) == statusline.MAX_NEXT


@pytest.mark.parametrize(
    "state",
    [b"{not json", b"[]", b"", b"x" * (8 * 1024 * 1024)],
    ids=["bad", "list", "empty", "big"],
)
def test_a_loop_it_cannot_read_prints_nothing_and_no_fault(root: Path, state: bytes) -> None:
    (root / ".loop").mkdir()
    (root / ".loop" / "state.json").write_bytes(state)
    assert line(root) == b""


@pytest.mark.parametrize("data", [b"", b"not json", b"[1]", b'{"workspace": 3}'])
def test_without_usable_input_the_current_directory_is_used(root: Path, data: bytes) -> None:
    make_loop(root)
    assert line(root, data=data).startswith(b"loop 0/20")
    assert line(root, data=data, cwd=root.parent) == b""


def test_the_current_dir_and_cwd_stand_in_for_a_missing_project_dir(root: Path) -> None:
    make_loop(root)
    for key in ("current_dir", "cwd"):
        data = orjson.dumps({"workspace": {}, key: str(root)} if key == "cwd" else {
            "workspace": {key: str(root)}})  # fmt: skip
        assert line(root, data=data, cwd=root.parent).startswith(b"loop 0/20"), key


@given(hs.text(hs.characters(codec="utf-8")), hs.booleans())
def test_the_input_s_strings_are_read_as_json_reads_them(path: str, ascii_only: bool) -> None:
    data = json.dumps(
        {"cwd": "elsewhere", "workspace": {"current_dir": "x", "project_dir": path}},
        ensure_ascii=ascii_only,
    ).encode()
    assert statusline._string_after(data, b'"project_dir"') == path


# -- the installed command, and wrapping the person's own ----------------------------------


def settings_file(tmp_path: Path, content: dict[str, Any] | None) -> Path:
    path = tmp_path / "home" / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    if content is not None:
        path.write_text(json.dumps(content, indent=2))
    return path


def run_status_command(command: str, project: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RALPHSTATE_NOTIFY")}
    return subprocess.run(
        ["/bin/sh", "-c", command],
        input=recorded_input(project),
        capture_output=True,
        cwd=project,
        env=env,
        timeout=30,
    )


@POSIX_ONLY
def test_install_sets_the_status_line_and_uninstall_removes_it(tmp_path: Path, root: Path) -> None:
    path = settings_file(tmp_path, {"model": "opus"})
    result = statusline_setup.install(path)
    assert result.changed and result.actions == ["status line: ralphstate"]
    data = json.loads(path.read_text())
    assert data["model"] == "opus"
    assert data["statusLine"]["type"] == "command" and data["statusLine"]["padding"] == 0
    command = data["statusLine"]["command"]
    assert command == f'"{Path(sys.executable).absolute()}" -I -c "{statusline_setup.CODE}"'
    make_loop(root, iteration=2)
    done = run_status_command(command, root)
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        "loop 2/20 · 0/2 verified · next: tokenizer · $0.42\n".encode(),
        b"",
    )
    assert not statusline_setup.install(path).changed  # idempotent
    assert statusline_setup.install(path, uninstall=True).actions == [
        "removed the ralphstate status line"
    ]
    assert json.loads(path.read_text()) == {"model": "opus"}


@POSIX_ONLY
def test_a_status_line_of_the_person_s_own_is_wrapped_and_restored_exactly(
    tmp_path: Path, root: Path
) -> None:
    theirs = {
        "type": "command",
        "command": "printf 'théirs: %s\\n' \"$(cat | wc -c | tr -d ' ')\"",
        "padding": 2,
    }
    path = settings_file(tmp_path, {"statusLine": theirs, "theme": "dark"})
    before = json.loads(path.read_text())
    result = statusline_setup.install(path)
    assert result.actions == ["status line: your own, then ralphstate's line under it"]
    data = json.loads(path.read_text())
    assert data["statusLine"]["padding"] == 2
    command = data["statusLine"]["command"]
    make_loop(root)
    size = len(recorded_input(root))
    done = run_status_command(command, root)
    assert done.returncode == 0
    assert done.stdout.decode().splitlines() == [
        f"théirs: {size}",  # their command read the same input
        "loop 0/20 · 0/2 verified · next: tokenizer · $0.42",
    ]
    # Installed again (a new interpreter, say): still wrapping theirs, not ours.
    assert statusline_setup.install(path).actions == ["status line: ralphstate after your own"]
    assert statusline_setup.wrapped(json.loads(path.read_text())["statusLine"]) == theirs
    # With no loop, only theirs.
    (root / ".loop" / "state.json").unlink()
    assert run_status_command(command, root).stdout.decode() == f"théirs: {size}\n"
    assert statusline_setup.install(path, uninstall=True).actions == [
        "restored your own status line"
    ]
    assert json.loads(path.read_text()) == before
    assert statusline_setup.install(path, uninstall=True).actions == [
        "no ralphstate status line here"
    ]


def test_a_status_line_that_is_not_an_object_is_left_alone(tmp_path: Path, rs: Any) -> None:
    path = settings_file(tmp_path, {"statusLine": "echo hi"})
    before = path.read_bytes()
    with pytest.raises(Exception, match="is not an object; nothing was changed"):
        statusline_setup.install(path)
    assert path.read_bytes() == before


def test_the_command_line_installs_for_the_user_by_default(
    tmp_path: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("USERPROFILE", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    result = rs("install", "--statusline")
    assert result.code == 0, result.err
    user = home / ".claude" / "settings.json"
    assert result.out.splitlines() == ["status line: ralphstate", f"updated: {user}"]
    assert statusline_setup.is_ours(json.loads(user.read_text())["statusLine"])
    assert rs("install", "--statusline", "--agent", "codex").code == 1
    result = rs("install", "--statusline", "--uninstall")
    assert result.out.splitlines() == ["removed the ralphstate status line", f"updated: {user}"]


@pytest.mark.parametrize(
    ("cost", "shown"),
    [("0.4213", " · $0.42"), ("12", " · $12.00"), ("-1", ""), ('"x"', ""), ("1e99", "")],
)
def test_claude_code_s_own_cost_figure_is_shown(root: Path, cost: str, shown: str) -> None:
    make_loop(root, steps=[])
    data = recorded_input(root).replace(
        b'"total_cost_usd": 0.4213', f'"total_cost_usd": {cost}'.encode()
    )
    assert line(root, data) == f"loop 0/20 · 0/2 verified{shown}\n".encode()


CAPTURED = FIXTURES / "statusline" / "claude-2.1.330.json"


def captured_input(project: Path) -> bytes:
    """The input Claude Code 2.1.330 really gave its status line, for `project`."""
    text = CAPTURED.read_text().replace("PROJECT", str(project).replace("\\", "\\\\"))
    return text.encode()


def test_the_captured_input_with_a_loop_is_its_line(root: Path, tmp_path: Path) -> None:
    make_loop(
        root,
        criteria=["a", "b"],
        criteriaStatus={"b": True},
        steps=["write the exporter", "wire the button"],
        completedSteps=["write the exporter"],
        iteration=4,
    )
    # Run from elsewhere: the captured project directory is where the loop is found.
    assert line(root, captured_input(root), cwd=tmp_path) == (
        "loop 4/20 · 0/2 verified, 1 claimed · next: wire the button · $0.00\n".encode()
    )


def test_the_captured_input_without_a_loop_prints_nothing(root: Path, tmp_path: Path) -> None:
    # A loop where the command runs is not the captured project's: still nothing.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    make_loop(elsewhere, steps=[])
    assert line(root, captured_input(root), cwd=elsewhere) == b""


def test_the_captured_cost_is_shown_as_the_command_formats_it(root: Path) -> None:
    make_loop(root, steps=[])
    data = captured_input(root)
    cost = json.loads(data)["cost"]["total_cost_usd"]
    shown = line(root, data).decode().rstrip("\n").split(" · ")[-1]
    assert shown == f"${cost:.2f}"
    # And a figure that does not round away: the client's own, times a thousand.
    bigger = data.replace(
        f'"total_cost_usd":{cost}'.encode(), f'"total_cost_usd":{cost * 1000}'.encode()
    )
    assert bigger != data
    assert line(root, bigger).decode().rstrip("\n").split(" · ")[-1] == f"${cost * 1000:.2f}"


def test_a_huge_pause_reason_is_still_one_short_line(root: Path) -> None:
    make_loop(root, status="paused", pauseReason="x" * 200_000 + "\n\x1b[2J")
    out = line(root).decode()
    assert out.count("\n") == 1 and len(out) <= statusline.MAX_LINE + 1, len(out)
    assert out.startswith("loop paused (xxx") and "…)" in out


@POSIX_ONLY
def test_a_state_file_that_leads_into_another_project_is_refused(
    root: Path, tmp_path: Path
) -> None:
    """A clone whose `.loop/state.json` links into another project: the line says it is
    refused, as `status` and the hooks refuse it, and shows nothing of the other loop."""
    other = tmp_path / "other project"
    other.mkdir()
    make_loop(other, spec="the other project's secret plan")
    (root / ".loop").mkdir()
    (root / ".loop" / "state.json").symlink_to(other / ".loop" / "state.json")
    assert line(root).decode() == statusline.REFUSED + "\n"
    done = run_process(["status"], cwd=root)
    assert done.returncode != 0 and b"leads outside the project" in done.stderr
