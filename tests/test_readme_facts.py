"""What the README and the docs state about the state file, their links and the hooks,
checked against the code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ralphstate.core import state as st
from tests.helpers import REPO, run_process

README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = REPO / "docs"
PAGES = [REPO / name for name in ("README.md", "SECURITY.md", "CHANGELOG.md", "CONTRIBUTING.md")]
PAGES += sorted(DOCS.rglob("*.md"))
STATE_FILE = (DOCS / "reference" / "state-file.md").read_text(encoding="utf-8")
HOOKS = (DOCS / "explanation" / "hooks.md").read_text(encoding="utf-8")
# A relative link: [text](target), where target is not a URL.
LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:)([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def headings(text: str) -> set[str]:
    """The anchors of a page's headings, those in fenced code left out."""
    found: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#+ (.+)$", line)):
            found.add(_anchor(match.group(1)))
    return found


def test_every_link_inside_a_page_leads_to_a_heading() -> None:
    every: set[str] = set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        links = set(re.findall(r"\]\(#([^)]+)\)", text))
        assert links <= headings(text), (page.name, sorted(links - headings(text)))
        every |= links
    assert every


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_its_heading(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        path, _, anchor = target.partition("#")
        if not path:
            continue  # inside the page: the test above
        dest = (page.parent / path).resolve()
        if not dest.exists() or (
            anchor
            and dest.suffix == ".md"
            and anchor not in headings(dest.read_text(encoding="utf-8"))
        ):
            broken.append(target)
    assert broken == []


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) <= 285  # 260, sandboxed runs, and the CI workflow


def test_the_state_table_names_every_key_ralphstate_writes_in_its_order() -> None:
    section = STATE_FILE.split("# The state file", 1)[1].split("\n| key |", 1)[1]
    table = section.split("\n\n", 1)[0]
    keys = re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)
    assert keys == list(st.FIELD_ORDER)


def test_a_stop_with_no_state_file_is_allowed_silently(project: Path) -> None:
    (project / ".loop").mkdir()  # a loop directory, but no state.json in it
    hook_input = json.dumps({"session_id": "s1", "cwd": str(project)})
    for env in ({"CLAUDE_PROJECT_DIR": str(project)}, {}):
        done = run_process(["hook", "stop"], cwd=project, input=hook_input, env=env)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "No state file: `ralphstate hook stop` allows, silently." in HOOKS


def test_the_plugin_path_says_the_shell_needs_the_command_too() -> None:
    """The plugin's `bin/ralphstate` is on the agent's PATH only: the overnight and
    morning commands in a terminal need the command installed, and the README says so
    where it offers the plugin, never "nothing else to install"."""
    plugin = README.split("**As a Claude Code plugin**", 1)[1].split("```", 1)[0]
    assert "nothing else to install" not in README
    assert "`ralphstate run`" in plugin and "also install the command" in plugin
    assert "pipx install ." in README.split("**As a command**", 1)[1]
    page = (REPO / "docs" / "how-to" / "plugin.md").read_text(encoding="utf-8")
    assert "not your shell's" in page and "`pipx install .`" in page


def test_the_first_screen_is_a_user_s_install_and_first_loop_with_the_set_up_commands() -> None:
    """The README's first screen: the installed command and a first loop come first;
    the project's two set-up commands (the main job, the tests) are on it too, and
    leave no venv active, so a later `ralphstate install` writes hooks that run the
    installed command, never the checkout's development venv."""
    screen = "\n".join(README.splitlines()[:40])
    first = re.search(r"```sh\n(.*?)```", screen, re.DOTALL)
    assert first is not None
    words = [line.split()[:2] for line in first.group(1).splitlines()]
    assert words[0] == ["pipx", "install"] and ["ralphstate", "install"] in words
    assert ["ralphstate", "init"] in words and ["claude"] in [w[:1] for w in words]
    set_up = re.findall(r"^python3 -m venv \.venv && (.*)$", screen, re.MULTILINE)
    assert [line.endswith(("ralphstate demo", "python -m pytest")) for line in set_up] == [
        True,
        True,
    ], set_up
    assert "activate" not in screen
