"""What cog writes into the docs from the code, so the pages cannot drift from it.

docs/explanation/design.md's "Layers" calls these: the layer table and diagram come from
the import-linter contract in `pyproject.toml` (the one `lint-imports` enforces), the
module inventory from each module's docstring, and the features table from `FEATURES`
below. `cog --check` in CI and pre-commit fails while a page and the code disagree;
`cog -r docs/explanation/design.md` rewrites it.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "ralphstate"

# A parenthesis that points at a page (`(docs/how-to/checks.md, "Evidence")`): the
# inventory names what a module holds, not where it is explained.
_POINTER = re.compile(r"\s*\([^()]*\.md\b[^()]*\)")
# The end of a docstring's first sentence: a full stop before a space or the end.
_SENTENCE = re.compile(r"(.+?\.)(?=\s|$)")

# Past this many characters, a module's summary is its first sentence up to its colon.
LONG = 120

# Each capability and the modules that make it, across the layers, in layer order. A
# module may serve several; tests/test_docs.py holds every name here to a module.
FEATURES: dict[str, tuple[str, ...]] = {
    "The state file and its fields (docs/reference/state-file.md)": (
        "cli/config",
        "cli/status",
        "loop/configure",
        "loop/statusfacts",
        "storage/loopdir/store",
        "core/schema",
        "core/state",
        "core/fields",
        "core/scalars",
        "core/views",
    ),
    "The Stop gate (docs/explanation/hooks.md)": (
        "hooks/entry",
        "hooks/stop",
        "hooks/base",
        "hooks/faults",
        "agents/table",
        "agents/transcript",
        "loop/enforcement",
        "storage/loopdir/store",
        "storage/system/paths",
        "core/decide",
        "core/render",
        "core/queries",
        "core/stall",
        "core/marker",
    ),
    "The loop restored after compaction and in a new session": (
        "hooks/session_start",
        "hooks/pre_compact",
        "hooks/arrival",
        "core/restore",
    ),
    "The proof: the approved contract and its review (docs/explanation/proof.md)": (
        "cli/review",
        "ci/trusted",
        "hooks/pre_tool_use",
        "hooks/outside",
        "verify/baseline",
        "verify/firsts",
        "verify/isolation",
        "loop/proofreview",
        "loop/person",
        "storage/peruser/ledger",
        "storage/peruser/approvals",
        "storage/repo/guarded",
        "storage/repo/testfiles",
        "storage/repo/cleanroom",
        "core/proof",
        "core/approving",
        "core/actor",
        "core/redgreen",
    ),
    "Checks and their evidence (docs/how-to/checks.md)": (
        "cli/verify",
        "cli/trust",
        "hooks/task_completed",
        "verify/pipeline",
        "verify/checkrunner",
        "verify/records",
        "verify/checks",
        "verify/onecheck",
        "verify/confine",
        "verify/confinemounts",
        "verify/pool",
        "core/verifyplan",
        "core/verdict",
        "verify/watchdog",
        "storage/peruser/truststore",
        "storage/repo/git",
        "storage/system/scratch",
        "storage/system/children",
        "core/checkrun",
        "core/unfinished",
    ),
    "`ralphstate run` (docs/reference/run.md)": (
        "cli/run",
        "cli/runflags",
        "run/runoptions",
        "run/optionkinds",
        "run/runner",
        "run/decide_iteration",
        "run/plan",
        "run/runconfig",
        "run/prompt",
        "run/spawn",
        "run/agentrun",
        "run/bookkeeping",
        "run/endings",
        "run/commits",
        "run/worktrees",
        "agents/contract",
        "storage/loopdir/lessons",
    ),
    "Task files and the agent's task list (docs/how-to/task-lists.md)": (
        "hooks/post_tool_use",
        "hooks/task_completed",
        "install/taskenv",
        "loop/taskfile",
        "loop/boxcontract",
        "loop/linkedspecs",
        "loop/tracker",
        "core/tasklist",
        "core/tie",
    ),
    "Budgets and what a loop spent (docs/how-to/overnight.md)": (
        "run/allowance",
        "run/usage",
        "run/ratelimits",
        "run/limitwait",
        "agents/transcript_usage",
        "core/budgets",
    ),
    "Who owns a loop (docs/explanation/design.md, Ownership)": (
        "hooks/session_start",
        "hooks/arrival",
        "loop/control",
        "storage/peruser/registry",
        "storage/system/process",
        "core/ownership",
    ),
    "Install, doctor and the plugin (docs/how-to/install.md)": (
        "cli/install",
        "cli/doctor",
        "install/command",
        "install/settings",
        "install/agents",
        "install/hookfile",
        "install/checkup",
        "install/plugin",
        "agents/table",
        "storage/peruser/installed",
    ),
    "Sandboxed runs (docs/how-to/sandbox.md)": (
        "install/sandboxing",
        "sandbox/reach",
        "sandbox/modes",
        "sandbox/bubblewrap",
        "sandbox/seatbelt",
        "sandbox/ccsettings",
        "run/spawn",
    ),
    "A loop on CI (docs/how-to/github-action.md)": (
        "cli/ci",
        "ci/job",
        "ci/trusted",
        "ci/github",
        "run/runner",
        "report/plain",
    ),
    "The report (`ralphstate report`)": (
        "cli/report",
        "report/story",
        "report/plain",
        "report/html",
        "report/collect",
    ),
    "The status line": ("hooks/statusline", "install/statusline_setup", "core/wrapping"),
}


def layers() -> list[list[str]]:
    """The packages of each layer, top first, as the first import-linter contract has
    them (`ralphstate.` left out)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contract = config["tool"]["importlinter"]["contracts"][0]
    assert contract["type"] == "layers", "the first contract is the layers'"
    return [
        [name.strip().removeprefix("ralphstate.") for name in layer.split("|")]
        for layer in contract["layers"]
    ]


def summary(path: Path) -> str:
    """The first sentence of a module's docstring, without pointers to pages."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split())
    paragraph = _POINTER.sub("", paragraph)
    match = _SENTENCE.match(paragraph)
    text = match.group(1) if match else paragraph
    if len(text) > LONG and ": " in text:  # a long sentence: what comes before its colon
        text = text.split(": ")[0]
    # A bar would end the table's cell: `list|add` is written `list\|add`.
    return text.rstrip(":").rstrip(".").replace("|", "\\|")


def layer_table() -> list[str]:
    """The layer table: each package, what it holds, and what it may import."""
    rows = ["| layer | package | holds | may import |", "|---|---|---|---|"]
    stack = layers()
    for number, layer in enumerate(stack, 1):
        below = [name for lower in stack[number:] for name in lower]
        for name in layer:
            peers = " (not its peers in this layer)" if len(layer) > 1 else ""
            may = ", ".join(f"`{b}`" for b in below) or "nothing of ralphstate's"
            rows.append(
                f"| {number} | `{name}` | {summary(PACKAGE / name / '__init__.py')} |"
                f" {may}{peers} |"
            )
    return rows


def layer_diagram() -> list[str]:
    """The layers as a column, top first: a package imports only what is below it."""
    lines = ["```"]
    stack = layers()
    for number, layer in enumerate(stack):
        lines.append("   ·   ".join(layer).center(60).rstrip())
        if number < len(stack) - 1:
            lines.append("│".center(60).rstrip())
    lines.append("```")
    return lines


def _modules(package: Path) -> list[Path]:
    """A package's modules and its sub-packages' modules, sub-packages last."""
    own = sorted(p for p in package.glob("*.py") if p.name != "__init__.py")
    rooms = sorted(p for p in package.iterdir() if (p / "__init__.py").is_file())
    return own + [m for room in rooms for m in [room / "__init__.py", *_modules(room)]]


def inventory() -> list[str]:
    """Every module of the package, by layer, with the first sentence of its docstring."""
    lines: list[str] = []
    for layer in layers():
        for name in layer:
            package = PACKAGE / name
            lines += ["", f"`{name}`: {summary(package / '__init__.py')}.", ""]
            lines += ["| module | holds |", "|---|---|"]
            for path in _modules(package):
                module = path.relative_to(package).with_suffix("").as_posix()
                module = module.removesuffix("/__init__") + ("/" if path.stem == "__init__" else "")
                lines.append(f"| `{module}` | {summary(path)} |")
    return lines[1:]


def features_table() -> list[str]:
    """Each capability and its modules, across the layers."""
    rows = ["| capability | modules |", "|---|---|"]
    for feature, modules in FEATURES.items():
        rows.append(f"| {feature} | {', '.join(f'`{m}`' for m in modules)} |")
    return rows
