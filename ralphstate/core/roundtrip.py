"""What state.json may hold so that it is written back as it was read: no value nested
deeper than MAX_STATE_DEPTH, no whole number wider than 64 bits (docs/explanation/design.md,
"Reading is tolerant, writing is stable"). The whole file is checked here, before
`state.normalise` reads it field by field (core/fields.py).
"""

from __future__ import annotations

from typing import Any

from ralphstate.core.errors import CorruptState
from ralphstate.core.fields import Invalid, clipped
from ralphstate.core.limits import MAX_STATE_DEPTH

# The whole numbers orjson writes exactly; it reads a wider one as a float.
_INT_LOW = -(2**63)
_INT_HIGH = 2**64 - 1


def check_tree(raw: dict[str, Any]) -> bool:
    """Refuse what could be read but never written back as it was: a value nested
    deeper than MAX_STATE_DEPTH, a whole number wider than 64 bits. True when a float
    is whole and that wide: orjson reads a wide whole number as one, so `parse` looks
    at how the file wrote it."""
    wide = False
    stack: list[tuple[Any, int]] = [(raw, 1)]
    while stack:
        value, depth = stack.pop()
        for item in value.values() if isinstance(value, dict) else value:
            if isinstance(item, (dict, list)):
                if depth >= MAX_STATE_DEPTH:
                    raise Invalid(
                        f"it nests values more than {MAX_STATE_DEPTH} levels deep, which"
                        " ralphstate could not write back"
                    )
                stack.append((item, depth + 1))
            elif isinstance(item, int) and not _INT_LOW <= item <= _INT_HIGH:
                raise Invalid(_too_wide(str(item)))
            elif isinstance(item, float) and abs(item) >= 2**63 and item.is_integer():
                wide = True
    return wide


def _too_wide(number: str) -> str:
    if len(number) > 40:
        number = number[:20] + "…" + number[-19:]
    return (
        f"the whole number {number} is wider than 64 bits, which ralphstate could not"
        " write back exactly"
    )


def refuse_wide_integers(data: bytes) -> None:
    """Raise CorruptState when the file writes a whole number wider than 64 bits (orjson
    read it as a float, and would write it back as one). Only asked when `check_tree`
    saw a float that could be one, so the standard json module is imported rarely."""
    import json

    def whole(text: str) -> int:
        if not _INT_LOW <= int(text) <= _INT_HIGH:
            raise Invalid(_too_wide(text))
        return 0

    try:
        json.loads(data, parse_int=whole)
    except Invalid as exc:
        raise CorruptState(f"state.json: {clipped(str(exc))}") from None
    except (ValueError, RecursionError):
        pass  # orjson read it; what json makes of it does not matter
