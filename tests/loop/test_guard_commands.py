"""The guarded files through the command line: `init` names them in one line and keeps
them in `guards` (`--guard` adds, `--no-guard` opts out, a template adds its own),
`config guard` changes them with a history line each, and `status` shows them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState
from tests.helpers import run_process
from tests.helpers.gitrepo import init_repo, use_identity

FILES = {
    "app.py": "def add(a, b):\n    return a + b\n",
    "tests/test_app.py": "from app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "tests/test_more.py": "def test_more():\n    assert True\n",
    "conftest.py": "",
    "ci/run.sh": "python -m pytest -q\n",
}
LINE = (
    "guarding 4 files (tests/, conftest.py, ci/run.sh): changing them needs your review;"
    " --no-guard to opt out.\n"
)


@pytest.fixture
def repo(project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    use_identity(monkeypatch, tmp_path)
    init_repo(project, FILES)
    return project


def state_of(root: Path) -> st.State:
    return st.parse((root / ".loop" / "state.json").read_bytes())


def events(root: Path, *names: str) -> list[dict[str, Any]]:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    found = [orjson.loads(line) for line in lines]
    return [
        {k: v for k, v in e.items() if k not in ("at", "iteration", "loop", "actor")}
        for e in found
        if e["event"] in names
    ]


def test_init_guards_the_tests_and_says_so_in_one_line(repo: Path) -> None:
    template = repo / "t.json"
    template.write_text(json.dumps({"spec": "Fix add", "checks": {"tests": "bash ci/run.sh"}}))
    done = run_process(["init", "--from", "t.json", "-c", "tests"], cwd=repo)
    assert (done.returncode, done.stderr) == (0, b""), done
    lines = done.stdout.decode().splitlines(keepends=True)
    assert lines[1] == LINE
    assert state_of(repo)["guards"] == ["tests/", ":(glob)**/conftest.py", "ci/run.sh"]
    status = run_process(["status"], cwd=repo).stdout.decode()
    assert "\nguarded: 4 files (tests/, conftest.py, ci/run.sh)\n" in status


def test_guard_adds_and_no_guard_opts_out(repo: Path, rs: Any) -> None:
    done = rs("init", "Fix add", "--guard", "app.py", "--guard", ":/ci/")
    assert (done.code, done.err) == (0, "")
    assert state_of(repo)["guards"] == ["tests/", ":(glob)**/conftest.py", "app.py", ":(top)ci/"]
    assert "guarding 5 files (tests/, conftest.py, app.py, …)" in done.out
    done = rs("init", "--force", "Fix add", "--no-guard")
    assert done.out.splitlines()[2] == (
        "not guarding any files (--no-guard): changing the tests needs no review"
    )
    assert state_of(repo)["guards"] is None
    assert "\nguarded: off\n" in rs("status").out


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--guard", "x", "--no-guard"], "give --guard or --no-guard, not both."),
        (["--guard", ":!tests/"], "--guard: ':!tests/' excludes files; a guard names the files"),
        (
            ["--guard", "../elsewhere"],
            "--guard: ../elsewhere: '../elsewhere' is outside repository",
        ),
    ],
)
def test_init_refuses_guards_it_cannot_keep(
    repo: Path, rs: Any, args: list[str], problem: str
) -> None:
    done = rs("init", "Fix add", *args)
    assert done.code == 1 and done.err.startswith(f"ralphstate: {problem}")
    assert not (repo / ".loop" / "state.json").exists()


def test_a_template_adds_its_guards_and_cannot_drop_the_default_ones(repo: Path, rs: Any) -> None:
    template = repo / "t.json"
    template.write_text(json.dumps({"spec": "Fix add", "guards": ["app.py"]}))
    assert rs("init", "--from", "t.json").code == 0
    assert state_of(repo)["guards"] == ["tests/", ":(glob)**/conftest.py", "app.py"]
    template.write_text(json.dumps({"spec": "Fix add", "guards": None}))
    assert rs("init", "--force", "--from", "t.json").code == 0
    assert state_of(repo)["guards"] == ["tests/", ":(glob)**/conftest.py"]


def test_config_guard_changes_the_guards_with_a_history_line_each(repo: Path, rs: Any) -> None:
    assert rs("init", "Fix add").code == 0
    assert rs("config", "guard").out == "tests/\n:(glob)**/conftest.py\n"
    assert rs("config", "guard", "add", "app.py", "ci/").out == (
        "guarded: 5 files (tests/, conftest.py, app.py, …)\n"
    )
    assert rs("config", "guard", "add", "app.py").out.endswith(" (unchanged)\n")
    assert rs("config", "guard", "remove", "tests/").out == (
        "guarded: 3 files (conftest.py, app.py, ci/)\n"
    )
    assert rs("config", "guard", "off").out == "guarded: off\n"
    assert rs("config", "guard", "on").out == "guarded: 3 files (tests/, conftest.py)\n"
    assert "\nguard: tests/, :(glob)**/conftest.py\n" in rs("config").out
    assert events(repo, "guard_added", "guard_removed") == [
        {"event": "guard_added", "paths": ["app.py", "ci/"], "on": False},
        {"event": "guard_removed", "paths": ["tests/"], "off": False},
        {
            "event": "guard_removed",
            "paths": [":(glob)**/conftest.py", "app.py", "ci/"],
            "off": True,
        },
        {"event": "guard_added", "paths": ["tests/", ":(glob)**/conftest.py"], "on": True},
    ]


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (
            ["remove", "nope/"],
            "'nope/' is not guarded; the guards are: tests/, :(glob)**/conftest.py.",
        ),
        (["add"], "config guard add takes one PATH or more."),
        (["off", "tests/"], "config guard off takes no PATH."),
        (["drop", "x"], "config guard takes add, remove, off, on, not 'drop'."),
        (["add", "../x"], "../x: '../x' is outside repository at '{repo}'."),
        (
            ["add", ":(exclude)x"],
            "':(exclude)x' excludes files; a guard names the files it guards.",
        ),
    ],
)
def test_config_guard_refuses_with_one_sentence_and_changes_nothing(
    repo: Path, rs: Any, args: list[str], problem: str
) -> None:
    assert rs("init", "Fix add").code == 0
    before = (repo / ".loop" / "state.json").read_bytes()
    done = rs("config", "guard", *args)
    problem = problem.format(repo=repo)
    assert (done.code, done.out, done.err) == (1, "", f"ralphstate: {problem}\n")
    assert (repo / ".loop" / "state.json").read_bytes() == before


def test_other_settings_take_one_value(repo: Path, rs: Any) -> None:
    assert rs("init", "Fix add").code == 0
    done = rs("config", "spec", "two", "words")
    assert (done.code, done.err) == (
        1,
        "ralphstate: spec takes one value; quote a value that has spaces.\n",
    )
    assert rs("config", "nope", "a", "b").err.startswith("ralphstate: no setting 'nope'")


def test_a_loop_from_before_guards_is_not_guarded(project: Path, rs: Any) -> None:
    (project / ".loop").mkdir()
    (project / ".loop" / "state.json").write_text(json.dumps({"spec": "old", "criteria": ["a"]}))
    assert state_of(project)["guards"] is None
    assert "\nguarded: off\n" in rs("status").out


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one more"])
def test_max_guards(extra: int) -> None:
    raw = {"guards": [f"dir{i}/" for i in range(limits.MAX_GUARDS + extra)]}
    if extra:
        with pytest.raises(CorruptState, match="at most 200 paths"):
            st.normalise(raw)
    else:
        assert len(st.normalise(raw)["guards"] or []) == limits.MAX_GUARDS


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one more"])
def test_max_guard_chars(extra: int) -> None:
    raw = {"guards": ["d" * (limits.MAX_GUARD_CHARS + extra)]}
    if extra:
        with pytest.raises(CorruptState, match="at most 1000 characters"):
            st.normalise(raw)
    else:
        assert st.normalise(raw)["guards"] == raw["guards"]


@pytest.mark.parametrize("value", [[""], ["  "], "tests/", [1], {"a": 1}])
def test_guards_must_be_null_or_a_list_of_paths(value: object) -> None:
    with pytest.raises(CorruptState, match="'guards' must be null or a list"):
        st.normalise({"guards": value})
