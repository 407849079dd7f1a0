"""Whether anything will enforce a loop, and the one line said when nothing will.

A loop holds an agent only through a hook: ralphstate's Stop hook in one of an
agent's hook files (the project's, the person's own local file, the user's: every
agent's `HookFile`), or the Claude Code plugin, enabled in a Claude Code settings file
(`enabledPlugins`, `"ralphstate@MARKETPLACE": true`) or running this very command (its
`bin/ralphstate` sets ENV_PLUGIN). A loop that `ralphstate run` drives needs no hook:
the runner checks each iteration itself. That a run has driven it is read from the
directory every run makes in the loop's directory (RUNS, `run/runfiles.py`), so a loop
meant for `run` alone is not nagged once its first run started (`init` names `run` in
its line for the time before; docs/explanation/choices.md).

`init`, `status`, the status line and `doctor` ask. The status line does so at every
assistant message of a loop that runs, so this module imports nothing at the top but
`os` (loaded already) and the table of agents only when a file is to be read: each file
is read once, at most MAX_READ bytes, and searched for the forms of the Stop hook's
command that `install` writes (`install.command`, JSON-escaped) without being parsed.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator
    from pathlib import Path

    from ralphstate.agents.contract import HookFile

# Set by the plugin's bin/ralphstate for the command it runs (hooks/plugin_launcher.py).
ENV_PLUGIN = "RALPHSTATE_PLUGIN"
# What Claude Code sets for a plugin's hooks: the plugin's root.
ENV_PLUGIN_ROOT = "CLAUDE_PLUGIN_ROOT"
# The directory every `ralphstate run` makes in the loop's directory (run/runfiles.py).
RUNS = "runs"
MAX_READ = 1024 * 1024  # a settings file install would refuse is not searched either
PLUGIN_NAME = "ralphstate"

MISSING = (
    "nothing enforces this loop: no agent's settings run ralphstate's Stop hook and its"
    " Claude Code plugin is not enabled; run `ralphstate install` (`--agent NAME` for"
    " another agent), or drive the loop with `ralphstate run`."
)
SHORT = "not enforced: run `ralphstate install`"
SWITCHED_OFF = (
    "nothing enforces this loop: {path} sets `disableAllHooks`, so Claude Code runs none"
    " of ralphstate's hooks (its plugin's neither); remove that setting, or drive the loop"
    " with `ralphstate run`."
)

# The Stop hook's command in a hook file, in every form `install` writes or wrote
# (install.command: `-I -c "from ralphstate.hooks.entry import main; main()" stop`, the
# console script's `ralphstate hook stop`, the development builds' hook script, `python
# -m ralphstate hook stop`), its quotes JSON-escaped, and not `stop-failure`.
_STOP = (
    rb"(?:ralphstate\.hooks\.entry\s+import\s+main\s*;\s*main\(\)\\?[\"']?"
    rb"|(?<=[\s\"'/\\])ralphstate(?:\.exe)?\\?[\"']?\s+hook"
    rb"|ralphstate(?:\\\\|/)+hooks(?:\\\\|/)+__main__\.py\\?[\"']?"
    rb"|-m\s+ralphstate\s+hook)"
    rb"\s+stop(?![\w-])"
)
# The plugin turned on in a Claude Code settings file's `enabledPlugins`.
_ENABLED = rb'"' + PLUGIN_NAME.encode() + rb'@[^"\\]*"\s*:\s*true'
# Claude Code's switch for every hook of its settings, the plugins' included.
_DISABLE_ALL = rb'"disableAllHooks"\s*:\s*(true|false)'


def hook_file_path(hook_file: HookFile, scope: str, root: str, home: str | None = None) -> str:
    """The file an agent reads its hooks from for `scope` ("project", "local" or
    "user"): under the project `root`, or in the directory a variable names, else under
    the home directory. ValueError for a scope the agent does not have."""
    if scope == "project":
        return os.path.join(root, hook_file.project)
    if scope == "local" and hook_file.local:
        return os.path.join(root, hook_file.local)
    if scope == "user":
        variable, directory, name = hook_file.user
        value = os.environ.get(variable) if variable else None
        if value:
            return os.path.join(value, name)
        return os.path.join(home or os.path.expanduser("~"), directory, name)
    raise ValueError(f"no {scope!r} scope")


def hook_files(roots: Iterable[str], home: str | None = None) -> Iterator[tuple[str, str, str]]:
    """(agent, scope, path) of every hook file an agent may read for a project at one of
    `roots`, Claude Code's first; each agent's module is imported when its turn comes."""
    from ralphstate.agents import table

    tops = list(dict.fromkeys(os.path.abspath(r) for r in roots))
    for name in table.NAMES:
        hook_file = table.get(name).hook_file
        seen: set[str] = set()
        for scope in hook_file.scopes:
            for top in tops if scope != "user" else tops[:1]:
                path = hook_file_path(hook_file, scope, top, home)
                if path not in seen:
                    seen.add(path)
                    yield name, scope, path


def enforcer(roots: Iterable[str], loop_dir: str | None, home: str | None = None) -> str | None:
    """What will enforce the loop in `loop_dir` for a project at one of `roots`, in a
    few words; None when nothing will."""
    roots = list(roots)
    off = hooks_switched_off(roots, home)
    if from_plugin() and off is None:
        return "the Claude Code plugin this command runs from"
    if loop_dir and driven_by_run(loop_dir):
        return "`ralphstate run`, which has driven it"
    import re

    for agent, _scope, path in hook_files(roots, home):
        if agent == "claude" and off is not None:
            continue  # Claude Code runs none of its hooks, its plugin's neither
        raw = read_bounded(path)
        if not raw:
            continue
        if agent == "claude" and re.search(_ENABLED, raw):
            return f"the ralphstate plugin, enabled in {path}"
        if _runs_stop(agent, raw):
            return f"the {agent} hooks in {path}"
    return None


def hooks_switched_off(roots: Iterable[str], home: str | None = None) -> str | None:
    """The Claude Code settings file whose `"disableAllHooks": true` turns off every hook
    Claude Code would run for a project at one of `roots` (ralphstate's and its
    plugin's), as Claude Code reads it: the local file over the project's over the
    user's, so a `false` nearer the project wins; None when hooks run."""
    import re

    from ralphstate.agents import table

    hook_file = table.get("claude").hook_file
    tops = list(dict.fromkeys(os.path.abspath(r) for r in roots))
    for scope in SCOPES:
        for top in tops if scope != "user" else tops[:1]:
            path = hook_file_path(hook_file, scope, top, home)
            found = re.search(_DISABLE_ALL, read_bounded(path) or b"")
            if found is not None:
                return path if found.group(1) == b"true" else None
    return None


def from_plugin() -> bool:
    """Whether this command runs from the Claude Code plugin (its `bin/ralphstate`),
    whose hooks run in the session that started it."""
    return bool(os.environ.get(ENV_PLUGIN))


def driven_by_run(loop_dir: str | os.PathLike[str]) -> bool:
    """Whether `ralphstate run` has driven the loop in `loop_dir` (RUNS is there)."""
    return os.path.isdir(os.path.join(loop_dir, RUNS))


def missing(roots: Iterable[str], loop_dir: str | None, home: str | None = None) -> str | None:
    """The one line said when nothing will enforce the loop (MISSING, or SWITCHED_OFF
    when a Claude Code settings file sets `disableAllHooks`), else None."""
    roots = list(roots)
    if enforcer(roots, loop_dir, home) is not None:
        return None
    off = hooks_switched_off(roots, home)
    return MISSING if off is None else SWITCHED_OFF.format(path=off)


def for_loop(root: str, loop_dir: str) -> str | None:
    """MISSING for the loop in `loop_dir` of the project at `root` when nothing will
    enforce it, else None; the project's agent files are looked for at `root` and at
    the project root above it (`loop.project.project_root`)."""
    from ralphstate.loop.project import project_root

    return missing([root, str(project_root(root))], loop_dir)


def settings_root(start: str | os.PathLike[str]) -> Path:
    """The project whose hook files enforce the loop found from `start`: the project
    root of that loop's directory (in a subdirectory, not the subdirectory's own), or
    of `start` when no loop is found; where `install` writes and `doctor` looks."""
    from ralphstate.loop.project import project_root
    from ralphstate.storage.system.paths import find

    loop = find(start)
    return project_root(loop.root if loop is not None else start)


def plugin_enabled(path: str) -> bool:
    """Whether the Claude Code settings file `path` enables ralphstate's plugin."""
    import re

    raw = read_bounded(path)
    return bool(raw) and re.search(_ENABLED, raw or b"") is not None


# The rule `ralphstate install` (and the plugin's /ralphstate:allow) adds first, for the
# command the agent runs first (install/permissions.py, RULES): without it, every one of
# the agent's ralphstate commands asks the person first.
ALLOW_STATUS = b"Bash(ralphstate status:*)"


def lacks_allow(root: str, home: str | None = None) -> bool:
    """Whether Claude Code runs ralphstate here (its plugin's hooks, or those `install`
    wrote) while none of its settings files for the project at `root` (local, project,
    user) allows the agent's `ralphstate status` without a prompt."""
    from ralphstate.agents import table

    hook_file = table.get("claude").hook_file
    raws = [read_bounded(hook_file_path(hook_file, scope, root, home)) for scope in SCOPES]
    if any(raw and ALLOW_STATUS in raw for raw in raws):
        return False
    # The plugin's hooks run with its root in the environment; an enabled plugin whose
    # hooks are not the ones running says nothing of this session.
    return bool(os.environ.get(ENV_PLUGIN_ROOT)) or any(
        raw and _runs_stop("claude", raw) for raw in raws
    )


# Claude Code's settings files, as `lacks_allow` reads them.
SCOPES = ("local", "project", "user")


def holds_hooks(agent: str, path: str) -> bool:
    """Whether the hook file `path` of `agent` runs ralphstate's Stop hook (for Claude
    Code: or enables its plugin); False when it cannot be read."""
    import re

    raw = read_bounded(path)
    if not raw:
        return False
    return _runs_stop(agent, raw) or (agent == "claude" and re.search(_ENABLED, raw) is not None)


def _runs_stop(agent: str, raw: bytes) -> bool:
    """Whether the hook file's bytes `raw` run ralphstate's Stop hook (for a plugin of
    ralphstate's own: whether the file is that plugin)."""
    from ralphstate.agents import table

    plugin = table.get(agent).hook_file.plugin
    if plugin is not None:
        return raw.startswith(plugin.header.encode())
    import re

    return re.search(_STOP, raw, re.IGNORECASE) is not None


def read_bounded(path: str) -> bytes | None:
    """At most MAX_READ bytes of the regular file `path`; None when there is none, it
    cannot be read or it is larger (never blocking on a FIFO or a device)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(MAX_READ + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return raw if len(raw) <= MAX_READ else None
