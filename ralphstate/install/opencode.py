"""`ralphstate install --agent opencode`: the plugin that gates opencode's sessions.

opencode has no hook that can hold a stop, but a plugin in `.opencode/plugin/` (the
project) or `~/.config/opencode/plugin/` (the user; `$XDG_CONFIG_HOME` when set) sees
every event. ralphstate's plugin answers `session.idle` of a top-level session: it runs
ralphstate's Stop hook as a subprocess (`stop --agent opencode`, the one decision of
every agent, given the session id, the project and the newest reply) and, when the
answer is a block, prompts the session again with the reason. `session.compacted`
records a checkpoint. The plugin names this installation's program by its absolute path
(this interpreter importing the hook in isolated mode, or the console script, as for the
other agents: `install.command`), so it does not depend on opencode's PATH; any fault of
the subprocess lets the session rest.

The file is ralphstate's alone (`ralphstate.ts`), recognised by its first line: a second
install rewrites it only when it changed, `--uninstall` removes it, and a file of that
name that ralphstate did not write is reported and left alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ralphstate.core.errors import RalphstateError
from ralphstate.install import claude
from ralphstate.install.command import HOOK_CODE, hook_program, quote
from ralphstate.install.settings import InstallResult
from ralphstate.storage import fsio
from ralphstate.storage.fsio import atomic_write, makedirs

FILE_NAME = "ralphstate.ts"
HEADER = "// ralphstate: the loop gate for opencode."
# The Stop hook's time, as for the other agents (verify-on-stop's budget fits in it).
TIMEOUT_MS = claude.TIMEOUTS["Stop"] * 1000
MAX_PLUGIN_BYTES = 64 * 1024

TEMPLATE = """__HEADER__ Written by `ralphstate install --agent opencode`;
// `ralphstate install --agent opencode --uninstall` removes it. Edits are lost at the next
// install.
//
// opencode has no hook that can hold a stop. At each `session.idle` of a top-level session
// this plugin asks ralphstate's Stop hook (the same decision as for every other agent),
// giving it the newest reply, and when the answer is a block it prompts the session again
// with the reason. Any fault (no program, a timeout, output that is not one JSON object)
// lets the session rest: the gate fails open. It works where the opencode process stays
// up (`opencode serve`, the TUI); `opencode run` exits at the first idle.
import { spawn } from "node:child_process"

const PROGRAM = __PROGRAM__
const ARGS = __ARGS__
const TIMEOUT_MS = __TIMEOUT_MS__
const MAX_OUTPUT = 1 << 20

function hook(sub: string, input: Record<string, unknown>): Promise<any> {
  return new Promise((resolve) => {
    let out = ""
    let child: any
    try {
      child = spawn(PROGRAM, [...ARGS, sub, "--agent", "opencode"], {
        stdio: ["pipe", "pipe", "ignore"],
        timeout: TIMEOUT_MS,
        windowsHide: true,
      })
    } catch {
      resolve(null)
      return
    }
    child.on("error", () => resolve(null))
    child.stdout.on("data", (chunk: any) => {
      if (out.length < MAX_OUTPUT) out += chunk
    })
    child.on("close", (code: number | null) => {
      try {
        resolve(code === 0 && out.trim() ? JSON.parse(out) : null)
      } catch {
        resolve(null)
      }
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(input))
  })
}

// The newest reply of the session: the text of the last assistant message that has any,
// back to the prompt that opened it.
async function lastReply(client: any, id: string): Promise<string | null> {
  const found = await client.session.messages({ path: { id } })
  const messages: any[] = found?.data ?? []
  for (let i = messages.length - 1; i >= 0; i--) {
    const { info, parts } = messages[i]
    if (info?.role === "user") return null
    if (info?.role !== "assistant") continue
    const text = (parts ?? [])
      .filter((p: any) => p?.type === "text" && !p.synthetic && typeof p.text === "string")
      .map((p: any) => p.text)
      .join("\\n")
    if (text.trim()) return text
  }
  return null
}

export const Ralphstate = async ({ client, directory }: any) => ({
  event: async ({ event }: any) => {
    try {
      const id = event?.properties?.sessionID
      if (typeof id !== "string") return
      if (event.type === "session.idle") {
        const session = await client.session.get({ path: { id } })
        if (session?.data?.parentID) return // a subagent's session: its parent is judged
        const answer = await hook("stop", {
          session_id: id,
          cwd: directory,
          hook_event_name: "Stop",
          last_assistant_message: await lastReply(client, id),
        })
        if (answer?.decision === "block" && typeof answer.reason === "string") {
          await client.session.promptAsync({
            path: { id },
            body: { parts: [{ type: "text", text: answer.reason }] },
          })
        }
      } else if (event.type === "session.compacted") {
        await hook("pre-compact", { session_id: id, cwd: directory, trigger: "auto" })
      }
    } catch {
      // fail open: the session rests
    }
  },
})
"""


def plugin_path(scope: str, root: Path, home: Path | None = None) -> Path:
    if scope == "project":
        return root / ".opencode" / "plugin" / FILE_NAME
    if scope == "user":
        config = os.environ.get("XDG_CONFIG_HOME")
        base = Path(config) if config else (Path.home() if home is None else home) / ".config"
        return base / "opencode" / "plugin" / FILE_NAME
    raise RalphstateError(f"opencode has no {scope!r} scope; use --scope project or --scope user.")


def plugin_text(program: str, args: list[str]) -> str:
    return (
        TEMPLATE.replace("__HEADER__", HEADER)
        .replace("__PROGRAM__", json.dumps(program))
        .replace("__ARGS__", json.dumps(args))
        .replace("__TIMEOUT_MS__", str(TIMEOUT_MS))
    )


def install(
    scope: str, root: Path, *, uninstall: bool = False, home: Path | None = None
) -> InstallResult:
    path = plugin_path(scope, root, home)
    raw = _read_bytes(path)
    current = None if raw is None else _text(raw)
    if current is not None and not current.startswith(HEADER):
        raise RalphstateError(
            f"{path} was not written by ralphstate (its first line is not {HEADER!r});"
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
    program, args = hook_program("opencode")
    wanted = plugin_text(program, args)
    shown = command_of(wanted) or program
    if current == wanted:
        return InstallResult(path, False, [f"session.idle plugin already installed: {shown}"])
    try:
        makedirs(path.parent)  # never world-writable, whatever the umask
        # a person's save made since the read is neither written over nor removed
        written = atomic_write(path, wanted.encode("utf-8"), expect=raw, absent=raw is None)
    except OSError as exc:
        raise RalphstateError(f"Cannot write {path}: {exc.strerror or exc}.") from None
    if not written:
        raise RalphstateError(_CHANGED.format(path=path))
    verb = "added" if current is None else "updated"
    return InstallResult(path, True, [f"{verb} session.idle plugin: {shown}"])


def installed(scope: str, root: Path, home: Path | None = None) -> tuple[Path, str] | None:
    """(path, the hook command the plugin runs, in the shell form) of ralphstate's plugin
    for `scope`, for `doctor`; None when there is none or it cannot be read."""
    path = plugin_path(scope, root, home)
    try:
        text = _read(path)
    except RalphstateError:
        return None
    if text is None or not text.startswith(HEADER):
        return None
    return path, command_of(text) or ""


def command_of(text: str) -> str | None:
    """The Stop hook command the plugin `text` runs, as `install` writes it for sh."""
    found: dict[str, object] = {}
    for line in text.splitlines():
        for name in ("PROGRAM", "ARGS"):
            prefix = f"const {name} = "
            if line.startswith(prefix):
                try:
                    found[name] = json.loads(line[len(prefix) :])
                except ValueError:
                    return None
    program, args = found.get("PROGRAM"), found.get("ARGS")
    if not isinstance(program, str) or not isinstance(args, list):
        return None
    if args == ["-I", "-c", HOOK_CODE]:
        return f'{quote(program)} -I -c "{HOOK_CODE}" stop --agent opencode'
    return f"{quote(program)} {' '.join(str(a) for a in args)} stop --agent opencode"


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
