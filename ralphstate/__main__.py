"""The `ralphstate` entry point.

`ralphstate hook ...` and `ralphstate statusline` are dispatched here without
importing click, so the Stop hook, which runs at every stop of every session, and the
status line, which runs after every message, import only what they need.
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
    if args[:1] == ["statusline"]:  # as often as a hook: no click either
        from ralphstate.hooks import statusline

        if argv is None:
            statusline.main(args[1:])
        return statusline.run(args[1:])
    from ralphstate.cli.app import run_cli

    return run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
