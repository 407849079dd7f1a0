"""The `ralphstate` entry point.

`ralphstate hook ...` is dispatched here without importing click, so the Stop hook,
which runs at every stop of every session, imports only what it needs.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        from ralphstate.hooks import entry

        if argv is None:  # a real hook process: it ends there
            entry.main(args[1:])
        return entry.run_hook(args[1:])
    from ralphstate.cli.app import run_cli

    return run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
