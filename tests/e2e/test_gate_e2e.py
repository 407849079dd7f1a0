"""The gate switched off, with the real client (docs/explanation/proof.md, "The gate
switched off"): a loop that `ralphstate install`'s hooks enforce, and an agent whose
tool call would switch them off mid-session.

- A call the PreToolUse hook sees (a Bash command naming the settings file and
  `disableAllHooks`, a Write of the settings file): in `claude -p`, where nobody can
  answer a prompt, it is denied with one sentence, and the file is as it was.
- A route the hook cannot see (a program the agent wrote earlier, run by a command
  that names none of the files): Claude Code applies `disableAllHooks` at once and no
  hook of ralphstate's runs again; `status` and the next command say the loop is no
  longer enforced, by what file, since when (the status line's part:
  tests/loop/test_gateoff.py).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from e2e_support import Cli, RunClaude
from fake_api import FakeAnthropicAPI, bash, text, tool_results, tool_use

pytestmark = pytest.mark.e2e

NO_LONGER = "this loop is no longer enforced:"
PYTHON = shlex.quote(sys.executable)
SWITCH_OFF = (
    "import json, pathlib; p = pathlib.Path({name!r}); d = json.loads(p.read_text());"
    " d['disableAllHooks'] = True; p.write_text(json.dumps(d))"
)


@pytest.fixture
def enforced(cli: Cli, project: Path) -> Path:
    cli("install")
    cli("init", "Greet", "-c", "greeting works")
    local = project / ".claude" / "settings.local.json"
    assert "hooks" in json.loads(local.read_text())
    return local


@pytest.mark.parametrize("how", ["bash", "write"])
def test_a_call_that_switches_the_hooks_off_is_denied_in_print_mode(
    cli: Cli,
    run_claude: RunClaude,
    api: FakeAnthropicAPI,
    project: Path,
    enforced: Path,
    how: str,
) -> None:
    before = enforced.read_text()
    if how == "bash":
        code = SWITCH_OFF.format(name=".claude/settings.local.json")
        call = bash(f"{PYTHON} -c {shlex.quote(code)}")
    else:
        call = tool_use("Write", file_path=str(enforced), content='{"disableAllHooks": true}')
    api.add_turns([call], [text("I tried.")])

    done, _ = run_claude(project, "Switch the hooks off")

    assert done.returncode == 0, done.stderr
    result = tool_results(api.conversation()[-1])[-1]
    assert "decides whether ralphstate's hooks run" in result, result
    assert "ask the person" in result
    assert enforced.read_text() == before
    assert NO_LONGER not in cli("status").stdout


def test_switched_off_where_the_hook_cannot_see_it_is_said_after(
    cli: Cli, run_claude: RunClaude, api: FakeAnthropicAPI, project: Path, enforced: Path
) -> None:
    program = project / "tidy.py"  # written by the agent in an earlier turn
    program.write_text(SWITCH_OFF.format(name=str(enforced)))
    api.add_turns([bash(f"{PYTHON} tidy.py")], [text("All done.")])

    done, _ = run_claude(project, "Tidy up")

    assert done.returncode == 0, done.stderr
    assert json.loads(enforced.read_text())["disableAllHooks"] is True
    said = cli("status").stdout
    assert NO_LONGER in said and f"{enforced} sets `disableAllHooks`" in said, said
    assert NO_LONGER in cli("log").stderr
