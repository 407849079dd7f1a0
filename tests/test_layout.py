"""The shape of the package, read from its source: one name, one meaning (no two modules
share a file name, no import alias that dodges a name); no module over 450 lines, nor
one of the plugin's launcher (hooks/*.py); one home for child processes (only
storage/system/children.py calls subprocess to start one); one table of the state's
fields (only core/schema.py lists them by what they do)."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

import ralphstate
from ralphstate.core import schema
from tests.helpers import REPO

PACKAGE = Path(ralphstate.__file__).parent
MAX_LINES = 450
# The plugin's launcher, outside the package (it runs before ralphstate may be installed):
# its modules are held to the same cap.
LAUNCHER = REPO / "hooks"
# Abbreviations and a compatibility import, not names dodged: `state as st` everywhere,
# `datetime as dt`, and `tomli as tomllib` before Python 3.11.
ALIASES = {("ralphstate.core.state", "st"), ("datetime", "dt"), ("tomli", "tomllib")}
# The calls that start a child process, by module; storage/system/children.py alone makes them.
STARTERS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput"},
    "os": {"system", "popen", "posix_spawn", "posix_spawnp", "spawnv", "spawnvp", "spawnl"},
}
CHILDREN = PACKAGE / "storage" / "system" / "children.py"
# The one module that lists the state's fields by what they do (docs/explanation/design.md,
# "The state"). Anywhere else, three or more of the state's keys written together (a
# tuple, list or set of them, or a dict or keywords giving them literal values: a copy of
# their defaults) are a list of fields by role that the table no longer holds together:
# a role of the rows instead. A record built from a state's values (a history event, a
# view) names its keys by use, and is not one.
TABLE = PACKAGE / "core" / "schema.py"


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


def _literal(node: ast.expr) -> bool:
    """A value written out: a constant, an empty list, dict or tuple, or a CONSTANT's name."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    return isinstance(node, ast.Name) and node.id.isupper()


def _named(node: ast.expr | None, keys: frozenset[str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in keys:
        return node.value
    return None


def state_key_lists(module: ast.Module, keys: frozenset[str]) -> list[tuple[int, list[str]]]:
    """(line, keys) of each collection of three or more of `keys` (see TABLE)."""
    found = []
    for node in ast.walk(module):
        names: list[str | None] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            names = [_named(element, keys) for element in node.elts]
        elif isinstance(node, ast.Dict):
            pairs = zip(node.keys, node.values, strict=True)
            names = [_named(k, keys) for k, v in pairs if _literal(v)]
        elif isinstance(node, ast.Call):
            names = [kw.arg for kw in node.keywords if kw.arg in keys and _literal(kw.value)]
        listed = list(dict.fromkeys(name for name in names if name))
        if len(listed) >= 3 and isinstance(node, ast.expr):
            found.append((node.lineno, listed))
    return found


def state_keys_outside_the_table(root: Path = PACKAGE) -> dict[str, list[tuple[int, list[str]]]]:
    keys = frozenset(schema.FIELD_ORDER)
    return {
        shown(path, root): lists
        for path in modules(root)
        if path != TABLE and (lists := state_key_lists(tree(path), keys))
    }


def test_no_two_modules_share_a_file_name() -> None:
    assert duplicate_names() == {}


def test_no_module_is_over_the_line_limit() -> None:
    assert too_long() == {}
    assert too_long(LAUNCHER) == {}


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


def test_only_the_table_lists_the_state_fields() -> None:
    assert state_keys_outside_the_table() == {}
    keys = frozenset(schema.FIELD_ORDER)
    assert len(state_key_lists(tree(TABLE), keys)) == 0  # its rows name one key each
    assert state_key_lists(ast.parse(f"X = {list(schema.RUN_FIELDS)!r}"), keys)  # the scan sees


def test_each_scan_finds_what_it_looks_for(tmp_path: Path) -> None:
    """On a package made to break each rule, each scan finds the break."""
    broken = {
        "a/loop.py": "import subprocess as sp\nsp.check_output(['git'])\n",
        "b/loop.py": "from subprocess import Popen\nPopen(['git'])\n" + "x = 1\n" * MAX_LINES,
        "c.py": "import os, os.path as path\nfrom ..core import state as st\nos.system('x')\n",
        "d.py": "import subprocess\nsubprocess.run(['git'])\nsubprocess.DEVNULL\n",
        "e.py": "A = ('spec', 'steps', 'status')\nB = {'iteration': 0, 'status': 'paused',"
        " 'usage': None}\nC = {'spec': s[0], 'steps': s[1], 'status': s[2]}\n"
        "D = dict(guards=None, runAlone=[], ownerTimeout=LIMIT)\nE = ('spec', 'steps', 'x')\n",
    }
    for name, text in broken.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert duplicate_names(tmp_path) == {"loop.py": ["a/loop.py", "b/loop.py"]}
    assert too_long(tmp_path) == {"b/loop.py": MAX_LINES + 2}
    assert dodges(tmp_path) == ["a/loop.py: subprocess as sp", "c.py: ..core.state as st"]
    starts = {shown(p, tmp_path): child_starts(tree(p)) for p in modules(tmp_path)}
    assert starts == {"a/loop.py": [2], "b/loop.py": [2], "c.py": [3], "d.py": [2], "e.py": []}
    assert state_keys_outside_the_table(tmp_path) == {
        "e.py": [
            (1, ["spec", "steps", "status"]),
            (2, ["iteration", "status", "usage"]),
            (4, ["guards", "runAlone", "ownerTimeout"]),
        ]
    }
