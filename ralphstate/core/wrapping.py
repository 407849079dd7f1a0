"""The person's own status line, carried inside ralphstate's status line command: a
`statusLine` object as JSON in base64, which needs no quoting in any shell and comes
back exactly (`install.statusline_setup` writes it, `hooks.statusline` runs it)."""

from __future__ import annotations

import base64
import binascii
import json


def encode(original: dict[str, object]) -> str:
    return base64.b64encode(json.dumps(original, ensure_ascii=False).encode()).decode()


def decode(argument: str) -> dict[str, object] | None:
    """The object `encode` made, None for anything else."""
    try:
        value = json.loads(base64.b64decode(argument.encode(), validate=True).decode())
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None
