"""Every command's user errors: exit 1, one line on stderr starting `ralphstate: `, no
traceback, nothing changed on disk; and every command finding the loop above."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from ralphstate.storage.peruser import ledger
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.commands import (
    NO_LOOP,
    edit,
    state_of,
)

# -- finding the loop --------------------------------------------------------------------


def test_commands_find_the_loop_above(loop: Path, rs: Any) -> None:
    deep = loop / "src" / "pkg"
    deep.mkdir(parents=True)
    os.chdir(deep)
    assert rs("criteria", "set", "tests pass", "true").code == 0
    assert state_of(loop)["criteriaStatus"]["tests pass"] is True


# -- user errors ------------------------------------------------------------------------

NEEDS_A_LOOP = [
    ("status",),
    ("status", "--json"),
    ("show",),
    ("log",),
    ("criteria", "list"),
    ("criteria", "add", "x"),
    ("criteria", "set", "a", "true"),
    ("criteria", "remove", "a"),
    ("step", "add", "x"),
    ("step", "done", "1"),
    ("step", "undo", "1"),
    ("pause",),
    ("resume",),
    ("adopt",),
    ("cancel",),
]

CRITERIA = "(criteria: 'tests pass', 'lint clean')"
STEPS = "(steps: 'write it', 'test it', 'ship it')"

ERRORS = [
    *[pytest.param("none", args, NO_LOOP, id="no-loop " + " ".join(args)) for args in NEEDS_A_LOOP],
    *[
        pytest.param(
            "empty-dir",
            args,
            "ralphstate: no loop here: .loop/state.json does not exist"
            " (start one with `ralphstate init`).\n",
            id="empty-dir " + " ".join(args),
        )
        for args in NEEDS_A_LOOP
    ],
    (
        "loop",
        ("criteria", "set", "nope", "true"),
        f"ralphstate: no criterion 'nope' in this loop {CRITERIA}.\n",
    ),
    (
        "loop",
        ("criteria", "set", "3", "true"),
        f"ralphstate: no criterion '3' in this loop {CRITERIA}.\n",
    ),
    (
        "loop",
        ("criteria", "set", "0", "no"),
        f"ralphstate: no criterion '0' in this loop {CRITERIA}.\n",
    ),
    (
        "loop",
        ("criteria", "remove", "nope"),
        f"ralphstate: no criterion 'nope' in this loop {CRITERIA}.\n",
    ),
    (
        "loop",
        ("criteria", "set", "tests pass", "maybe"),
        "ralphstate: 'maybe' is not true or false (use true/false, yes/no or 1/0).\n",
    ),
    (
        "loop",
        ("criteria", "set", "nope", "maybe"),
        "ralphstate: 'maybe' is not true or false (use true/false, yes/no or 1/0).\n",
    ),
    (
        "loop",
        ("criteria", "add", "tests pass"),
        "ralphstate: criterion 'tests pass' is already in this loop.\n",
    ),
    ("loop", ("criteria", "add", "  "), "ralphstate: a criterion needs a name, not only spaces.\n"),
    ("loop", ("step", "done", "nope"), f"ralphstate: no step 'nope' in this loop {STEPS}.\n"),
    ("loop", ("step", "done", "4"), f"ralphstate: no step '4' in this loop {STEPS}.\n"),
    ("loop", ("step", "undo", "nope"), f"ralphstate: no step 'nope' in this loop {STEPS}.\n"),
    ("loop", ("step", "add", "write it"), "ralphstate: step 'write it' is already in this loop.\n"),
    ("loop", ("step", "add", ""), "ralphstate: a step needs some text, not only spaces.\n"),
    (
        "loop",
        ("init", "Other"),
        (
            "ralphstate: an unfinished loop is already here (in_progress, spec: 'Build it');"
            " use --force to replace it (a copy is kept).\n"
        ),
    ),
    ("complete", ("pause",), "ralphstate: the loop is complete, not in progress.\n"),
    ("cancelled", ("pause",), "ralphstate: the loop is cancelled, not in progress.\n"),
    (
        "cancelled",
        ("resume",),
        "ralphstate: the loop was cancelled; start a new one with `ralphstate init`.\n",
    ),
    (
        "complete",
        ("resume",),
        (
            "ralphstate: the loop is complete; set a criterion back to false first"
            " (ralphstate criteria set NAME false) or start a new loop.\n"
        ),
    ),
    (
        "corrupt",
        ("criteria", "set", "tests pass", "true"),
        (
            "ralphstate: .loop/state.json is not valid JSON (line 1, column 20): trailing comma"
            " is not allowed; it was left untouched.\n"
        ),
    ),
    (
        "corrupt",
        ("status",),
        (
            "ralphstate: .loop/state.json is not valid JSON (line 1, column 20): trailing comma"
            " is not allowed; it was left untouched.\n"
        ),
    ),
    ("none", ("init",), 'ralphstate: a loop needs a spec: ralphstate init "what to build".\n'),
    ("none", ("init", "x", "--marker", " "), "ralphstate: a marker cannot be empty.\n"),
    (
        "none",
        ("init", "--from", "missing.json"),
        "ralphstate: cannot read template missing.json: No such file or directory.\n",
    ),
    (
        "none",
        ("init", "--from", "bad.json"),
        "ralphstate: template bad.json is not valid JSON (line 1, column 10).\n",
    ),
    (
        "none",
        ("init", "--from", "future.json"),
        (
            "ralphstate: template future.json has schema version 2, newer than this ralphstate"
            " understands (1); upgrade ralphstate to use it\n"
        ),
    ),
    (
        "none",
        ("init", "--from", "typo.json"),
        "ralphstate: template typo.json: 'maxIterations' must be between 1 and 100000, not 0\n",
    ),
    (
        "none",
        ("init", "--from", "empty.md"),
        "ralphstate: the template has no `- [ ]` items under a Criteria or Steps heading.\n",
    ),
]


def make(kind: str, project: Path, rs: Any) -> None:
    (project / "bad.json").write_text('{"spec": }')
    (project / "future.json").write_text('{"version": 2, "spec": "x"}')
    (project / "typo.json").write_text('{"spec": "x", "maxIterations": 0}')
    (project / "empty.md").write_text("# Title\n\nJust prose.\n")
    if kind == "none":
        return
    if kind == "empty-dir":
        (project / ".loop").mkdir()
        return
    rs(
        "init",
        "Build it",
        "-c",
        "tests pass",
        "-c",
        "lint clean",
        "-s",
        "write it",
        "-s",
        "test it",
        "-s",
        "ship it",
    )
    if kind == "corrupt":
        (project / ".loop" / "state.json").write_bytes(b'{"spec": "Build it",\n}\n')
    elif kind == "paused":
        rs("pause")
    elif kind == "cancelled":
        rs("cancel")
    elif kind == "complete":  # as ralphstate itself completes it: its ledger knows
        edit(project, status="complete", criteriaStatus={"tests pass": True, "lint clean": True})
        ledger.note_status(LoopPaths(project, project / ".loop"), state_of(project))


def tree(root: Path, home: Path) -> dict[str, bytes]:
    files = {}
    for base in (root, home):
        for path in sorted(base.rglob("*")):
            if path.is_file() and path.name not in ("state.lock", "loops.json.lock"):
                files[str(path)] = path.read_bytes()
    return files


@pytest.mark.parametrize(("kind", "args", "message"), ERRORS)
def test_user_errors(
    project: Path, rs: Any, isolated: Path, kind: str, args: tuple[str, ...], message: str
) -> None:
    make(kind, project, rs)
    before = tree(project, isolated)
    result = rs(*args)
    assert result.err == message
    assert (result.code, result.out) == (1, "")
    assert tree(project, isolated) == before


def test_a_user_error_in_a_real_process(project: Path) -> None:
    from tests.helpers import run_process

    done = run_process(["criteria", "set", "x", "true"], cwd=project)
    assert (done.returncode, done.stdout, done.stderr) == (1, b"", NO_LOOP.encode())


@pytest.mark.parametrize(
    "args",
    [
        ("init", "x", "--max-iterations", "0"),
        ("init", "x", "--stall-limit", "-1"),
        ("resume", "--more", "0"),
        ("log", "-n", "0"),
    ],
    ids=" ".join,
)
def test_zero_is_never_unlimited(project: Path, rs: Any, args: tuple[str, ...]) -> None:
    if args[0] != "init":
        rs("init", "Build it")
    before = tree(project, project)
    result = rs(*args)
    assert result.code == 1
    assert result.err.count("\n") == 1 and result.err.startswith("ralphstate: Invalid value for ")
    assert "must be at least 1 (there is no unlimited)." in result.err
    assert "Traceback" not in result.err
    assert tree(project, project) == before


@pytest.mark.parametrize(
    "args,expected",
    [
        (("frobnicate",), "ralphstate: No such command 'frobnicate'. (see `ralphstate --help`)\n"),
        (
            ("criteria", "set", "tests pass"),
            "ralphstate: Missing argument 'VALUE'. (see `ralphstate criteria set --help`)\n",
        ),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_1(
    project: Path, rs: Any, args: tuple[str, ...], expected: str
) -> None:
    result = rs(*args)
    assert (result.code, result.out, result.err) == (1, "", expected)
