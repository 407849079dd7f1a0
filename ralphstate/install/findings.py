"""What `doctor`'s checks share: a finding (a level and one sentence), and the program
a hook command starts, checked: it is there, and for the form `install` writes it
imports ralphstate's hook in isolated mode, asked of a Python only (SECURITY.md)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ralphstate.install.command import (
    command_script,
    command_target,
    import_problem,
    runs_hook_code,
)

# ("ok" | "note" | "warn" | "fail", sentence): ok, a fact that is as it should be; note,
# advice or a fact worth knowing, never a fault; warn, something that may not work;
# fail, something that does not (exit 1).
Finding = tuple[str, str]
IMPORT_TIMEOUT = 10.0  # seconds for a hook's interpreter to show it imports the hook
MISSING = "which is missing or not executable"


def executable(command: str, root: Path, imports: dict[str, str | None]) -> tuple[str | None, str]:
    """What is wrong with the program a hook command starts (None: nothing), and which
    file is meant. The program must be there; for this version's form it must import
    the hook in isolated mode (asked once per program, remembered in `imports`), unless
    it is a file in the project, which is never started; for the development builds'
    form, the hook script it runs must be there."""
    target = command_target(command)
    if target is None:
        return MISSING, "cannot tell which program it runs"
    if os.sep in target or "/" in target:
        ok = Path(target).is_file() and os.access(target, os.X_OK)
    else:
        found = shutil.which(target)
        ok, target = found is not None, found or target
    if not ok:
        return MISSING, target
    script = command_script(command)
    if script is not None and not Path(script).is_file():
        return MISSING, script
    if runs_hook_code(command):
        if not may_start(target, root):
            why = "a program in the project" if inside(target, root) else "not a Python"
            return None, f"{target} ({why}: not started to check it)"
        if target not in imports:
            imports[target] = import_problem(target, IMPORT_TIMEOUT)
        problem = imports[target]
        if problem is not None:
            return f"which cannot import ralphstate's hook in isolated mode ({problem})", target
    return None, target


def may_start(program: str, root: Path) -> bool:
    """Whether `doctor` may start `program` to see it import the hook: the Python that
    runs `doctor` itself, or a Python interpreter outside the project. A program in the
    project may have come with a clone, like any file there, and a program that is not
    a Python would run the check's words as something else (SECURITY.md)."""
    path = Path(program)
    if sys.executable and path.absolute() == Path(sys.executable).absolute():
        return True
    if not path.name.lower().startswith(("python", "pypy")):
        return False
    return not inside(program, root)


def inside(program: str, root: Path) -> bool:
    path = Path(program)
    places = {path.absolute(), path.resolve()}
    return any(p.is_relative_to(r) for p in places for r in {root.absolute(), root.resolve()})
