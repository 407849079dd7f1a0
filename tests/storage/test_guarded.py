"""The guarded files in real git repositories (storage/repo/testfiles.py, storage/repo/guarded.py):
the default set a python and a javascript project start with, and what `compare` finds
after the approved tree: changed and deleted files pause, new test configuration pauses,
new tests are listed; ignored files are never seen, and the repository's own index is
never touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from ralphstate.core import limits
from ralphstate.storage.repo import guarded, testfiles
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers.gitrepo import git, init_repo, use_identity

PYTHON = {
    "src/shop/cart.py": "def total(items):\n    return sum(items)\n",
    "src/shop/test_inline.py": "def test_inline():\n    assert True\n",
    "tests/test_cart.py": (
        "from shop.cart import total\n\ndef test_total():\n    assert total([1, 2]) == 3\n"
    ),
    "tests/unit/fixtures/data.json": "{}\n",
    "tests/conftest.py": "import pytest\n",
    "conftest.py": "collect_ignore = []\n",
    "pytest.ini": "[pytest]\naddopts = -q\n",
    "tox.ini": "[tox]\n",
    "pyproject.toml": "[project]\nname = 'shop'\n",
    "scripts/ci.sh": "pytest\n",
    "docs/testing.md": "how we test\n",
    ".gitignore": "build/\n.venv/\n.loop/\n",
}
JS = {
    "package.json": '{"scripts": {"test": "jest"}}\n',
    "jest.config.js": "module.exports = {};\n",
    "src/cart.js": "export const total = (xs) => xs.reduce((a, b) => a + b, 0);\n",
    "src/cart.test.js": "test('total', () => expect(1).toBe(1));\n",
    "src/components/Button.spec.tsx": "it('renders', () => {});\n",
    "src/__tests__/api.js": "test('api', () => {});\n",
    "e2e/login.ts": "test('login', async () => {});\n",
    "playwright.config.ts": "export default {};\n",
    ".gitignore": "node_modules/\n",
}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "shop"
    root.mkdir()
    init_repo(root, PYTHON)
    return root


def at(root: Path) -> LoopPaths:
    return LoopPaths(root, root / ".loop")


def approved(root: Path, guards: list[str] | None = None) -> tuple[list[str], str]:
    """The default guards of `root` (or `guards`) and the tree a person approves."""
    found = guards if guards is not None else testfiles.default_guards(root, {})
    tree = guarded.snapshot(at(root), found)
    assert tree is not None
    return found, tree


def compared(root: Path, guards: list[str], tree: str) -> dict[str, object]:
    found = guarded.compare(at(root), tree, guards)
    assert found is not None
    return {k: v for k, v in found.as_dict().items() if k != "tree" and v}


def write(root: Path, name: str, text: str) -> None:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text)


# -- the default set -------------------------------------------------------------------


def test_a_python_project_guards_its_tests_their_configuration_and_what_a_check_names(
    repo: Path,
) -> None:
    write(repo, "build/tests/test_generated.py", "ignored\n")  # ignored: never guarded
    write(repo, "spec/test_untracked.py", "untracked\n")  # not tracked: not a test dir yet
    checks = {"tests pass": "bash scripts/ci.sh && pytest -q tests", "lint": "ruff check src"}
    assert testfiles.default_guards(repo, checks) == [
        "tests/",
        ":(glob)**/test_*.py",
        ":(glob)**/conftest.py",
        ":(glob)**/pytest.ini",
        ":(glob)**/tox.ini",
        "scripts/ci.sh",
    ]


def test_a_javascript_project_guards_its_test_directories_specs_and_configs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_identity(monkeypatch, tmp_path)
    root = tmp_path / "web"
    root.mkdir()
    init_repo(root, JS)
    write(root, "node_modules/lib/test/index.test.js", "ignored\n")
    assert testfiles.default_guards(root, {"tests pass": "npm test"}) == [
        "e2e/",
        "src/__tests__/",
        ":(glob)**/*.test.*",
        ":(glob)**/*.spec.*",
        ":(glob)**/jest.config.*",
        ":(glob)**/playwright.config.*",
    ]
    assert testfiles.summary(root, testfiles.default_guards(root, {})) == (
        "guarding 6 files (e2e/, src/__tests__/, **/*.test.*, …): changing them needs your"
        " review; --no-guard to opt out."
    )


def test_nested_test_directories_are_guarded_by_the_outermost(repo: Path) -> None:
    write(repo, "pkg/a/tests/test_a.py", "a\n")
    write(repo, "pkg/b/testing/helpers.py", "b\n")
    write(repo, "pkg/b/testing/test/deep.py", "c\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "more tests")
    guards = testfiles.default_guards(repo, {})
    assert guards[:3] == ["pkg/a/tests/", "pkg/b/testing/", "tests/"]


def test_test_directories_are_found_past_gits_output_bound(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for d in range(6):
        for f in range(8):
            write(repo, f"mod{d}/tests/test_{f:02}_with_a_longish_name.py", "x\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "many tests")
    monkeypatch.setattr(limits, "MAX_GIT_OUTPUT_BYTES", 400)  # a listing cut every round
    dirs = [g for g in testfiles.default_guards(repo, {}) if g.endswith("tests/")]
    assert dirs == [f"mod{d}/tests/" for d in range(6)] + ["tests/"]


def test_outside_git_nothing_is_guarded_and_init_says_so(tmp_path: Path) -> None:
    write(tmp_path, "tests/test_a.py", "a\n")
    assert testfiles.default_guards(tmp_path, {}) == []
    assert testfiles.summary(tmp_path, []) == (
        "not guarding any files: the project is not in a git repository"
    )
    assert testfiles.summary(tmp_path, None) == (
        "not guarding any files (--no-guard): changing the tests needs no review"
    )
    assert testfiles.status_line(tmp_path, ["tests/"]) == (
        "guarded: no files (not a git repository)"
    )
    assert guarded.snapshot(at(tmp_path), ["tests/"]) is None


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("tests/", "tests/"),
        ("  e2e/ ", "e2e/"),
        (":/ci/run.sh", ":(top)ci/run.sh"),
        (":(glob)**/*_check.py", ":(glob)**/*_check.py"),
        (":(literal)a[1].py", ":(literal)a[1].py"),
    ],
)
def test_a_guard_is_a_pathspec_that_names_files(given: str, kept: str) -> None:
    assert testfiles.checked(given) == kept


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ("", "a guard names some files: give it a path"),
        (":!tests/", "':!tests/' excludes files; a guard names the files it guards"),
        (":(exclude)x", "':(exclude)x' excludes files; a guard names the files it guards"),
        (":(attr:slow)x", "a guard may use the magic glob, icase, literal, top, not attr:slow"),
        (":*x", "':*x' uses a short pathspec magic; write it long, as :(glob)PATH"),
    ],
)
def test_a_guard_that_names_no_files_is_refused(given: str, problem: str) -> None:
    with pytest.raises(testfiles.BadGuard) as caught:
        testfiles.checked(given)
    assert str(caught.value) == problem


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("bash scripts/ci.sh", ["bash", "scripts/ci.sh"]),
        ("pytest --config=ci/pytest.ini -q && make", ["pytest", "ci/pytest.ini", "&&", "make"]),
        ('bash -c "./run.sh tests"', ["bash", "./run.sh", "tests"]),
        ("echo 'unclosed", ["echo", "'unclosed"]),
    ],
)
def test_the_words_of_a_check_that_could_name_a_file(command: str, words: list[str]) -> None:
    assert testfiles.command_words(command) == words


# -- compare -----------------------------------------------------------------------------


def test_one_guarded_file_is_it_and_none_says_how_to_add_some(repo: Path) -> None:
    assert testfiles.summary(repo, ["pytest.ini"]) == (
        "guarding 1 file (pytest.ini): changing it needs your review; --no-guard to opt out."
    )
    assert testfiles.summary(repo, []) == (
        "guarding no files: git tracks no tests here yet; `ralphstate config guard add PATH`"
        " guards some"
    )
    assert testfiles.status_line(repo, []) == "guarded: no files"


def test_nothing_changed_is_nothing_and_the_same_content_is_the_same_tree(repo: Path) -> None:
    guards, tree = approved(repo)
    (repo / "src" / "shop" / "cart.py").write_text("def total(items):\n    return 0\n")
    assert compared(repo, guards, tree) == {}  # the code is not guarded: fixing it is free
    assert guarded.snapshot(at(repo), guards) == tree


def test_a_changed_or_deleted_test_and_a_new_conftest_need_review(repo: Path) -> None:
    guards, tree = approved(repo)
    write(repo, "tests/test_cart.py", "def test_total():\n    pass\n")
    (repo / "tox.ini").unlink()
    write(repo, "src/shop/conftest.py", "import pytest\npytest.skip(allow_module_level=True)\n")
    found = guarded.compare(at(repo), tree, guards)
    assert found is not None
    assert (found.changed, found.deleted, found.new_config, found.new_tests) == (
        ["tests/test_cart.py"],
        ["tox.ini"],
        ["src/shop/conftest.py"],
        [],
    )
    assert found.to_review == ["tests/test_cart.py", "tox.ini", "src/shop/conftest.py"]


def test_new_tests_are_listed_never_for_review_tracked_or_not(repo: Path) -> None:
    guards, tree = approved(repo)
    write(repo, "tests/test_export.py", "def test_export():\n    assert True\n")
    write(repo, "tests/export/__init__.py", "")
    write(repo, "src/shop/test_more.py", "def test_more():\n    assert True\n")
    write(repo, "tests/unit/fixtures/more.json", "{}\n")
    assert compared(repo, guards, tree) == {
        "newTests": [
            "src/shop/test_more.py",
            "tests/export/__init__.py",
            "tests/test_export.py",
            "tests/unit/fixtures/more.json",
        ]
    }
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the agent commits its tests")
    assert compared(repo, guards, tree) == {
        "newTests": [
            "src/shop/test_more.py",
            "tests/export/__init__.py",
            "tests/test_export.py",
            "tests/unit/fixtures/more.json",
        ]
    }


def test_new_configuration_is_found_tracked_and_untracked_and_ignored_files_never(
    repo: Path,
) -> None:
    guards, tree = approved(repo)
    write(repo, "tests/pytest.ini", "[pytest]\naddopts = -k nothing\n")  # under a guard
    write(repo, "src/sitecustomize.py", "import os\n")
    write(repo, "build/conftest.py", "ignored\n")
    write(repo, ".venv/lib/site-packages/x.pth", "ignored\n")
    write(repo, "build/tests/test_x.py", "ignored\n")
    assert compared(repo, guards, tree) == {
        "newConfig": ["src/sitecustomize.py", "tests/pytest.ini"]
    }
    write(repo, "lib/pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-k nothing'\n")
    git(repo, "add", "lib/pyproject.toml")  # tracked now, and outside every guard
    assert compared(repo, guards, tree) == {
        "newConfig": ["lib/pyproject.toml", "src/sitecustomize.py", "tests/pytest.ini"]
    }


def test_configuration_that_was_there_at_approval_is_not_new_even_unguarded(repo: Path) -> None:
    guards, tree = approved(repo, ["tests/"])  # pyproject.toml, tox.ini: not guarded
    write(repo, "pyproject.toml", "[project]\nname = 'shop'\n")
    (repo / "tox.ini").unlink()
    assert compared(repo, guards, tree) == {}
    # but a pyproject.toml that comes to hold pytest's settings changes how tests run
    write(repo, "pyproject.toml", "[tool.pytest.ini_options]\naddopts = '-q'\n")
    assert compared(repo, guards, tree) == {"changed": ["pyproject.toml"]}


def test_a_test_made_a_link_or_executable_is_a_change(repo: Path) -> None:
    guards, tree = approved(repo)
    (repo / "tests" / "conftest.py").chmod(0o755)
    (repo / "tests" / "test_cart.py").unlink()
    (repo / "tests" / "test_cart.py").symlink_to("conftest.py")
    assert compared(repo, guards, tree) == {"changed": ["tests/conftest.py", "tests/test_cart.py"]}


def test_committing_a_change_does_not_approve_it(repo: Path) -> None:
    guards, tree = approved(repo)
    write(repo, "tests/test_cart.py", "def test_total():\n    pass\n")
    git(repo, "commit", "-qam", "weaken")
    assert compared(repo, guards, tree) == {"changed": ["tests/test_cart.py"]}


def test_a_loop_in_a_subdirectory_guards_and_names_files_from_its_root(repo: Path) -> None:
    sub = repo / "services" / "api"
    write(sub, "tests/test_api.py", "def test_api():\n    assert True\n")
    write(sub, "conftest.py", "import pytest\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a service")
    guards = testfiles.default_guards(sub, {})
    assert guards == ["tests/", ":(glob)**/conftest.py"]
    guards, tree = approved(sub, guards)
    write(sub, "tests/test_api.py", "def test_api():\n    pass\n")
    write(sub, "tests/conftest.py", "import pytest\n")
    write(repo, "tests/test_cart.py", "outside the loop's project\n")
    assert compared(sub, guards, tree) == {
        "changed": ["tests/test_api.py"],
        "newConfig": ["tests/conftest.py"],
    }


def test_the_repositorys_index_is_never_touched(repo: Path) -> None:
    guards, tree = approved(repo)
    write(repo, "tests/test_cart.py", "changed\n")
    write(repo, "tests/conftest_new/conftest.py", "new\n")
    git(repo, "add", "tests/test_cart.py")
    index = (repo / ".git" / "index").read_bytes()
    status = git(repo, "status", "--porcelain")
    found = guarded.compare(at(repo), tree, guards)
    assert found is not None and found.to_review
    assert guarded.diff(at(repo), tree, found.to_review)
    assert guarded.snapshot(at(repo), guards) != tree
    assert (repo / ".git" / "index").read_bytes() == index
    assert git(repo, "status", "--porcelain") == status


def test_an_approved_tree_git_does_not_hold_is_no_answer(repo: Path) -> None:
    guards, _tree = approved(repo)
    assert guarded.compare(at(repo), "0" * 40, guards) is None
    assert guarded.compare(at(repo), "not a tree", guards) is None
    assert guarded.diff(at(repo), "0" * 40, ["tests/test_cart.py"]) is None
    assert guarded.restore(at(repo), "0" * 40, ["tests/test_cart.py"]) is None


def test_thousands_of_test_files_compare_by_their_stat_data(repo: Path) -> None:
    """About 3,000 test files: snapshot and compare read again only what changed (the
    figures are in docs/explanation/proof.md, measured apart from the suite)."""
    for i in range(3000):
        write(repo, f"tests/pkg{i % 50}/test_m{i}.py", f"def test_{i}():\n    assert {i}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "3000 tests")
    guards, tree = approved(repo)
    assert compared(repo, guards, tree) == {}
    write(repo, "tests/pkg7/test_m1507.py", "def test_1507():\n    pass\n")
    (repo / "tests" / "pkg9" / "test_m9.py").unlink()
    write(repo, "tests/pkg3/test_new.py", "def test_new():\n    assert True\n")
    assert compared(repo, guards, tree) == {
        "changed": ["tests/pkg7/test_m1507.py"],
        "deleted": ["tests/pkg9/test_m9.py"],
        "newTests": ["tests/pkg3/test_new.py"],
    }


# -- diff and restore ----------------------------------------------------------------------


def test_the_diff_runs_from_the_approved_content_to_the_work_trees(repo: Path) -> None:
    _guards, tree = approved(repo)
    write(repo, "tests/test_cart.py", "def test_total():\n    pass\n")
    write(repo, "src/conftest.py", "import pytest\n")
    shown = guarded.diff(at(repo), tree, ["tests/test_cart.py", "src/conftest.py"])
    assert shown is not None
    assert "+++ b/src/conftest.py\n@@ -0,0 +1 @@\n+import pytest\n" in shown
    assert "-    assert total([1, 2]) == 3\n+    pass\n" in shown
    assert guarded.diff(at(repo), tree, []) == ""


@pytest.mark.parametrize("extra", [0, 1], ids=["at the limit", "one byte more"])
def test_max_guard_diff_bytes(repo: Path, extra: int) -> None:
    _guards, tree = approved(repo)
    write(repo, "tests/test_cart.py", "".join(f"line {i}\n" for i in range(2000)))
    whole = guarded.diff(at(repo), tree, ["tests/test_cart.py"], limit_bytes=10**6)
    assert whole is not None
    size = len(whole.encode())
    shown = guarded.diff(at(repo), tree, ["tests/test_cart.py"], limit_bytes=size - extra)
    assert shown is not None
    if extra:
        kept, _, note = shown.rpartition("… the diff goes on")
        assert whole.startswith(kept) and kept.endswith("\n") and len(kept.encode()) < size
        assert note == f" (shown: its first {len(kept.encode()):,} bytes)\n"
    else:
        assert shown == whole
    assert limits.MAX_GUARD_DIFF_BYTES == 64 * 1024  # what `review` shows by default


def test_restore_puts_back_the_approved_files_and_removes_new_ones(repo: Path) -> None:
    guards, tree = approved(repo)
    before = (repo / "tests" / "test_cart.py").read_text()
    write(repo, "tests/test_cart.py", "def test_total():\n    pass\n")
    (repo / "tests" / "conftest.py").unlink()
    write(repo, "src/conftest.py", "import pytest\n")
    write(repo, "tests/test_export.py", "def test_export():\n    assert True\n")
    index = (repo / ".git" / "index").read_bytes()
    found = guarded.compare(at(repo), tree, guards)
    assert found is not None
    done = guarded.restore(at(repo), tree, found.to_review)
    assert done is not None
    assert (done.back, done.removed) == (
        ["tests/test_cart.py", "tests/conftest.py"],
        ["src/conftest.py"],
    )
    assert (repo / "tests" / "test_cart.py").read_text() == before
    assert (repo / "tests" / "conftest.py").read_text() == "import pytest\n"
    assert not (repo / "src" / "conftest.py").exists()
    assert compared(repo, guards, tree) == {"newTests": ["tests/test_export.py"]}
    assert (repo / ".git" / "index").read_bytes() == index


@pytest.mark.parametrize(
    ("before", "after", "counts"),
    [
        ("[project]\nname = 'x'\n", "[project]\nname = 'x'\ndependencies = ['a']\n", False),
        (
            "[project]\nname = 'x'\n",
            "[project]\nname = 'x'\n[tool.pytest.ini_options]\naddopts = '-k \"not a\"'\n",
            True,
        ),
        (
            "[tool.pytest.ini_options]\naddopts = '-q'\n",
            "[tool.pytest.ini_options]\naddopts = '-q'\n[project]\ndependencies = ['a']\n",
            True,
        ),
    ],
)
def test_a_pyproject_counts_when_it_holds_pytests_settings(
    repo: Path, before: str, after: str, counts: bool
) -> None:
    (repo / "pyproject.toml").write_text(before)
    git(repo, "add", "pyproject.toml")
    git(repo, "commit", "-qm", "pyproject")
    guards, tree = approved(repo)
    (repo / "pyproject.toml").write_text(after)
    found = guarded.compare(at(repo), tree, guards)
    assert found is not None
    assert ("pyproject.toml" in found.changed) is counts
