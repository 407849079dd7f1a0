"""Plugin launcher for ralphstate's Claude Code hooks: `launch.py stop|session-start|pre-compact`.

Claude Code runs this from `hooks/hooks.json` with the hook input on stdin. It finds
ralphstate and hands the input over unchanged:

1. ralphstate importable by this interpreter: `ralphstate.hooks.entry.run_hook([event])`;
2. else a `ralphstate` command on PATH: run `ralphstate hook EVENT` with the input;
3. else say once (a marker file in the temporary directory) on stderr how to install
   it, and allow.

When `ralphstate install` has already put the same hook into one of Claude Code's
settings files, this launcher stays silent, so one stop is never judged twice.

Whatever happens it exits 0 and writes to stdout nothing but the one JSON object the
real hook printed: a launcher fault must never block a stop.

Which Python runs this file: hooks.json tries `python3`, then `python`, then `py -3`,
joined with `||`. Claude Code runs hook commands with sh on macOS and Linux and with
Git Bash on Windows, where a python.org install has `py` and often no `python3`, and
where `python3` may be the Microsoft Store stub that exits non-zero without reading
stdin; `||` moves on to the next interpreter only when the previous one could not
run this file, because this file itself always exits 0. The file uses the standard
library only and keeps to syntax that Python 3.8 accepts (macOS ships 3.9 as python3).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

EVENTS = {"stop": "Stop", "session-start": "SessionStart", "pre-compact": "PreCompact"}
INSTALL_HINT = (
    "ralphstate: the ralphstate plugin's hooks are enabled but the ralphstate package is"
    " not installed, so loops are not enforced; install it with `pipx install ralphstate`"
    " (or `pip install ralphstate`). This message is shown once."
)
# The same recognition `ralphstate install` uses for its own settings entries
# (ralphstate.install.command): the interpreter importing the hook (`-I -c ...`), the
# hook script by its path (development builds), and the forms older versions wrote (the
# console script, `python -m ralphstate hook`).
_OWN = re.compile(
    "|".join(
        prefix + r"(stop|session-start|pre-compact)(?=[\s\"';]|$)"
        for prefix in (
            (
                r"""(?:^|\s)-c\s+["']?from\s+ralphstate\.hooks\.entry\s+"""
                r"""import\s+main\s*;\s*main\(\)["']?\s+"""
            ),
            r"""(?:^|[\s"'/\\])ralphstate[/\\]hooks[/\\]__main__\.py["']?\s+""",
            r"""(?:^|[\s"'/\\])ralphstate(?:\.exe)?["']?\s+hook\s+""",
            r"(?:^|\s)-m\s+ralphstate\s+hook\s+",
        )
    ),
    re.IGNORECASE,
)


def main(argv: list[str]) -> int:
    try:
        event = argv[0] if argv else ""
        data = _read_stdin()
        if event not in EVENTS or _installed_in_settings(event, data):
            return 0
        out = _run(event, data)
        if out:
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
    except BaseException:  # noqa: BLE001 - a launcher fault must never block a stop
        pass
    return 0


# ralphstate's own bound on hook input (ralphstate.core.limits.MAX_HOOK_INPUT_BYTES): one
# byte more is read, so the hook can tell an oversized input and refuse it.
MAX_INPUT_BYTES = 4 * 1024 * 1024


def _read_stdin() -> bytes:
    try:
        if sys.stdin is None:
            return b""
        return sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
    except (OSError, ValueError):
        return b""


def _run(event: str, data: bytes) -> bytes:
    """The real hook's stdout, checked to be one JSON object (or nothing)."""
    run_hook = _import_run_hook()
    if run_hook is not None:
        return _only_json(_in_process(run_hook, event, data))
    exe = shutil.which("ralphstate")
    if exe is not None:
        try:
            done = subprocess.run([exe, "hook", event], input=data, stdout=subprocess.PIPE)
        except OSError as exc:
            _say(f"ralphstate: could not run {exe} ({exc}); allowing.")
            return b""
        return _only_json(done.stdout)
    _say_once(INSTALL_HINT)
    return b""


def _import_run_hook() -> Callable[[list[str]], int] | None:
    try:
        from ralphstate.hooks.entry import run_hook
    except Exception:  # noqa: BLE001 - absent, too old or broken: try PATH instead
        return None
    return run_hook


def _in_process(run_hook: Callable[[list[str]], int], event: str, data: bytes) -> bytes:
    stdin, stdout = sys.stdin, sys.stdout
    captured = io.BytesIO()
    # Kept in locals: a wrapper that is garbage-collected closes the buffer under it.
    fake_in = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    fake_out = io.TextIOWrapper(captured, encoding="utf-8", write_through=True)
    sys.stdin, sys.stdout = fake_in, fake_out
    try:
        run_hook([event])
        fake_out.flush()
        return captured.getvalue()
    finally:
        sys.stdin, sys.stdout = stdin, stdout


def _only_json(out: bytes) -> bytes:
    text = out.strip()
    if not text:
        return b""
    try:
        value = json.loads(text.decode("utf-8"))
    except ValueError:
        value = None
    if not isinstance(value, dict):
        _say("ralphstate: the hook printed something that is not one JSON object; ignored.")
        return b""
    return text + b"\n"


def _installed_in_settings(event: str, data: bytes) -> bool:
    """True when a Claude Code settings file already runs `ralphstate hook EVENT`."""
    project = os.environ.get("CLAUDE_PROJECT_DIR") or _input_cwd(data)
    files = [Path.home() / ".claude" / "settings.json"]
    if project:
        files[:0] = [
            Path(project) / ".claude" / "settings.json",
            Path(project) / ".claude" / "settings.local.json",
        ]
    return any(event in _own_events(path, EVENTS[event]) for path in files)


def _own_events(path: Path, name: str) -> set[str]:
    """The ralphstate subcommands that `path` runs for Claude Code event `name`."""
    found: set[str] = set()
    try:
        groups = json.loads(path.read_text(encoding="utf-8-sig"))["hooks"][name]
    except Exception:  # noqa: BLE001 - missing or odd settings: nothing installed there
        return found
    for group in groups if isinstance(groups, list) else []:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for handler in handlers if isinstance(handlers, list) else []:
            command = handler.get("command") if isinstance(handler, dict) else None
            match = _OWN.search(command) if isinstance(command, str) else None
            if match:
                found.add(next(group for group in match.groups() if group).lower())
    return found


def _input_cwd(data: bytes) -> str | None:
    try:
        cwd = json.loads(data.decode("utf-8")).get("cwd")
    except Exception:  # noqa: BLE001
        return None
    return cwd if isinstance(cwd, str) and cwd else None


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _say_once(line: str) -> None:
    who = str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    marker = Path(tempfile.gettempdir()) / f"ralphstate-not-installed-{who}"
    try:
        os.close(os.open(str(marker), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return
    except OSError:
        pass  # no marker possible: saying it again beats never saying it
    _say(line)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
