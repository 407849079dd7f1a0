"""The completion marker counts in prose only, never inside code."""

from __future__ import annotations

import pytest

from ralphstate.core.marker import contains_marker

M = "<loop-complete>"

CASES = [
    # (id, text, expected)
    ("plain", f"All criteria verified.\n\n{M}", True),
    ("only the marker", M, True),
    ("at start", f"{M} and that is all.", True),
    ("at end, no newline", f"Done: {M}", True),
    ("absent", "All criteria verified.", False),
    ("empty text", "", False),
    ("in backtick fence", f"Say this when done:\n```\n{M}\n```\n", False),
    ("in fence with info string", f"```text title=x\n{M}\n```", False),
    ("in tilde fence", f"~~~\n{M}\n~~~\n", False),
    ("in indented fence", f"   ```\n   {M}\n   ```", False),
    ("four spaces is no fence", f"text\n    ```\n{M}", True),
    ("in unclosed fence", f"Example:\n```python\nprint('{M}')\n", False),
    ("after a closed fence", f"```\ncode\n```\n{M}", True),
    ("after a closed tilde fence", f"~~~~\ncode\n~~~~\n{M}", True),
    ("tilde fence not closed by backticks", f"~~~\n```\n{M}\n~~~", False),
    ("backtick fence not closed by tildes", f"```\n~~~\n{M}\n", False),
    ("shorter fence does not close", f"````\n```\n{M}\n````\n", False),
    ("longer fence closes", f"```\ncode\n`````\n{M}", True),
    ("closing fence with text does not close", f"```\n``` not a close\n{M}\n", False),
    ("closing fence with trailing spaces closes", f"```\ncode\n```  \t\n{M}", True),
    ("backtick info string with backtick is not a fence", f"``` a`b\n{M}", True),
    ("two backticks are not a fence", f"``\n{M}\n``", False),
    ("fence in CRLF text", f"```\r\n{M}\r\n```\r\nbye", False),
    ("after fence in CRLF text", f"```\r\ncode\r\n```\r\n{M}", True),
    ("in inline span", f"When done, print `{M}` on its own.", False),
    ("after inline span", f"Ran `pytest`: {M}", True),
    ("between inline spans", f"`a` {M} `b`", True),
    ("double-backtick span holding a backtick", f"Use ``a ` {M}`` here.", False),
    ("single run does not close a double run", f"``{M}` still code``", False),
    ("unmatched backtick is literal", f"It's a ` tick. {M}", True),
    ("unmatched double run is literal", f"`` {M} `", True),
    ("span across lines of a paragraph", f"Say `the\n{M}` marker", False),
    ("span does not cross a blank line", f"Stray ` tick.\n\n{M}\n\nthen `x", True),
    ("span does not cross a fence", f"Stray `\n```\ncode\n```\n{M} `", True),
    ("marker split across lines", "<loop-\ncomplete>", False),
    ("marker split by a span", "<loop-`x`complete>", False),
    ("marker in prose and in code", f"`{M}` and then {M}", True),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_default_marker(text: str, expected: bool) -> None:
    assert contains_marker(text, M) is expected


@pytest.mark.parametrize(
    ("text", "marker", "expected"),
    [
        ("All done. DONE-DONE", "DONE-DONE", True),
        ("All done. <loop-complete>", "DONE-DONE", False),
        ("`DONE-DONE`", "DONE-DONE", False),
        ("~~~\nDONE-DONE\n~~~", "DONE-DONE", False),
        ("anything", "", False),
        ("", "", False),
    ],
    ids=[
        "custom found",
        "default not custom",
        "custom in span",
        "custom in fence",
        "empty",
        "both",
    ],
)
def test_custom_marker(text: str, marker: str, expected: bool) -> None:
    assert contains_marker(text, marker) is expected


def test_many_unmatched_runs_are_literal() -> None:
    # Every run has a different length, so none closes; the marker is prose.
    text = " ".join("`" * n for n in range(1, 400)) + f" {M}"
    assert contains_marker(text, M) is True
