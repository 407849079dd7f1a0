"""The loop under the real opencode server, offline: `ralphstate install --agent
opencode` writes `.opencode/plugin/ralphstate.ts`, `opencode serve` talks to the
scripted Messages API through its Anthropic provider, and at each `session.idle` the
plugin asks ralphstate's Stop hook and prompts the session again with a block's reason.

opencode installs `@opencode-ai/plugin` into every config directory at start; the test
gives both (the project's `.opencode/` and `~/.config/opencode/`) the pinned copy from
`tests/e2e/opencode/node_modules` with the lock file opencode writes, so nothing is
fetched (and the environment points npm and any proxy at a closed port). One server serves the three
sessions in turn, since starting one is slow. Skipped, with the reason printed, only
when the client is not installed (`cd tests/e2e/opencode && npm ci`).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_support import (
    E2E_DIR,
    Prompts,
    history,
    installed,
    installed_project,
    read_state,
    rs,
    rs_command,
)
from fake_api import FakeAnthropicAPI, bash, text, texts
from opencode_fixtures import OpencodeServer, base_env, find_opencode, write_config

pytestmark = pytest.mark.e2e
MARK = "<loop-complete>"
PLUGIN_DEPS = E2E_DIR / "opencode" / "node_modules"


@pytest.fixture(scope="module")
def opencode() -> Path:
    binary = installed(find_opencode(), "opencode")
    if not (PLUGIN_DEPS / "@opencode-ai" / "plugin").is_dir():
        pytest.skip("@opencode-ai/plugin is not installed; run `npm ci` in tests/e2e/opencode")
    return binary


def _plugin_deps(config_dir: Path) -> None:
    """The package opencode installs into a config directory, there already: the
    `package.json` and lock file its installer writes (`opencode/config/`) and the pinned
    copy's `node_modules`, so it finds nothing to fetch."""
    config_dir.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(E2E_DIR / "opencode" / "config" / name, config_dir / name)
    (config_dir / "node_modules").symlink_to(PLUGIN_DEPS, target_is_directory=True)


def wait_until(condition: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.2)


def settled(server: OpencodeServer, api: FakeAnthropicAPI, requests: int) -> None:
    """Wait until the server made `requests` conversation requests in all and its
    sessions rest; then long enough that a prompt from the plugin would have come."""
    wait_until(lambda: len(api.conversation()) >= requests, f"{requests} requests")
    wait_until(lambda: not server.busy(), "the sessions rest")
    time.sleep(3)  # the plugin runs the hook after `session.idle`: let it answer
    wait_until(lambda: not server.busy(), "the sessions rest")


def test_the_plugin_gates_opencode_sessions(
    opencode: Path, tmp_path: Path, api: FakeAnthropicAPI
) -> None:
    project = tmp_path / "my project"
    project.mkdir()
    write_config(project, api.base_url)
    env = base_env(tmp_path, project, tmp_path / "cache")
    installed_project(tmp_path, env, "opencode", ".opencode/plugin/ralphstate.ts")
    _plugin_deps(project / ".opencode")
    _plugin_deps(Path(env["XDG_CONFIG_HOME"]) / "opencode")

    server = OpencodeServer(opencode, project, env, tmp_path / "serve.log")
    try:
        server.wait_up()

        # No loop: one turn, nothing written.
        api.script = [[text("Hello.")]]
        server.prompt("Say hello.")
        settled(server, api, 1)
        assert len(api.conversation()) == 1
        assert not (project / ".loop").exists()

        # A loop owned by a Claude Code session: left alone.
        rs(project, {**env, "CLAUDE_CODE_SESSION_ID": "claude-1"}, "init", "Build it", "-c", "x")
        before = (project / ".loop" / "state.json").read_bytes()
        api.add_turns([text("Nothing to do here.")])
        server.prompt("Say hello again.")
        settled(server, api, 2)
        assert len(api.conversation()) == 2, "the plugin did not prompt the session again"
        assert (project / ".loop" / "state.json").read_bytes() == before

        # The loop of this session: held until the criterion is recorded and the newest
        # reply says the marker.
        rs(project, env, "init", "Build the parser", "-c", "tests pass", "--force")
        prompts = Prompts(lambda body: texts(body, "user")[-1])
        api.add_turns(
            [text(f"I think I am done. {MARK}")],
            prompts.after([bash(rs_command("criteria", "set", "tests pass", "true"), tool="bash")]),
            [text("The tests pass now.")],
            prompts.after([text(f"The tests pass, and the work is done. {MARK}")]),
        )
        server.prompt("Build the parser.")
        wait_until(lambda: read_state(project)["status"] != "in_progress", "the loop ends")
        settled(server, api, 6)
    finally:
        server.stop()

    assert len(api.conversation()) == 6, "two blocks, one tool call, then the session rested"
    assert prompts[0].startswith(
        "ralphstate loop, iteration 1 of 20: 1 of 1 criterion not verified yet:\n- tests pass\n"
    )
    assert prompts[1].startswith("ralphstate loop, iteration 2 of 20: the one criterion")
    state = read_state(project)
    assert state["status"] == "complete"
    assert state["iteration"] == 2
    assert state["ownerAgent"] == "opencode"
    events = [e["event"] for e in history(project)]
    assert [e for e in events if e in ("unmet", "no_marker")] == ["unmet", "no_marker"]
