"""`init --check NAME COMMAND`: a criterion and the command that proves it in one go,
through a real shell and real processes, and the check then catching a false claim at
the Stop hook; templates carrying a criterion's check; who the checks are trusted for."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralphstate.loop import template
from ralphstate.loop.project import locate
from ralphstate.storage.peruser import truststore
from tests.helpers import run_process
from tests.helpers.person import trust

FAILING_TEST = (
    "import unittest\n\n\nclass T(unittest.TestCase):\n"
    "    def test_it(self):\n        self.assertEqual(1 + 1, 3)\n"
)
SHELL = pytest.mark.skipif(sys.platform == "win32", reason="the line is POSIX shell")


def state_of(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / ".loop" / "state.json").read_text(encoding="utf-8")))


def trusted() -> bool:
    """Whether the loop here has its checks trusted on this machine."""
    store = locate()
    return truststore.is_trusted(store.paths, store.load())


def stop(root: Path, message: str) -> dict[str, Any]:
    """The Stop hook, as a real process, at the end of a reply saying `message`."""
    data = json.dumps({"session_id": "s1", "cwd": str(root), "last_assistant_message": message})
    done = run_process(["hook", "stop"], cwd=root, input=data, timeout=120)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout)) if done.stdout.strip() else {}


@SHELL
def test_one_shell_line_starts_a_loop_whose_check_catches_a_false_claim(project: Path) -> None:
    (project / "test_it.py").write_text(FAILING_TEST)
    python = sys.executable
    line = (
        f'"{python}" -m ralphstate init "Fix the sum" --check "tests pass" "\\"{python}\\"'
        ' -m unittest -q" -c "the change is explained" -s "fix it"'
    )
    done = subprocess.run(["sh", "-c", line], cwd=project, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # the program is found: no warning
    assert done.stdout.splitlines()[0] == (
        "started a loop in .loop/state.json: 2 criteria, 1 step, max 20 iterations"
    )
    assert f'check (not trusted yet) tests pass: "{python}" -m unittest -q' in done.stdout
    state = state_of(project)
    assert state["criteria"] == ["tests pass", "the change is explained"]
    assert state["checks"] == {"tests pass": f'"{python}" -m unittest -q'}
    # A script has no terminal: nobody confirmed the check; the person trusts it at theirs.
    assert "run `ralphstate trust` at your own terminal" in done.stdout
    assert not trusted()
    trust(project)
    assert trusted()

    for name in state["criteria"]:  # the agent claims everything, the test still failing
        assert run_process(["criteria", "set", name, "true"], cwd=project).returncode == 0
    said = stop(project, "All done. <loop-complete>")
    assert said["decision"] == "block"
    assert "ralphstate ran the checks and 1 failed" in said["reason"]
    assert "AssertionError: 2 != 3" in said["reason"]
    assert state_of(project)["criteriaStatus"]["tests pass"] is False


def test_an_agent_gives_checks_that_wait_for_the_person(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "agent-session-1")
    done = rs("init", "Build it", "--check", "tests pass", "true")
    assert done.code == 0, done.err
    assert done.out.splitlines()[2:4] == [
        "check (not trusted yet) tests pass: true",
        (
            "the check will not run until you review it, then ask the person to trust"
            " them (only they can)"
        ),
    ]
    assert not trusted()


def test_a_template_check_beside_a_typed_one_leaves_both_for_trust(project: Path, rs: Any) -> None:
    (project / "loop.md").write_text(
        "# Build it\n\n## Criteria\n- [ ] lint is clean (check: `true`)\n"
    )
    done = rs("init", "--from", "loop.md", "--check", "tests pass", "true")
    assert done.code == 0, done.err
    assert done.out.splitlines()[-3] == (
        "the template's checks will not run until you review them, then run `ralphstate trust`"
    )
    state = state_of(project)
    assert state["checks"] == {"lint is clean": "true", "tests pass": "true"}
    assert not trusted()


def test_check_names_a_criterion_given_with_c_once(project: Path, rs: Any) -> None:
    done = rs("init", "Build it", "-c", "docs", "-c", "tests pass", "--check", "tests pass", "true")
    assert done.code == 0, done.err
    state = state_of(project)
    assert state["criteria"] == ["tests pass", "docs"]  # the checked criteria first
    assert state["checks"] == {"tests pass": "true"}


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (
            ["--check", "tests pass"],
            "ralphstate: Option '--check' requires 2 arguments. (see `ralphstate init --help`)\n",
        ),
        (
            ["--check", "tests pass", "  "],
            "ralphstate: --check 'tests pass' needs a command, not only spaces.\n",
        ),
        (["--check", " ", "true"], "ralphstate: a criterion needs a name, not only spaces.\n"),
    ],
)
def test_a_check_without_both_words_is_refused(
    project: Path, rs: Any, args: list[str], error: str
) -> None:
    done = rs("init", "Build it", *args)
    assert (done.code, done.err) == (1, error)
    assert not (project / ".loop" / "state.json").exists()


def test_a_missing_program_is_warned_about_not_refused(project: Path, rs: Any) -> None:
    done = rs("init", "Build it", "--check", "lint clean", "rufff check .", "-c", "docs")
    assert done.code == 0
    assert done.err == (
        "ralphstate: warning: the check of 'lint clean' would fail now: no program"
        ' "rufff" on PATH; correct it with `ralphstate criteria check "lint clean"'
        ' "COMMAND"` unless the loop\'s work provides it.\n'
    )
    assert state_of(project)["checks"] == {"lint clean": "rufff check ."}
    checked = rs("criteria", "check", "lint clean", "./scripts/lint.sh")
    assert checked.code == 0
    assert 'no file "./scripts/lint.sh" in the project;' in checked.err


def test_a_markdown_criterion_carries_its_check() -> None:
    loaded = template.from_markdown(
        "# Add CSV export\n\n## Criteria\n"
        "- [ ] tests pass (check: `python3 -m pytest -q`)\n"
        "- [ ] the date shows (check: ``grep -q `date +%Y` out.txt``)\n"
        "- [ ] docs (written by hand)\n"
        "\n## Steps\n- [ ] write it\n"
    )
    assert loaded["criteria"] == ["tests pass", "the date shows", "docs (written by hand)"]
    assert loaded["checks"] == {
        "tests pass": "python3 -m pytest -q",
        "the date shows": "grep -q `date +%Y` out.txt",
    }


def test_init_from_a_markdown_template_shows_its_checks_untrusted(project: Path, rs: Any) -> None:
    (project / "loop.md").write_text(
        "# Add CSV export\n\n## Criteria\n- [ ] tests pass (check: `true`)\n"
    )
    done = rs("init", "--from", "loop.md")
    assert done.code == 0, done.err
    assert done.out.splitlines()[2:4] == [
        "check (not trusted yet) tests pass: true",
        "the template's check will not run until you review it, then run `ralphstate trust`",
    ]
    assert state_of(project)["checks"] == {"tests pass": "true"}
