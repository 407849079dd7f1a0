"""The plan on the wall stays true: docs/explanation/design.md's generated parts match the
code, the features table names real modules, and every section of the docs that a
comment or docstring of the code cites is there."""

from __future__ import annotations

import io
import os
import re
import sys
import tokenize
from functools import cache
from pathlib import Path

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "docs"))
import docgen  # docs/docgen.py, which cog runs too

DESIGN = REPO / "docs" / "explanation" / "design.md"
# Where the code is: what its comments cite is held to the pages.
SOURCES = ("ralphstate", "hooks", "bench", "tests")
# A page and the heading of one of its sections, as comments cite them:
# `docs/explanation/design.md, "The hot path"`, `proof.md ("Guarded files")`.
CITATION = re.compile(r"""([\w./-]*\b[\w-]+\.md)[,:]?\s*\(?\s*"([^"]{2,80}?)"\s*\)?""")
# A page and an anchor: `docs/explanation/design.md#layers`.
ANCHOR = re.compile(r"([\w./-]*\b[\w-]+\.md)#([\w-]+)")


def _pages() -> dict[str, Path]:
    """The project's Markdown pages, by path from the root and by bare name."""
    found: dict[str, Path] = {}
    names: dict[str, list[Path]] = {}
    for page in [*REPO.glob("*.md"), *(REPO / "docs").rglob("*.md")]:
        found[page.relative_to(REPO).as_posix()] = page
        names.setdefault(page.name, []).append(page)
    found.update({name: pages[0] for name, pages in names.items() if len(pages) == 1})
    return found


@cache
def _headings(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    return {
        " ".join(line.lstrip("#").replace("`", "").split())
        for line in text.splitlines()
        if re.match(r"#{1,6} ", line)
    }


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def citations(text: str) -> list[tuple[str, str, str]]:
    """(page, kind, what) for each section `text` cites: kind `heading` or `anchor`."""
    # A comment wraps: its `#`s and the indentation go, so a heading split over two
    # lines reads as one.
    flat = " ".join(re.sub(r"^\s*#\s?", "", line) for line in text.splitlines())
    flat = " ".join(flat.split())
    found = [(p, "heading", h) for p, h in CITATION.findall(flat)]
    return found + [(p, "anchor", a) for p, a in ANCHOR.findall(flat)]


def missing_sections(sources: dict[str, str]) -> list[str]:
    """Each citation in `sources` (a file's name → its text) of a section that is not there."""
    pages = _pages()
    missing = []
    for name, text in sources.items():
        for page_name, kind, what in citations(text):
            page = pages.get(page_name) or pages.get(page_name.split("/")[-1])
            if (REPO / page_name).is_file():  # a page beside the code: tests/e2e/README.md
                page = REPO / page_name
            if page is None:
                continue  # a page of another project (a client's docs), or a test's own
            headings = _headings(page)
            wanted = " ".join(what.replace("`", "").split())
            if kind == "heading":  # "What the client does" names "What the client does (2.1)"
                ok = any(h == wanted or h.startswith(f"{wanted} (") for h in headings)
            else:
                ok = what in {_anchor(h) for h in headings}
            if not ok:
                missing.append(f"{name}: {page_name}, {what!r}")
    return missing


def prose(source: str) -> str:
    """A module's comments and docstrings (its triple-quoted strings), one per line: the
    words that cite pages, without the code's own strings."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return "\n".join(
        token.string
        for token in tokens
        if token.type == tokenize.COMMENT
        or (token.type == tokenize.STRING and token.string.lstrip("rbuRBU").startswith('"""'))
    )


def _sources() -> dict[str, str]:
    files = []
    for directory in SOURCES:
        for parent, dirs, names in os.walk(REPO / directory):
            dirs[:] = [d for d in dirs if d not in ("node_modules", "__pycache__")]
            files += [Path(parent) / n for n in names if n.endswith(".py")]
    return {str(p.relative_to(REPO)): prose(p.read_text(encoding="utf-8")) for p in sorted(files)}


def test_every_section_the_code_cites_is_there() -> None:
    sources = _sources()
    cited = sum(len(citations(text)) for text in sources.values())
    assert cited > 50, "the code cites its docs; the pattern must still find them"
    assert missing_sections(sources) == []


def test_a_citation_of_a_missing_section_is_found() -> None:
    """The check above can fail: a comment citing a heading no page has is reported."""
    text = (
        '# (docs/explanation/design.md, "The hot\n# path"), design.md#layers\n'
        '# (docs/explanation/design.md, "A section nobody wrote")\n'
        "# docs/explanation/proof.md#no-such-anchor\n"
    )
    assert missing_sections({"a.py": text}) == [
        "a.py: docs/explanation/design.md, 'A section nobody wrote'",
        "a.py: docs/explanation/proof.md, 'no-such-anchor'",
    ]


def test_the_generated_parts_of_the_design_page_match_the_code() -> None:
    """What `cog --check docs/explanation/design.md` holds in CI, held by the suite too:
    every module is in the inventory, and the layer table is the contract's."""
    page = DESIGN.read_text(encoding="utf-8")
    for line in [*docgen.layer_table(), *docgen.inventory(), *docgen.features_table()]:
        assert line in page, f"design.md is out of date (cog -r {DESIGN.name}): {line}"


def test_every_module_is_in_the_inventory() -> None:
    rows = "\n".join(docgen.inventory())
    package = REPO / "ralphstate"
    for path in package.rglob("*.py"):
        if path.name == "__init__.py" or path.parent == package:
            continue
        top = path.relative_to(package).parts[0]
        name = path.relative_to(package / top).with_suffix("").as_posix()
        assert f"| `{name}` |" in rows, f"{path} is not in the inventory"


def test_every_module_has_a_summary() -> None:
    """The inventory says what each module holds: its docstring's first sentence."""
    package = REPO / "ralphstate"
    empty = [str(p) for p in package.rglob("*.py") if not docgen.summary(p)]
    assert [e for e in empty if not e.endswith("ralphstate/__init__.py")] == []


def test_every_feature_names_modules_that_exist() -> None:
    assert docgen.FEATURES, "the features table names each capability's modules"
    package = REPO / "ralphstate"
    for feature, modules in docgen.FEATURES.items():
        for module in modules:
            assert (package / f"{module}.py").is_file(), f"{feature}: no module {module}"
