"""A name that is almost one of a list's: the typo of a hand edit (a key of
`criteriaStatus` that is close to a listed criterion)."""

from __future__ import annotations

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
