"""The Claude Code plugin end to end: the real client loads this checkout with
`--plugin-dir`, with a fresh CLAUDE_PLUGIN_DATA and a Python that has no ralphstate.

The plugin builds its own environment on first use, for real: `python -m venv`, then
pip installs the checkout with its dependencies. pip is pointed at a local directory
of wheels (PIP_NO_INDEX, PIP_FIND_LINKS: pip's own settings, which the plugin's build
honours like any pip run), filled once per test session from this machine's pip
configuration, so the test itself needs no network.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_support import RunClaude, json_result, run_client
from fake_api import FakeAnthropicAPI, bash, text, texts, tool_results

import ralphstate
from ralphstate.install.permissions import RULES

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT = 300


def person(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """A person typing `ralphstate ARGS` with the plugin's bin/ on PATH."""
    return run_client([str(REPO / "bin" / "ralphstate"), *args], project, env, BUILD_TIMEOUT)


def hook_outputs(debug_log: Path, event: str) -> list[dict[str, Any]]:
    """The JSON objects the client parsed from `event` hooks, from its debug log."""
    found = []
    lines = debug_log.read_text().splitlines()
    for i, line in enumerate(lines):
        if "Hooks: Parsed initial response: " in line and any(
            re.search(rf"Hooks: {event}(:\w+)? \[", later) for later in lines[i + 1 : i + 3]
        ):
            found.append(json.loads(line.split("Hooks: Parsed initial response: ", 1)[1]))
    return found


def test_the_plugin_from_a_checkout_sets_itself_up_gates_a_loop_and_runs_its_commands(
    claude_bin: Path,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    home: Path,
    tmp_path: Path,
    plugin_env: dict[str, str],
) -> None:
    data = home / ".claude" / "plugins" / "data" / "ralphstate-inline"
    plugin = ("--plugin-dir", str(REPO))
    version = ralphstate.__version__

    # First use: the SessionStart hook starts the build and says so; the session goes on.
    first_log = tmp_path / "first.log"
    api.add_turns([text("Hello.")])
    _, result = run_claude(
        project, "hello", *plugin, "--debug-file", str(first_log), env=plugin_env, timeout=120
    )
    assert result["result"] == "Hello."
    [said] = hook_outputs(first_log, "SessionStart")
    # The shell of this test has no `ralphstate`: the first use says how to add one.
    assert said == {
        "systemMessage": f"ralphstate: setting up its Python environment for plugin version"
        f" {version} (first use, about a minute at most); loops are not enforced until it"
        " is ready. For `ralphstate run`, `status` and `report` in your own shell, install"
        f' the command too: pipx install "{REPO}"'
    }
    env_home = data / f"env-{version}"
    stamp = env_home / "venv" / "ralphstate-plugin-version"
    deadline = time.monotonic() + BUILD_TIMEOUT
    while not stamp.exists() and (env_home / "build.lock").exists():
        assert time.monotonic() < deadline, "the plugin's environment was not built in time"
        time.sleep(0.5)
    assert stamp.read_text() == version, (env_home / "build.log").read_text()

    # A person starts a loop with the plugin's command: it runs in that environment.
    started = person(project, plugin_env, "init", "Add a CSV export", "-c", "tests pass")
    assert started.returncode == 0, started.stderr
    assert "started a loop" in started.stdout

    # The hooks gate the loop; the agent records progress with the plugin's command.
    api.add_turns(
        [text("I will start on the exporter.")],
        [bash("command -v ralphstate && ralphstate criteria set 'tests pass' true")],
        [text("The export works.\n\n<loop-complete>")],
    )
    debug_log = tmp_path / "loop.log"
    _, result = run_claude(
        project,
        "Add a CSV export",
        *plugin,
        "--debug-file",
        str(debug_log),
        env=plugin_env,
        timeout=120,
    )
    assert result["result"] == "The export works.\n\n<loop-complete>"
    _, blocked, recorded = api.conversation()[-3:]
    assert texts(blocked, "user")[-1].startswith(
        "Stop hook feedback:\nralphstate loop, iteration 1 of 20: 1 of 1 criterion not verified"
    )
    [output] = tool_results(recorded)[-1:]
    assert output.startswith(f"{REPO / 'bin' / 'ralphstate'}\n")
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert (state["status"], state["iteration"]) == ("complete", 1)
    assert state["criteriaStatus"] == {"tests pass": True}
    # The completing Stop decision carries the desktop notification.
    stops = hook_outputs(debug_log, "Stop")
    # (Read by content: the client's debug log does not always name the blocking Stop's
    # output next to it; the block itself is asserted from the recorded requests above.)
    blocks = [stop for stop in stops if stop.get("decision") == "block"]
    assert not any("terminalSequence" in stop for stop in blocks), stops
    assert stops[-1]["terminalSequence"] == (
        "\x1b]9;ralphstate: loop complete (Add a CSV export)\x07"
    )
    assert stamp.read_text() == version  # nothing was built again

    # A slash command runs its command line before the model sees the prompt.
    api.add_turns([text("The loop is complete.")])
    _, result = run_claude(project, "/ralphstate:status", *plugin, env=plugin_env)
    assert result["result"] == "The loop is complete."
    prompt = "\n".join(texts(api.conversation()[-1], "user"))
    assert "<command-name>/ralphstate:status</command-name>" in prompt
    assert f"loop {project}: complete · iteration 1/20" in prompt
    assert "[x] tests pass" in prompt

    # A plugin cannot bring permission rules: /ralphstate:allow writes them, once, with
    # no --allowedTools; then `claude -p` runs the agent's own commands without a prompt.
    api.add_turns([text("Allowed.")])
    command = [str(claude_bin), "-p", "/ralphstate:allow", "--output-format", "json", *plugin]
    done = run_client(command, project, plugin_env, 120)
    assert json_result(done, "claude")["result"] == "Allowed."
    prompt = "\n".join(texts(api.conversation()[-1], "user"))
    assert "allowed the agent's own ralphstate commands without a prompt" in prompt
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert settings == {"permissions": {"allow": list(RULES)}}
    api.add_turns([bash("ralphstate step add 'document it'")], [text("Added.")])
    command = [str(claude_bin), "-p", "Add a step", "--output-format", "json", *plugin]
    assert json_result(run_client(command, project, plugin_env, 120), "claude")
    assert tool_results(api.conversation()[-1])[-1] == "added step 'document it'"
    # /ralphstate:sandbox writes Claude Code's sandbox settings for the next sessions.
    api.add_turns([text("Sandboxed.")])
    command = [str(claude_bin), "-p", "/ralphstate:sandbox", "--output-format", "json", *plugin]
    assert json_result(run_client(command, project, plugin_env, 120), "claude")
    prompt = "\n".join(texts(api.conversation()[-1], "user"))
    assert "set sandbox.enabled = true" in prompt, prompt
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert settings["sandbox"]["enabled"] is True and settings["sandbox"]["failIfUnavailable"]
    assert settings["permissions"]["allow"] == list(RULES)


def published(tmp_path: Path) -> Path:
    """The repository as a clone of it holds it (the files git tracks or would track,
    links as links), with what a checkout accumulates by following the README: a
    `.venv` of a few megabytes and the clients' `node_modules`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    where = tmp_path / "ralphstate"
    for name in filter(None, listed.split("\0")):
        source, target = REPO / name, where / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(source.readlink())
        elif source.is_file():
            shutil.copy2(source, target)
    for heavy in (".venv/lib/python3/site-packages", "tests/e2e/node_modules/@anthropic-ai"):
        (where / heavy).mkdir(parents=True)
        (where / heavy / "blob.bin").write_bytes(os.urandom(4 * 1024 * 1024))
    return where


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def test_the_marketplace_in_the_repository_installs_the_plugin(
    tmp_path: Path,
    claude_bin: Path,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    home: Path,
    plugin_env: dict[str, str],
) -> None:
    """The README's two commands, as the client's command line spells them
    (`/plugin marketplace add`, `/plugin install` inside a session), with a checkout's
    path for OWNER/REPO: the plugin is copied into the plugin cache, its environment
    is built under its own data directory, and its hooks gate a loop."""

    def claude(*args: str) -> str:
        done = run_client([str(claude_bin), *args], project, plugin_env, 60)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    checkout = published(tmp_path)
    claude("plugin", "marketplace", "add", str(checkout))
    claude("plugin", "install", "ralphstate@ralphstate")
    listed = claude("plugin", "list")
    assert "ralphstate@ralphstate" in listed and "enabled" in listed
    version = ralphstate.__version__
    copy = home / ".claude" / "plugins" / "cache" / "ralphstate" / "ralphstate" / version
    assert (copy / "bin" / "ralphstate").exists()
    # Only what the plugin needs is copied: not the checkout's .venv, tests or docs.
    assert not [p.name for p in copy.iterdir() if p.name in (".venv", "tests", "docs")]
    assert {p.name for p in copy.iterdir()} == {p.name for p in (REPO / "plugin").iterdir()}
    assert size(copy) < size(checkout / "ralphstate") + 1024 * 1024 < size(checkout) / 4

    # The plugin's own command, from its copy, builds its environment where Claude Code
    # gives that plugin its data directory.
    data = home / ".claude" / "plugins" / "data" / "ralphstate-ralphstate"
    ralphstate_bin = str(copy / "bin" / "ralphstate")
    started = run_client(
        [ralphstate_bin, "init", "Add a CSV export", "-c", "tests pass"],
        project,
        plugin_env,
        BUILD_TIMEOUT,
    )
    assert started.returncode == 0, started.stderr
    assert (data / f"env-{version}" / "venv" / "ralphstate-plugin-version").read_text() == version

    api.add_turns(
        [text("Starting.")],
        [bash("ralphstate criteria set 'tests pass' true")],
        [text("Done.\n\n<loop-complete>")],
    )
    _, result = run_claude(project, "Add a CSV export", env=plugin_env, timeout=120)
    assert result["result"] == "Done.\n\n<loop-complete>"
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert (state["status"], state["iteration"]) == ("complete", 1)


def test_a_session_keeps_its_plugin_version_across_an_update_and_each_has_its_environment(
    tmp_path: Path,
    claude_bin: Path,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    home: Path,
    plugin_env: dict[str, str],
) -> None:
    """What an open session keeps after a plugin update, asked of the real client with a
    git marketplace (a local bare repository under an https name, through git's own
    `insteadOf`): the plugin is updated from inside a session (its Bash tool runs
    `claude plugin update`), and that session's Stop hook still runs the old version's
    copy, whose environment is left alone; the old copy stays in the cache (orphaned),
    so a new session's build of the new version keeps the old environment until
    Claude Code's sweep removes that copy."""

    def git(*args: str, cwd: Path) -> None:
        subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=60)

    def claude(*args: str) -> str:
        done = run_client([str(claude_bin), *args], project, plugin_env, 60)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    old, new = ralphstate.__version__, "9.9.9"
    source = published(tmp_path)
    git("init", "-q", "-b", "main", cwd=source)
    git("add", "-A", cwd=source)
    git("-c", "user.name=p", "-c", "user.email=p@example.com", "commit", "-qm", old, cwd=source)
    git("clone", "-q", "--bare", str(source), str(tmp_path / "ralphstate.git"), cwd=tmp_path)
    rewrite = f"url.{(tmp_path).as_uri()}/.insteadOf"
    git(
        "config",
        "--file",
        str(home / ".gitconfig"),
        rewrite,
        "https://git.example.invalid/",
        cwd=home,
    )
    claude("plugin", "marketplace", "add", "https://git.example.invalid/ralphstate.git")
    claude("plugin", "install", "ralphstate@ralphstate")
    cache = home / ".claude" / "plugins" / "cache" / "ralphstate" / "ralphstate"
    data = home / ".claude" / "plugins" / "data" / "ralphstate-ralphstate"
    # The old version's environment, as its build leaves it (a stand-in Python).
    venv = data / f"env-{old}" / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("#!/bin/sh\nexit 0\n")
    (venv / "bin" / "python").chmod(0o755)
    (venv / "ralphstate-plugin-version").write_text(old)
    (venv.parent / "plugin-root").write_text(str(cache / old))

    # The maintainers release the new version.
    manifest = source / ".claude-plugin" / "plugin.json"
    manifest.write_text(manifest.read_text().replace(f'"version": "{old}"', f'"version": "{new}"'))
    git("-c", "user.name=p", "-c", "user.email=p@example.com", "commit", "-qam", new, cwd=source)
    git("push", "-q", str(tmp_path / "ralphstate.git"), "main", cwd=source)

    update = f"{claude_bin} plugin marketplace update ralphstate"
    update += f" && {claude_bin} plugin update ralphstate@ralphstate"
    api.add_turns([bash(update)], [text("Updated.")])
    _, result = run_claude(project, "update", "--allowedTools", "Bash", env=plugin_env)
    assert result["result"] == "Updated."
    assert new in tool_results(api.conversation()[-1])[-1]
    assert {p.name for p in cache.iterdir() if p.is_dir()} == {old, new}
    assert (cache / old / ".orphaned_at").exists()
    # The Stop hook of the session that updated ran the old copy: nothing was built.
    assert sorted(p.name for p in data.iterdir()) == [f"env-{old}"]

    offline = dict(plugin_env, PIP_FIND_LINKS=str(tmp_path / "no-wheels"))
    api.add_turns([text("Hello.")])
    run_claude(project, "hello", env=offline)  # the new version's SessionStart builds
    home_new = data / f"env-{new}"
    deadline = time.monotonic() + BUILD_TIMEOUT
    while not (home_new / "build-failed").exists() or (home_new / "build.lock").exists():
        assert time.monotonic() < deadline, "the new version's build did not end"
        time.sleep(0.2)
    assert venv.is_dir()  # its copy is in the cache: an open session may run it

    shutil.rmtree(cache / old)  # Claude Code's sweep, about 14 days after the update
    api.add_turns([text("Hello.")])
    run_claude(project, "hello", env=offline)
    deadline = time.monotonic() + BUILD_TIMEOUT
    while venv.parent.exists() or (home_new / "build.lock").exists():
        assert time.monotonic() < deadline, "the old environment was not removed"
        time.sleep(0.2)
    assert sorted(p.name for p in data.iterdir()) == [f"env-{new}"]
