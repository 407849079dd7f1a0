"""The `ralphstate` entry point.

`ralphstate hook ...` is dispatched here without importing click, so the Stop hook,
which runs at every stop of every session, imports only what it needs.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"]:
        from ralphstate.hooks.entry import run_hook

        code = run_hook(args[1:])
        if argv is None:
            # A real hook process, run at every stop: everything is written and every
            # file closed, so skip the interpreter's teardown of the modules it loaded.
            for stream in (sys.stdout, sys.stderr):
                try:  # noqa: SIM105 - contextlib is not imported on the hook's path
                    stream.flush()
                except (OSError, ValueError, AttributeError):
                    pass
            os._exit(code)
        return code
    from ralphstate.cli.app import run_cli

    return run_cli(args)


if __name__ == "__main__":
    sys.exit(main())
