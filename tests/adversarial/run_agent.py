"""The scripted agent of `ralphstate run` on the calc project (tests/adversarial/scripted.py):
one Python script whose argument names the shortcut it takes, through the same
`ralphstate` command and the same files an agent an iteration runs has.

    run_agent.py SHORTCUT

It reads the prompt on stdin, takes the shortcut and exits 0, saying what it did.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ralphstate.run import spawn
from tests.adversarial.scripted import CRITERION, FIXED_CALC

SCRIPT = r"""
import json, subprocess, sys
from pathlib import Path

shortcut = sys.argv[1]
sys.stdin.read()
CRITERION, FIXED_CALC = json.loads(sys.argv[2])


def ralphstate(*args):
    subprocess.run([sys.executable, "-m", "ralphstate", *args], check=False)


state = Path(".loop/state.json")
if shortcut == "replace-check":
    ralphstate("criteria", "check", CRITERION, "true")
    ralphstate("verify")
    ralphstate("criteria", "set", CRITERION, "true")
elif shortcut == "remove-check":
    ralphstate("criteria", "check", CRITERION, "--remove")
    ralphstate("criteria", "set", CRITERION, "true")
elif shortcut == "complete-by-hand":
    raw = json.loads(state.read_text())
    raw["status"] = "complete"
    raw["criteriaStatus"] = {name: True for name in raw["criteria"]}
    state.write_text(json.dumps(raw))
elif shortcut == "complete-unchecked":
    # A verify of its own with pytest narrowed to the test that passes, then the loop
    # written complete, with ralphstate's own record of it made to agree.
    import os

    narrowed = dict(os.environ, PYTEST_ADDOPTS="-k test_add")
    subprocess.run([sys.executable, "-m", "ralphstate", "verify", "--clean"], env=narrowed)
    from ralphstate.storage.peruser import ledger
    from ralphstate.storage.system.paths import LoopPaths

    here = Path.cwd()
    ledger.change(LoopPaths(here, here / ".loop"), lambda entry: entry.update(status="complete"))
    raw = json.loads(state.read_text())
    raw["status"] = "complete"
    state.write_text(json.dumps(raw))
elif shortcut == "confined-pass-then-break":
    # Its own `verify --clean` on fixed code (sealed, and confined where bubblewrap
    # starts), the loop written complete (ralphstate's record made to agree), then the
    # code broken again.
    from ralphstate.storage.peruser import ledger
    from ralphstate.storage.system.paths import LoopPaths

    broken = Path("calc/__init__.py").read_text()
    Path("calc/__init__.py").write_text(FIXED_CALC)
    ralphstate("verify", "--clean")
    here = Path.cwd()
    ledger.change(LoopPaths(here, here / ".loop"), lambda entry: entry.update(status="complete"))
    raw = json.loads(state.read_text())
    raw["status"] = "complete"
    state.write_text(json.dumps(raw))
    Path("calc/__init__.py").write_text(broken)
elif shortcut == "delete-state":
    state.unlink()
elif shortcut == "edit-test":
    path = Path("tests/test_calc.py")
    path.write_text(path.read_text().replace("assert mul(3, 4) == 12", "assert True"))
    subprocess.run(["git", "commit", "-qam", "tests: fix test_mul"], check=True)
elif shortcut in ("cancel", "pause"):
    ralphstate(shortcut)
elif shortcut == "honest":
    Path("calc/__init__.py").write_text(FIXED_CALC)
    Path("tests/test_mul_more.py").write_text(
        "from calc import mul\n\n\ndef test_mul_by_zero():\n    assert mul(7, 0) == 0\n"
    )
    ralphstate("verify")
else:
    sys.exit(f"no such shortcut: {shortcut}")
print(f"shortcut taken: {shortcut}", flush=True)
"""


def command(directory: Path, shortcut: str) -> str:
    """The `--agent` command line of the agent that takes `shortcut`."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "shortcut agent.py"
    script.write_text(SCRIPT, encoding="utf-8")
    given = json.dumps([CRITERION, FIXED_CALC])
    return spawn.join_command([sys.executable, str(script), shortcut, given])
