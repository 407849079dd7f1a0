"""Whether a check's program can be found (loop/program.py): read from the command line
as the platform's shell would start it, looked up on PATH or from the project root, and
for `python -m` asked of that Python (a real process)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ralphstate.loop import program

POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell words")
PYTHON = Path(sys.executable).name


@POSIX
@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("pytst -q", 'no program "pytst" on PATH'),
        ("CI=1 2>/dev/null nosuchtool --all", 'no program "nosuchtool" on PATH'),
        ("> out.txt nosuchtool", 'no program "nosuchtool" on PATH'),
        ("nosuchtool && git status", 'no program "nosuchtool" on PATH'),
        ("./scripts/lint.sh", 'no file "./scripts/lint.sh" in the project'),
        ("/nowhere/at/all/lint", 'no file "/nowhere/at/all/lint"'),
        ("git diff --quiet", None),
        ("sh -c 'exit 0'", None),
        ("test -f README.md", None),  # builtins and keywords are not programs
        ("[ -f README.md ]", None),
        ("cd sub && ./run-tests", None),
        ("for f in *.py; do nosuchtool $f; done", None),  # not followed: not said
        ("$VENV/bin/pytest -q", None),  # the shell expands it: cannot be told
        ("echo 'unclosed", None),
        ("", None),
    ],
)
def test_the_first_program_of_a_check(tmp_path: Path, command: str, said: str | None) -> None:
    assert program.missing(command, tmp_path) == said


@POSIX
def test_a_path_is_read_from_the_project_root_and_must_run(tmp_path: Path) -> None:
    script = tmp_path / "scripts" / "lint.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\nexit 0\n")
    assert program.missing("scripts/lint.sh --strict", tmp_path) == (
        '"scripts/lint.sh" is not executable (`chmod +x scripts/lint.sh`)'
    )
    script.chmod(0o755)
    assert program.missing("./scripts/lint.sh --strict", tmp_path) is None


def test_python_m_asks_that_python_for_the_module(tmp_path: Path) -> None:
    python = f'"{sys.executable}"'
    assert program.missing(f"{python} -m unittest -q", tmp_path) is None
    assert program.missing(f"{python} -X dev -m nosuchmodule_xyz", tmp_path) == (
        f'{PYTHON} finds no module "nosuchmodule_xyz"'
    )
    # From the project root, as `python -m` runs: the project's own package is found,
    # and a dotted name is asked by its top-level package only (none of its code runs).
    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("raise SystemExit('imported')\n")
    assert program.missing(f"{python} -m mypkg.cli --help", tmp_path) is None
    assert program.missing(f"{python} -c 'import nosuchmodule_xyz'", tmp_path) is None


def test_the_warning_names_the_criterion_and_the_way_to_correct_it(tmp_path: Path) -> None:
    assert program.warning("lint", "git diff --quiet", tmp_path) is None
    assert program.warning("lint", "nosuchtool .", tmp_path) == (
        "warning: the check of 'lint' would fail now: no program \"nosuchtool\" on PATH;"
        ' correct it with `ralphstate criteria check "lint" "COMMAND"` unless the'
        " loop's work provides it."
    )
