"""The Claude Code plugin's launcher: `launch.py stop|session-start|pre-compact|stop-failure|
post-tool-use|task-completed|pre-tool-use|session-end|permission-request|config-change`,
`cli ARGS`.

Claude Code runs it from `hooks/hooks.json` with the hook input on stdin, and the
plugin's `bin/ralphstate` runs it as `launch.py cli ARGS`. It finds a ralphstate of
the plugin's own version (`.claude-plugin/plugin.json`) and hands the work over:

1. ralphstate of that version importable by this interpreter: run it in this process;
2. else the plugin's own environment for that version,
   `${CLAUDE_PLUGIN_DATA}/env-VERSION/venv`, once built: imported into this process when
   this interpreter is of the Python version it was built with, else run by its own
   Python in isolated mode;
3. else build that environment (`launch.py build`: `python -m venv`, then pip installs
   the plugin's own files with their dependencies). A hook starts the build in a
   detached process and allows at once, with a one-line `systemMessage` saying loops are
   not enforced until it is ready; `cli` builds in the foreground and then runs.

One build at a time (a lock file beside the environment, naming the building
process); each plugin version has its own environment, and a build removes those no
session can run any more (plugin_env.sweep); a build that failed is tried again at the
next SessionStart (or `cli`), and until then each hook says so in one line, naming the
log.

When `ralphstate install` has already put the same hook into one of Claude Code's
settings files, the hook stays silent, so one stop is never judged twice.

Whatever happens a hook exits 0 and writes to stdout nothing but one JSON object: a
launcher fault must never block a stop. The one exception is ralphstate's own refusal of
a task (`task-completed`, Claude Code's TaskCompleted): ralphstate exits 2 with the reason
on stderr, and the launcher passes both through (REFUSING).

Which Python runs this file: hooks.json tries `python3`, then `python`, then `py -3`,
joined with `||` (bin/ralphstate does the same). Claude Code runs hook commands with sh
on macOS and Linux and with Git Bash on Windows, where a python.org install has `py` and
often no `python3`, and where `python3` may be the Microsoft Store stub that exits
non-zero without reading stdin; `||` moves on to the next interpreter only when the
previous one could not run this file, because this file itself exits 0 (TaskCompleted's
command passes an exit 2 through instead of trying the next interpreter). The file
uses the standard library only and keeps to syntax that Python 3.8 accepts (macOS ships
3.9 as python3); the environment it builds needs 3.10 or newer.

The work is done by the modules beside it, `plugin_launcher.py` (the hooks and `cli`),
`plugin_env.py` (the environment and its build) and `plugin_settings.py` (which of
ralphstate's hooks Claude Code's settings files already run, imported only when there
may be a loop): Python compiles the file it is given at every start but keeps the
bytecode of the modules it imports (`__pycache__`), and a hook that finds no loop is to
cost no more than the interpreter's own start.
"""

import os
import sys

HOOKS = os.path.dirname(os.path.realpath(__file__))
# Run as `python launch.py`, its directory is first on sys.path already; loaded as a
# module (the tests), it is put there for the one import.
PUT = sys.path[:1] != [HOOKS]
if PUT:
    sys.path.insert(0, HOOKS)
LOADED = False
try:
    import plugin_launcher

    LOADED = True
except Exception:  # noqa: BLE001 - a plugin half updated: a hook must never block
    pass
finally:
    if PUT:
        sys.path.remove(HOOKS)


def __getattr__(name: str) -> object:
    """The launcher's names (`EVENTS`, `MAX_INPUT_BYTES`, ...), read through this file."""
    return getattr(plugin_launcher, name)


if __name__ == "__main__":
    if not LOADED:
        sys.stderr.write("ralphstate: the plugin's hooks/plugin_launcher.py cannot be loaded.\n")
        sys.exit(1 if sys.argv[1:2] == ["cli"] else 0)
    plugin_launcher.run(sys.argv[1:])
