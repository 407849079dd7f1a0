"""`ralphstate install`: what it says it wrote. Every agent's files are tested in
tests/install/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.install.command import development_checkout
from tests.helpers import REPO

DEVELOPMENT = (
    f"ralphstate: these hooks run the development checkout {REPO} (an editable install),"
    " and break when it moves or its venv goes; for your projects, `pipx install"
    f" {REPO}` (or `uv tool install {REPO}`) and run `ralphstate install` again from a"
    " shell without that venv active\n"
)


def test_install_says_each_hook_and_the_file(project: Path, rs: Any) -> None:
    result = rs("install")
    assert (result.code, result.err) == (0, DEVELOPMENT)  # the tests run a checkout
    lines = result.out.splitlines()
    assert lines[0].startswith("added Stop hook: ")
    assert lines[-1] == f"updated: {project / '.claude' / 'settings.local.json'}"
    settings = orjson.loads((project / ".claude" / "settings.local.json").read_bytes())
    assert "Stop" in settings["hooks"]
    assert rs("install").out.splitlines()[-1].startswith("unchanged: ")


def test_hooks_from_a_development_checkout_say_so_in_one_sentence(project: Path, rs: Any) -> None:
    """The tests' ralphstate is this checkout's editable install: hooks written from it
    run the checkout's venv, which moves and goes, so `install` names the better
    command; an uninstall or the rules alone say nothing of it."""
    assert development_checkout() == REPO
    written = rs("install")
    assert written.code == 0 and written.err == DEVELOPMENT
    assert written.err.count("\n") == 1 and f"`pipx install {REPO}`" in written.err
    assert rs("install", "--allow-only").err == ""
    assert rs("install", "--uninstall").err == ""


def test_an_installed_ralphstate_is_no_development_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sysconfig

    import ralphstate

    site = tmp_path / "lib" / "site-packages"
    (site / "ralphstate").mkdir(parents=True)
    (site / "pyproject.toml").write_text("")  # even beside one, site-packages is installed
    monkeypatch.setattr(ralphstate, "__file__", str(site / "ralphstate" / "__init__.py"))
    paths = {**sysconfig.get_paths(), "purelib": str(site), "platlib": str(site)}
    monkeypatch.setattr(sysconfig, "get_paths", lambda: paths)
    assert development_checkout() is None
    monkeypatch.setattr(ralphstate, "__file__", str(tmp_path / "ralphstate" / "__init__.py"))
    assert development_checkout() is None  # no pyproject.toml: not a checkout
    (tmp_path / "pyproject.toml").write_text("")
    assert development_checkout() == tmp_path


def test_tasks_are_claude_codes_alone(project: Path, rs: Any) -> None:
    result = rs("install", "--tasks", "--agent", "codex")
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        "ralphstate: --tasks is Claude Code's hooks'; leave --agent and --statusline out."
        " (see `ralphstate install --help`)\n"
    )
    assert not (project / ".codex").exists()


def test_install_offers_claude_codes_sandbox_and_says_what_it_costs(project: Path, rs: Any) -> None:
    said = rs("install").out
    assert "sessions here run their commands unconfined" in said, said
    assert "`ralphstate install --sandbox`" in said and "costs" in said, said
    assert rs("install", "--sandbox").code == 0
    assert "unconfined" not in rs("install").out
