"""The hook command `ralphstate install` writes: `PYTHON .../ralphstate/hooks/__main__.py
stop|session-start|pre-compact [--agent NAME]` (or `python -m ralphstate.hooks ...`).

Run by its path, this file's directory comes first on sys.path; it is dropped before
anything else is imported, so ralphstate and its dependencies come from the installation
alone (never from the directory the agent runs in, which a file run by path does not
put on sys.path). Kept small: it runs at every stop of every session.
"""

import os
import sys

if sys.path and os.path.normcase(os.path.realpath(sys.path[0] or os.curdir)) == os.path.normcase(
    os.path.dirname(os.path.realpath(__file__))
):
    del sys.path[0]

from ralphstate.hooks.entry import run_hook  # after the sys.path fix above

if __name__ == "__main__":
    code = run_hook(sys.argv[1:])
    # Everything is written and every file closed: skip the interpreter's teardown of
    # the modules it loaded, as `ralphstate hook` does.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)
