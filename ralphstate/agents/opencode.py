"""opencode: no hook can hold a stop, but a plugin sees every event.

ralphstate's plugin (`.opencode/plugin/ralphstate.ts` in the project, or
`~/.config/opencode/plugin/` for the user, `$XDG_CONFIG_HOME` when set) answers
`session.idle` of a top-level session: it runs ralphstate's Stop hook as a subprocess
(`stop --agent opencode`, with Claude Code's field names, the session id, the project
and the newest reply, which the plugin reads) and, when the answer is a block, prompts
the session again with the reason. `session.compacted` records a checkpoint. The plugin
names this installation's program by its absolute path, so it does not depend on
opencode's PATH; any fault of the subprocess lets the session rest. opencode shows no
`systemMessage`.
"""

from __future__ import annotations

from ralphstate.agents.contract import Agent, HookFile, Plugin, timeout

FILE_NAME = "ralphstate.ts"
HEADER = "// ralphstate: the loop gate for opencode."
# The Stop hook's time, as for the other agents (verify-on-stop's budget fits in it).
TIMEOUT_MS = timeout("stop") * 1000

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


def plugin_text(program: str, args: list[str]) -> str:
    """The plugin that runs `program` with `args` before the hook's subcommand."""
    import json

    return (
        TEMPLATE.replace("__HEADER__", HEADER)
        .replace("__PROGRAM__", json.dumps(program))
        .replace("__ARGS__", json.dumps(args))
        .replace("__TIMEOUT_MS__", str(TIMEOUT_MS))
    )


def program_of(text: str) -> tuple[str, list[str]] | None:
    """(program, args) the plugin `text` runs, as `plugin_text` wrote them; None when
    they cannot be read."""
    import json

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
    return program, [str(arg) for arg in args]


AGENT = Agent(
    name="opencode",
    title="opencode",
    session_key="session_id",
    message_key="last_assistant_message",
    transcript_key=None,
    cwd_key="cwd",
    notices=False,
    hook_file=HookFile(
        "plugin",
        project=".opencode/plugin/" + FILE_NAME,
        user=("XDG_CONFIG_HOME", ".config", "opencode/plugin/" + FILE_NAME),
        # The plugin runs the Stop hook at `session.idle` (and `pre-compact` at
        # `session.compacted`).
        events={"session.idle": "stop"},
        plugin=Plugin(HEADER, plugin_text, program_of),
    ),
)
