"""A name that is almost one of a list's: the typo of a hand edit (a key of
`criteriaStatus` that is close to a listed criterion), and the item a name or a number
names (`pick`), with the closest names when none is."""

from __future__ import annotations

from ralphstate.core.errors import RalphstateError

# A name that matches nothing is answered with the closest names; a list this long or
# shorter is shown whole when none is close.
SHOW_ALL_NAMES = 5
# The names compared with the list (a hand edit adds a few; a file that adds thousands
# is not a typo, and each costs a scan of the list).
TYPO_CHECKS = 20


def near_miss(names: list[str], listed: list[str]) -> tuple[str, str] | None:
    """The first of `names` (at most `TYPO_CHECKS` looked at) that is close to one of
    `listed`, compared without case, and the listed one; None when none is."""
    if not names:
        return None
    import difflib

    folded = {c.casefold(): c for c in listed}
    for name in names[:TYPO_CHECKS]:
        close = difflib.get_close_matches(name.casefold(), list(folded), n=1, cutoff=0.75)
        if close:
            return name, folded[close[0]]
    return None


def pick(items: list[str], ref: str, kind: str, plural: str) -> str:
    """The item named `ref`, or numbered `ref` (from 1); RalphstateError listing them."""
    if ref in items:
        return ref
    if ref.isdecimal() and 1 <= int(ref) <= len(items):  # "¹" is a digit, not a number
        return str(items[int(ref) - 1])
    import difflib

    close = difflib.get_close_matches(ref, items, n=3, cutoff=0.6)
    if close:
        hint = "did you mean " + " or ".join(repr(i) for i in close) + "?"
    elif len(items) <= SHOW_ALL_NAMES:
        hint = f"{plural}: {', '.join(repr(i) for i in items) or 'none'}"
    else:
        hint = f"it has {len(items)} {plural}; `ralphstate status` lists them"
    raise RalphstateError(f"no {kind} {ref!r} in this loop ({hint}).")
