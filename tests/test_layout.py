"""The shape of the package, read from its source: one name, one meaning (no two modules
share a file name, no import alias that dodges a name); no module over 450 lines; one
home for child processes (only storage/children.py calls subprocess to start one)."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

import ralphstate

PACKAGE = Path(ralphstate.__file__).parent
MAX_LINES = 450
# Abbreviations and a compatibility import, not names dodged: `state as st` everywhere,
# `datetime as dt`, and `tomli as tomllib` before Python 3.11.
ALIASES = {("ralphstate.core.state", "st"), ("datetime", "dt"), ("tomli", "tomllib")}
# The calls that start a child process, by module; storage/children.py alone makes them.
STARTERS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput"},
    "os": {"system", "popen", "posix_spawn", "posix_spawnp", "spawnv", "spawnvp", "spawnl"},
}
CHILDREN = PACKAGE / "storage" / "children.py"


def modules(root: Path = PACKAGE) -> list[Path]:
    return sorted(root.rglob("*.py"))


def shown(path: Path, root: Path = PACKAGE) -> str:
    return path.relative_to(root).as_posix()


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def duplicate_names(root: Path = PACKAGE) -> dict[str, list[str]]:
    """File names (other than __init__.py) that more than one module under `root` has."""
    found = collections.defaultdict(list)
    for path in modules(root):
        if path.name != "__init__.py":
            found[path.name].append(shown(path, root))
    return {name: places for name, places in found.items() if len(places) > 1}


def too_long(root: Path = PACKAGE) -> dict[str, int]:
    """The modules under `root` over MAX_LINES lines, with their lengths."""
    lengths = {
        shown(path, root): len(path.read_text(encoding="utf-8").splitlines())
        for path in modules(root)
    }
    return {name: lines for name, lines in lengths.items() if lines > MAX_LINES}


def aliases(module: ast.Module) -> list[tuple[str, str]]:
    """(what is imported, the name it is bound to) of each `import X as Y` and
    `from M import X as Y` whose Y is not X (`import a.b as b` and `from m import b as
    b` bind the name they import)."""
    found = []
    for node in ast.walk(module):
        if isinstance(node, ast.Import | ast.ImportFrom):
            prefix = ""
            if isinstance(node, ast.ImportFrom):
                prefix = "." * node.level + (f"{node.module}." if node.module else "")
            found += [
                (prefix + alias.name, alias.asname)
                for alias in node.names
                if alias.asname is not None and alias.asname != alias.name.rpartition(".")[2]
            ]
    return found


def dodges(root: Path = PACKAGE) -> list[str]:
    """The aliases under `root` that are not in ALIASES."""
    return [
        f"{shown(path, root)}: {name} as {alias}"
        for path in modules(root)
        for name, alias in aliases(tree(path))
        if (name, alias) not in ALIASES
    ]


def child_starts(module: ast.Module) -> list[int]:
    """The lines that call one of STARTERS: through its module (`subprocess.run(...)`,
    under any name the module was imported as) or by a name imported from it (`from
    subprocess import Popen`)."""
    through: dict[str, set[str]] = {}
    direct: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            through |= {
                a.asname or a.name: STARTERS[a.name] for a in node.names if a.name in STARTERS
            }
        elif isinstance(node, ast.ImportFrom) and node.module in STARTERS:
            starters = STARTERS[node.module]
            direct |= {a.asname or a.name for a in node.names if a.name in starters}
    lines = []
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        called = node.func
        if (
            isinstance(called, ast.Attribute)
            and isinstance(called.value, ast.Name)
            and called.attr in through.get(called.value.id, ())
        ) or (isinstance(called, ast.Name) and called.id in direct):
            lines.append(node.lineno)
    return sorted(lines)


def test_no_two_modules_share_a_file_name() -> None:
    assert duplicate_names() == {}


def test_no_module_is_over_the_line_limit() -> None:
    assert too_long() == {}


def test_no_import_alias_dodges_a_name() -> None:
    assert dodges() == []


def test_only_storage_children_starts_a_child_process() -> None:
    starts = {
        shown(path): lines
        for path in modules()
        if path != CHILDREN and (lines := child_starts(tree(path)))
    }
    assert starts == {}
    assert child_starts(tree(CHILDREN))  # it does start them, and the scan sees it


def test_each_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    """On a package made to break each rule, each scan finds the break."""
    broken = {
        "a/loop.py": "import subprocess as sp\nsp.check_output(['git'])\n",
        "b/loop.py": "from subprocess import Popen\nPopen(['git'])\n" + "x = 1\n" * MAX_LINES,
        "c.py": "import os, os.path as path\nfrom ..core import state as st\nos.system('x')\n",
        "d.py": "import subprocess\nsubprocess.run(['git'])\nsubprocess.DEVNULL\n",
    }
    for name, text in broken.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert duplicate_names(tmp_path) == {"loop.py": ["a/loop.py", "b/loop.py"]}
    assert too_long(tmp_path) == {"b/loop.py": MAX_LINES + 2}
    assert dodges(tmp_path) == ["a/loop.py: subprocess as sp", "c.py: ..core.state as st"]
    starts = {shown(p, tmp_path): child_starts(tree(p)) for p in modules(tmp_path)}
    assert starts == {"a/loop.py": [2], "b/loop.py": [2], "c.py": [3], "d.py": [2]}
