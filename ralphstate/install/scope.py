"""What `install` says (and does) about the scope it wrote: the hooks name this
machine's Python by absolute path, so they belong in the person's own
`.claude/settings.local.json`, kept out of git, not in the shared `.claude/settings.json`.

In a git repository that does not already ignore the local file, its path is added to
the repository's own exclude file (`.git/info/exclude`, which is never committed), as
Claude Code does with the global excludes when it writes that file itself. Another
agent's project file (`.codex/hooks.json`, ...) is kept out of git the same way, and
`install` says what the agent needs before it runs hooks it has not seen (Codex CLI's
trust of each hook: `HookFile.trust`). A project-scope
install left from before is left alone (it is a shared file) and named, with the command
that removes it (docs/reference/commands.md,
`ralphstate install`).
"""

from __future__ import annotations

from pathlib import Path

from ralphstate.agents import table
from ralphstate.agents.contract import HookFile
from ralphstate.core.errors import RalphstateError
from ralphstate.install.agents import find_installed, hook_command, hooks_path
from ralphstate.install.command import command_target
from ralphstate.install.settings import InstallResult
from ralphstate.storage.repo.git import run_git, toplevel
from ralphstate.storage.system import fsio

MAX_EXCLUDE_BYTES = 1024 * 1024


def notes(
    agent: str, scope: str, root: Path, result: InstallResult, *, uninstall: bool, hooks: bool
) -> list[str]:
    """The lines `install` adds after writing `agent`'s `result.path` for `scope`
    (`hooks`: the hooks rather than the status line or the permission rules alone)."""
    hook_file = table.get(agent).hook_file
    if not hook_file.local:
        return _elsewhere(hook_file, scope, root, result, uninstall=uninstall)
    path = result.path
    if uninstall:
        if scope == "local" and hooks and _project_hooks(root):
            # The default scope was the project file before: its hooks are still there.
            shared = _shown(hooks_path("claude", "project", root), root)
            note = (
                f"note: {shared} still has ralphstate's hooks, which keep running;"
                " `ralphstate install --scope project --uninstall` removes them"
            )
            return [note]
        return []
    if scope == "project":
        what = "these hooks" if hooks else "this status line"
        python = command_target(hook_command("Stop")) or "this Python"
        note = (
            f"note: {_shown(path, root)} is shared with everyone who clones the project, and"
            f" {what} name this machine's Python ({python}), which is not there on another"
            " machine; the default scope (local, .claude/settings.local.json) keeps them yours"
        )
        return [note]
    if scope != "local":
        return []
    lines = _keep_out_of_git(path, root)
    if hooks and _project_hooks(root):
        lines.append(
            f"note: {_shown(hooks_path('claude', 'project', root), root)} still has"
            " ralphstate's hooks, which run besides these (each stop judged twice) and fail"
            " on a machine without this Python; `ralphstate install --scope project"
            " --uninstall` removes them"
        )
    return lines


def _elsewhere(
    hook_file: HookFile, scope: str, root: Path, result: InstallResult, *, uninstall: bool
) -> list[str]:
    """Another agent's file: a project's is kept out of git as Claude Code's local file
    is, since its hooks name this machine's Python; and what the agent needs before it
    runs hooks it has not seen (its `HookFile.trust`), when they are new or changed."""
    if uninstall:
        return []
    lines = _keep_out_of_git(result.path, root, shared=True) if scope == "project" else []
    if hook_file.trust and result.changed:
        lines.append(f"note: {hook_file.trust}")
    return lines


def _project_hooks(root: Path) -> bool:
    """The shared project file has ralphstate's hooks."""
    return any(h.scope == "project" for h in find_installed(root, agent="claude"))


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _keep_out_of_git(path: Path, root: Path, *, shared: bool = False) -> list[str]:
    """Add `path` to the repository's own exclude file when git would show it; say so
    when git tracks it already (`shared`: a file the project may share, which another
    scope keeps yours, rather than the person's own local file)."""
    top = toplevel(root)
    if top is None:  # not a repository, or no git
        return []
    try:
        rel = path.resolve().relative_to(top.resolve()).as_posix()
    except (ValueError, OSError):
        return []
    tracked = run_git(["ls-files", "--error-unmatch", "--", rel], top)
    if tracked is not None and tracked.ok:
        keep = (
            "`--scope user` keeps them yours"
            if shared
            else f"`git rm --cached {rel}` keeps the file on this machine only"
        )
        note = (
            f"note: git tracks {rel}, so these hooks, which name this machine's Python, would"
            f" be committed; {keep}"
        )
        return [note]
    ignored = run_git(["check-ignore", "-q", "--", rel], top)
    if ignored is None or ignored.code != 1:  # ignored already (0), or git failed
        return []
    found = run_git(["rev-parse", "--git-path", "info/exclude"], top)
    if found is None or not found.ok or not found.out.strip():
        return []
    exclude = Path(found.out.strip())
    if not exclude.is_absolute():
        exclude = top / exclude
    pattern = "/" + _escaped(rel)
    try:
        _append(exclude, pattern)
    except (OSError, RalphstateError) as exc:
        return [f"note: could not add {pattern} to {exclude} ({exc}); git may show {rel}"]
    said = (
        f"added {pattern} to {_shown(exclude, top)}, so git leaves this machine's hooks out"
        " of commits (a local exclude, never committed)"
    )
    return [said]


def _escaped(rel: str) -> str:
    """`rel` as a gitignore pattern that matches only that path."""
    out = "".join("\\" + c if c in "\\*?[" else c for c in rel)
    return out[:-1] + "\\ " if out.endswith(" ") else out


def _append(exclude: Path, pattern: str) -> None:
    try:
        raw = fsio.read_regular(exclude, MAX_EXCLUDE_BYTES)
    except FileNotFoundError:
        raw = b""
    if len(raw) > MAX_EXCLUDE_BYTES:
        raise RalphstateError(f"it is larger than {MAX_EXCLUDE_BYTES} bytes")
    if pattern.encode() in raw.splitlines():
        return
    sep = b"" if not raw or raw.endswith(b"\n") else b"\n"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("ab") as handle:  # git's own file: its mode and owner stay
        handle.write(sep + pattern.encode() + b"\n")
