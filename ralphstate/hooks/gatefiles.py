"""PreToolUse (Claude Code: Edit, Write, MultiEdit, Bash): the person answers for a
change to what runs ralphstate's hooks (docs/explanation/proof.md, "The gate switched
off").

While a loop is on, a tool call of the agent's that would change one of the files its
hooks run from (an agent's hook file, `loop.enforcement.hook_files`: Claude Code's
settings with `disableAllHooks` and `enabledPlugins`, the other agents' hook files and
ralphstate's opencode plugin) is handed to the person: `ask` where a person can answer,
`deny` with one sentence where nobody can (`claude -p`, a `ralphstate run` iteration).
Edit, Write and MultiEdit name their file: it is compared with the hook files' paths. A
Bash command is read as words: it names a hook file (its name with its directory, or a
name only a hook file has) or one of Claude Code's switches. What this cannot see (a
program the agent wrote that edits the file, a command that builds the name) is told
after the fact (loop/gateoff.py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

TYPE_CHECKING = False  # no `typing` at run time: docs/explanation/design.md, "The hot path"
if TYPE_CHECKING:
    from ralphstate.storage.system.paths import LoopPaths

# The tools whose calls change a file they name.
FILE_TOOLS = ("Edit", "Write", "MultiEdit")
# Claude Code's settings that switch hooks off or a plugin's hooks on and off.
SWITCHES = ("disableallhooks", "enabledplugins")
# File names too common to count alone: they count with their directory's name.
COMMON_NAMES = ("settings.json", "hooks.json", "config.json")


def gate_file(tool_name: str, tool_input: dict[str, object], loop: LoopPaths) -> str | None:
    """What of ralphstate's hooks the call would change (a hook file's path, or the
    switch it names); None when it changes none of them."""
    files = _hook_files(loop)
    if tool_name in FILE_TOOLS:
        named = tool_input.get("file_path")
        if not isinstance(named, str) or not named:
            return None
        wanted = _same(str(loop.root / Path(named).expanduser()))
        return next((f for f in files if _same(f) == wanted), None)
    command = tool_input.get("command")
    if tool_name != "Bash" or not isinstance(command, str):
        return None
    said = command.lower().replace("\\", "/")
    for switch in SWITCHES:
        if switch in said:
            return {"disableallhooks": "disableAllHooks", "enabledplugins": "enabledPlugins"}[
                switch
            ]
    for path in files:
        if _names(said, path):
            return path
    return None


def _names(said: str, path: str) -> bool:
    """Whether the command's words `said` (lowercased) name the hook file `path`: its
    name with its directory's, or a name that is no other file's."""
    file = Path(path.lower())
    if file.name not in said:  # a plain search first: the pattern is slow on a long command
        return False
    if not re.search(rf"(?<![\w.-]){re.escape(file.name)}(?![\w.-])", said):
        return False
    if file.name not in COMMON_NAMES:
        return True
    return re.search(rf"(?<![\w-]){re.escape(file.parent.name)}(?![\w-])", said) is not None


def _hook_files(loop: LoopPaths) -> list[str]:
    from ralphstate.loop import enforcement
    from ralphstate.loop.gateoff import roots_of

    return [path for _agent, _scope, path in enforcement.hook_files(roots_of(loop))]


def _same(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))
