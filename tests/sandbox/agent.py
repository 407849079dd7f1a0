"""The scripted agent of the sandbox tests: one Python script that, under `ralphstate
run --sandbox`, tries every write and read the sandbox must refuse, then does the
honest work (fixes the code, `ralphstate criteria set`, `ralphstate verify`, a commit).

    agent.py ATTEMPTS_JSON

Each attempt's result (`refused: <error>` or `done`) is printed as one JSON line, so
the iteration's log and the test read the same words.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ralphstate.run import spawn

MARK = "written by the agent inside the sandbox\n"
SCRIPT = r"""
import json, os, subprocess, sys
from pathlib import Path

sys.stdin.read()
targets = json.loads(sys.argv[1])
MARK = targets.pop("mark")
honest = targets.pop("honest")
Path("agent-ran").write_text("yes\n")


def attempt(name, action):
    try:
        action()
        print(json.dumps({name: "done"}), flush=True)
    except OSError as exc:
        print(json.dumps({name: f"refused: {exc.strerror}"}), flush=True)


def append(path):
    def action():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            f.write(MARK)
    return action


def read(path):
    def action():
        print(json.dumps({"read": Path(path).read_text()}), flush=True)
    return action


for name, path in targets.items():
    if name.startswith("read "):
        attempt(name, read(path))
    else:
        attempt(name, append(path))

if honest:
    fixed = Path("calc/__init__.py").read_text().replace(
        'raise NotImplementedError("mul is not written yet")', "return a * b"
    )
    attempt("edit code", lambda: Path("calc/__init__.py").write_text(fixed))
    rs = [sys.executable, "-m", "ralphstate"]
    for args in (["criteria", "set", "docs written", "true"], ["verify"]):
        done = subprocess.run(rs + args, capture_output=True, text=True)
        print(json.dumps({" ".join(args[:2]): done.returncode, "err": done.stderr}), flush=True)
    subprocess.run(["git", "add", "calc"], check=True)
    commit = ["git", "commit", "-qm", "calc: write mul"]
    done = subprocess.run(commit, capture_output=True, text=True)
    print(json.dumps({"commit": done.returncode, "err": done.stderr}), flush=True)
"""


def command(directory: Path, targets: dict[str, str], honest: bool = True) -> str:
    """The `--agent` command line of the agent that tries `targets` (name: path; a
    name starting "read " reads the path, any other appends to it)."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "sandbox agent.py"
    script.write_text(SCRIPT, encoding="utf-8")
    given = json.dumps({**targets, "mark": MARK, "honest": honest})
    return spawn.join_command([sys.executable, str(script), given])
