"""`ralphstate install --agent NAME` for an agent whose hooks are a plugin of
ralphstate's own (opencode's: `agents.opencode`), a file it loads and ralphstate alone
writes.

The plugin names this installation's program by its absolute path (this interpreter
importing the hook in isolated mode, or the console script, as for the other agents:
`install.command`). The file is recognised by its first line (`Plugin.header`): a
second install rewrites it only when it changed, `--uninstall` removes it, and a file
of that name that ralphstate did not write is reported and left alone.
"""

from __future__ import annotations

from pathlib import Path

from ralphstate.agents.contract import Agent, Plugin
from ralphstate.core.errors import RalphstateError
from ralphstate.install.command import HOOK_CODE, hook_program, quote
from ralphstate.install.settings import InstallResult
from ralphstate.storage.system import fsio
from ralphstate.storage.system.fsio import atomic_write, makedirs

MAX_PLUGIN_BYTES = 64 * 1024


def install(agent: Agent, path: Path, *, uninstall: bool = False) -> InstallResult:
    """Write (or with `uninstall`, remove) `agent`'s plugin at `path`."""
    plugin = _plugin(agent)
    raw = _read_bytes(path)
    current = None if raw is None else _text(raw)
    if current is not None and not current.startswith(plugin.header):
        raise RalphstateError(
            f"{path} was not written by ralphstate (its first line is not {plugin.header!r});"
            " nothing was changed."
        )
    if uninstall:
        if raw is None:
            return InstallResult(path, False, ["no ralphstate plugin to remove"])
        try:
            removed = fsio.remove_if_holds(path, raw)
        except OSError as exc:
            raise RalphstateError(f"Cannot remove {path}: {exc.strerror or exc}.") from None
        if not removed:
            raise RalphstateError(_CHANGED.format(path=path))
        return InstallResult(path, True, [f"removed {path}"])
    program, args = hook_program(agent.name)
    wanted = plugin.text(program, args)
    shown = command_of(agent, wanted) or program
    event = next(iter(agent.hook_file.events))
    if current == wanted:
        return InstallResult(path, False, [f"{event} plugin already installed: {shown}"])
    try:
        makedirs(path.parent)  # never world-writable, whatever the umask
        # a person's save made since the read is neither written over nor removed
        written = atomic_write(path, wanted.encode("utf-8"), expect=raw, absent=raw is None)
    except OSError as exc:
        raise RalphstateError(f"Cannot write {path}: {exc.strerror or exc}.") from None
    if not written:
        raise RalphstateError(_CHANGED.format(path=path))
    verb = "added" if current is None else "updated"
    return InstallResult(path, True, [f"{verb} {event} plugin: {shown}"])


def installed(agent: Agent, path: Path) -> str | None:
    """The hook command ralphstate's plugin at `path` runs, in the shell form, for
    `doctor` ("" when it cannot be read from the file); None when there is no plugin of
    ours there or it cannot be read."""
    try:
        text = _read(path)
    except RalphstateError:
        return None
    if text is None or not text.startswith(_plugin(agent).header):
        return None
    return command_of(agent, text) or ""


def command_of(agent: Agent, text: str) -> str | None:
    """The Stop hook command the plugin `text` runs, as `install` writes it for sh."""
    found = _plugin(agent).program(text)
    if found is None:
        return None
    program, args = found
    sub = next(iter(agent.hook_file.events.values()))
    tail = f"{sub} --agent {agent.name}"
    if args == ["-I", "-c", HOOK_CODE]:
        return f'{quote(program)} -I -c "{HOOK_CODE}" {tail}'
    return f"{quote(program)} {' '.join(args)} {tail}"


def _plugin(agent: Agent) -> Plugin:
    if agent.hook_file.plugin is None:
        raise RalphstateError(f"{agent.name} has no plugin of ralphstate's.")
    return agent.hook_file.plugin


_CHANGED = "{path} changed while ralphstate was updating it; nothing was written, try again."


def _read(path: Path) -> str | None:
    raw = _read_bytes(path)
    return None if raw is None else _text(raw)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _read_bytes(path: Path) -> bytes | None:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_PLUGIN_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RalphstateError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if len(raw) > MAX_PLUGIN_BYTES:
        raise RalphstateError(f"{path} is larger than a ralphstate plugin; nothing was changed.")
    return raw
