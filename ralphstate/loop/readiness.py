"""How ready a loop's spec is to run without a person: a readiness score out of 10 and
the shape it implies (docs/reference/run.md, "The spec's shape"), given by `init`.

The design notes score a spec against a rubric at the start and pick a shape: a
"tool" (clear and verifiable: run it unattended) or a "colleague" (ambiguous, a score
of 5 to 7: check in with the person). The score here is deterministic: it reads the
loop as `init` writes it and runs nothing. The rubric, one point each unless said:

- criteria: the loop has at least one;
- checks (2): every criterion has a check (1 when some have);
- programs: every check's program can be found (`loop/program.py`);
- red before green: every check must fail once before a pass counts (`expectFail`),
  so a check that already passes proves nothing;
- steps: the plan has at least one step (or a task file's box);
- length: the spec has from `MIN_SPEC_WORDS` to `MAX_SPEC_WORDS` words;
- measurable: the spec or a criterion says something a check can measure (a number, or
  a word such as "pass", "fail", "returns", "exit", "error", "at most");
- precise: no criterion rests on a vague word ("better", "nice", "fast" ...);
- guards: the loop guards files (the tests git tracks), so the proof cannot be edited
  away unseen.

8 or more is a tool; less is a colleague, and `init` says in one line what the score
means, names the rubric's page and what would raise the score. It never recommends
`run --check-in` (run/checkin.py): that pauses the night at each step, which only the
person who asked for check-ins wants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ralphstate.core import fields
from ralphstate.core import state as st
from ralphstate.core.text import count
from ralphstate.loop import program

OUT_OF = 10
# Where the rubric is written, named in the one line `init` and `demo` give.
RUBRIC = "docs/reference/run.md#the-specs-shape"
# The least score of a tool-shaped spec: the notes' colleague is 5 to 7.
TOOL_SCORE = 8
MIN_SPEC_WORDS = 8
MAX_SPEC_WORDS = 2000
MEASURABLE = re.compile(
    r"\d|%|\b(pass(es|ing)?|fail(s|ing)?|returns?|exit(s| code)?|errors?|warnings?|tests?"
    r"|at (least|most)|less than|more than|exactly|within|every|none|zero|status code"
    r"|ms|seconds?|minutes?|bytes?|lines?)\b",
    re.IGNORECASE,
)
VAGUE = re.compile(
    r"\b(better|best|nicer?|cleaner|good|great|properly|proper|fast(er)?|robust"
    r"|intuitive|elegant|user-friendly|improved?|appropriate(ly)?|reasonable|etc"
    r"|works well|as needed|simple|easy)\b",
    re.IGNORECASE,
)


@dataclass
class Readiness:
    """The score, item by item: what each rubric item gave, and what to do for the
    points it did not."""

    points: dict[str, int] = field(default_factory=dict)
    advice: list[str] = field(default_factory=list)

    @property
    def score(self) -> int:
        return sum(self.points.values())

    @property
    def shape(self) -> str:
        return "tool" if self.score >= TOOL_SCORE else "colleague"

    def stored(self) -> fields.Readiness:
        return {"score": self.score, "shape": self.shape}

    def lines(self) -> list[str]:
        """What `init` says of it: nothing for a tool-shaped spec (the state keeps its
        score); for a colleague-shaped one, what the score means, where the rubric is
        and what would raise it. It recommends no mode: `run --check-in` pauses the
        night after each step, so only the person who asks for it gets it."""
        if self.shape == "tool":
            return []
        head = (
            f"readiness {self.score}/{OUT_OF}: colleague-shaped, a point for each thing that"
            f" lets checks, not judgement, tell the work is done ({TOOL_SCORE} or more leaves"
            f" nothing to judgement; the rubric: {RUBRIC})"
        )
        return [head, "  to raise it: " + "; ".join(self.advice[:4])]


def assess(state: st.State, root: Path) -> Readiness:
    """The readiness of the loop `state` in the project at `root`."""
    found = Readiness()
    criteria, checks = state["criteria"], state["checks"]
    checked = [c for c in criteria if c in checks]

    def item(name: str, got: int, advice: str | None) -> None:
        found.points[name] = got
        worth = 2 if name == "checks" else 1
        if got < worth and advice:
            found.advice.append(advice)

    item("criteria", 1 if criteria else 0, "name what done means (-c NAME)")
    unchecked = len(criteria) - len(checked)
    item(
        "checks",
        2 if criteria and not unchecked else 1 if checked else 0,
        f"give {count(unchecked, 'criterion') if criteria else 'each criterion'} a check"
        " (--check NAME COMMAND)",
    )
    missing = [c for c in checked if program.missing(checks[c], root)]
    item(
        "programs",
        1 if checked and not missing else 0,
        "make each check's program one that can be found" if checked else None,
    )
    red = checked and all(c in state["expectFail"] for c in checked)
    advice = "hold each check to fail first (--expect-fail)" if checked else None
    item("red before green", 1 if red else 0, advice)
    item("steps", 1 if state["steps"] else 0, "plan the work in steps (-s STEP)")
    words = len(state["spec"].split())
    item(
        "length",
        1 if MIN_SPEC_WORDS <= words <= MAX_SPEC_WORDS else 0,
        f"say the request in {MIN_SPEC_WORDS} to {MAX_SPEC_WORDS} words (it has {words})",
    )
    text = "\n".join([state["spec"], *criteria])
    item(
        "measurable",
        1 if MEASURABLE.search(text) else 0,
        "say what can be measured (a number, what passes or fails)",
    )
    vague = [c for c in criteria if VAGUE.search(c)]
    item(
        "precise",
        1 if criteria and not vague else 0,
        f"say {vague[0]!r} in words a check can tell" if vague else "name precise criteria",
    )
    unguarded = "leave out --no-guard" if state["guards"] is None else "--guard PATH"
    item("guards", 1 if state["guards"] else 0, f"guard the files that prove it ({unguarded})")
    return found


def said(state: st.State, root: Path) -> list[str]:
    """What `init` says of the readiness of the loop it started: nothing for a tool-shaped
    spec, how to run a colleague-shaped one and what would raise its score."""
    return assess(state, root).lines()
