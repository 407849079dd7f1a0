"""The README's own commands, run as written in a real shell with a scratch HOME: the
quickstart's `init` starts a loop whose check fails on a project's failing test, and
"A real session" (and the tutorial's loop of your own) prints what the page shows, a
check catching a false claim included ("..." on a page stands for lines left out).
The commands run as a person types them, at a terminal (a real pty, tests/helpers/
terminal.py): `init --check` asks there once to trust the check, and `yes` is typed;
the question is on the terminal only, never in what the page shows printed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ralphstate.verify import confine
from tests.helpers import REPO
from tests.helpers.gitrepo import use_identity
from tests.helpers.terminal import script_at_terminal

README = (REPO / "README.md").read_text(encoding="utf-8")
TUTORIAL = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the README's shell is POSIX")
BIN = str(Path(sys.executable).parent)  # ralphstate and python3, as installed here
MARK = "@@@ command "
# The pages show a sealed pass as it reads where checks run confined (bubblewrap on
# Linux, Seatbelt on macOS); without that, the same pass is only "sealed".
CONFINED = sys.platform == "darwin" or bool(confine.bubblewrap())
LEVEL = "sealed and confined" if CONFINED else "sealed"


def section(heading: str) -> str:
    start = README.index(f"\n{heading}")
    end = README.find("\n## ", start + 1)
    return README[start : end if end != -1 else len(README)]


def blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of `text`: (language, body)."""
    return re.findall(r"```(\w+)\n(.*?)```", text, re.DOTALL)


def console(body: str) -> list[tuple[str, list[str]]]:
    """A console block's commands (with their continuation lines and here-documents)
    and the lines the README shows each one printing."""
    found: list[tuple[str, list[str]]] = []
    lines = body.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line.startswith("$ "):
            found[-1][1].append(line)
            continue
        command = [line[2:]]
        while command[-1].endswith("\\"):
            command.append(lines[index])
            index += 1
        heredoc = re.search(r"<<'(\w+)'", command[0])
        if heredoc:
            while lines[index] != heredoc.group(1):
                command.append(lines[index])
                index += 1
            command.append(lines[index])
            index += 1
        found.append(("\n".join(command), []))
    return found


def shown(expected: list[str], home: str) -> re.Pattern[str]:
    """What the README shows, as a pattern over what the commands printed: `...` any
    lines, the README's home and Python this machine's, times and ages any."""
    parts = []
    for line in expected:
        if line == "..." or line.strip() == "...":
            parts.append(r"(?:.*\n)*?")
            continue
        text = re.escape(line.split("  # ")[0] if line.startswith("$") else line)
        text = text.replace(re.escape('"/home/me/.venv/bin/python3"'), r'"[^"]+"')
        text = text.replace(re.escape("/home/me"), re.escape(home))
        text = re.sub(r"\d+\\\.\d+s", r"\\d+\\.\\d+s", text)
        text = re.sub(r"\b0s\\ ago", r"\\d+s\\ ago", text)
        parts.append(text + r"\n")
    return re.compile("".join(parts))


DEVELOPMENT = "ralphstate: these hooks run the development checkout "


def at_terminal(script: str, home: Path, cwd: Path) -> tuple[str, str]:
    """`script` typed at the person's terminal: what it printed (stdout, stderr), its
    one question (`init --check`'s, to trust the check) answered yes there."""
    env = {**os.environ, "HOME": str(home), "PATH": BIN + os.pathsep + os.environ["PATH"]}
    done = script_at_terminal(["bash", "-c", script], cwd=cwd, env=env)
    assert done.asked == 1, done.screen + done.stdout + done.stderr
    assert "Type yes to trust these checks" in done.screen, done.screen
    return done.stdout, done.stderr


def run_script(script: str, home: Path, cwd: Path) -> str:
    out, stderr = at_terminal(script, home, cwd)
    # The tests run this checkout's editable install, which `install` rightly names.
    err = [line for line in stderr.splitlines() if DEVELOPMENT not in line]
    assert err == [], stderr
    return out


def session(text: str) -> tuple[str, list[tuple[str, list[str]]]]:
    """The shell script of a page's blocks (each console command after a line that
    marks it) and each console command with what the page shows it printing."""
    script: list[str] = []
    expected: list[tuple[str, list[str]]] = []
    for language, body in blocks(text):
        if language == "sh":
            script.append(body)
            continue
        for number, (command, lines) in enumerate(console(body), len(expected)):
            script.append(f"echo '{MARK}{number}'\n{command}")
            expected.append((command, lines))
    return "\n".join(script), expected


@pytest.mark.parametrize(
    "text",
    [
        section("## A real session"),
        TUTORIAL.split("\n## 3.", 1)[1].split("\n## 6.", 1)[0],
    ],
    ids=["README", "tutorial"],
)
def test_a_real_session_prints_what_the_page_shows(
    text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    use_identity(monkeypatch, tmp_path)
    script, expected = session(text)
    printed = run_script(script, home, tmp_path)
    outputs = re.split(rf"^{MARK}\d+\n", printed, flags=re.MULTILINE)
    assert outputs[0] == ""
    assert len(outputs) - 1 == len(expected)
    for (command, lines), out in zip(expected, outputs[1:], strict=True):
        if sys.version_info < (3, 11):  # unittest names a test without its method before
            out = out.replace("(test_slug.SlugTest)", "(test_slug.SlugTest.test_accents)")
        lines = [line.replace("sealed and confined", LEVEL) for line in lines]
        assert shown(lines, str(home)).fullmatch(out), f"$ {command}\n{out}"


def test_the_quickstart_starts_a_loop_whose_check_catches_the_false_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = blocks(section("Then, in your project:").split("\n\n", 1)[1])[0][1]
    lines = [
        line for line in quick.split("\n") if not line.startswith(("ralphstate install", "claude"))
    ]
    project = tmp_path / "project"
    project.mkdir()
    use_identity(monkeypatch, tmp_path)
    (project / "test_export.py").write_text("def test_export():\n    assert False\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    env_home = tmp_path / "home"
    env_home.mkdir()
    if subprocess.run([sys.executable, "-c", "import pytest"]).returncode != 0:
        pytest.skip("the quickstart's check runs pytest")
    out, err = at_terminal("\n".join(lines), env_home, project)
    assert "FAIL  tests pass" in out, out + err
    state = json.loads((project / ".loop" / "state.json").read_text(encoding="utf-8"))
    assert state["checks"] == {"tests pass": "python3 -m pytest -q"}
    assert state["evidence"]["tests pass"]["result"] == "failing"
