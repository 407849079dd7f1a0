"""How often an editor's save of `state.json` is lost to a change ralphstate makes at the
same moment, by the way the editor saves.

    python bench/editor_race.py [--saves N] [--delay SECONDS] [--pause SECONDS]

An editor process saves `state.json` N times, cycling through the ways editors save:

- `in place`: open with truncation, write the whole file (most editors);
- `rename`: write a temporary file beside it, rename it over (atomic savers);
- `rename away`: rename the file to a backup, create a new file and write it in two
  writes, remove the backup (vim's default `backupcopy=auto` on a plain file, and
  editors that keep a backup).

Before each save it reads the file: its previous save must still be there (ralphstate
carries the unknown key `edit` through its changes); when it is not, it looks again a
tenth of a second later and counts the save lost if it is still gone. Meanwhile
ralphstate (the installed package, through its real `Store`) flips a criterion as fast
as it can, held up `--delay` seconds just before it puts its file in place, which is
when a race hurts. Prints, per way of saving, the saves made and the saves lost, and
ralphstate's changes written. Linux and macOS (the exchange); elsewhere it measures the
check-then-replace fallback.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODES = ("in place", "rename", "rename away")

EDITOR = r"""
import json, os, sys, time
path, saves, pause = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
modes = ("in place", "rename", "rename away")
with open(path, "rb") as f:
    base = json.loads(f.read())
made = {m: 0 for m in modes}
lost = {m: 0 for m in modes}
last = None
def read_edit():
    while True:
        try:
            with open(path, "rb") as f:
                return json.loads(f.read()).get("edit")
        except (OSError, ValueError):  # between a rename away and the new file's end
            time.sleep(0.0005)
for n in range(1, saves + 2):
    if last is not None and read_edit() != base.get("edit"):
        time.sleep(0.1)
        lost[last] += read_edit() != base.get("edit")
    if n > saves:
        break
    mode = modes[n % 3]
    base["edit"] = n
    data = json.dumps(base, indent=2).encode()
    if mode == "in place":
        with open(path, "wb") as f:
            f.write(data)
    elif mode == "rename":
        with open(path + ".saving", "wb") as f:
            f.write(data)
        os.replace(path + ".saving", path)
    else:
        os.rename(path, path + "~")
        with open(path, "wb") as f:
            half = len(data) // 2
            f.write(data[:half])
            f.flush()
            f.write(data[half:])
        os.unlink(path + "~")
    made[mode] += 1
    last = mode
    time.sleep(pause)
print(json.dumps({"made": made, "lost": lost}), flush=True)
"""

UPDATER = r"""
import sys, time
from pathlib import Path
from ralphstate.core.errors import RalphstateError
from ralphstate.storage.system import fsio
from ralphstate.storage.system.paths import LoopPaths
from ralphstate.storage.loopdir.store import Store
root, stop, delay = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
real = fsio._swap_if_holds
def slow(*args):
    time.sleep(delay)
    return real(*args)
fsio._swap_if_holds = slow
store = Store(LoopPaths(root, root / ".loop"))
def flip(state, events):
    state["criteriaStatus"]["a"] = not state["criteriaStatus"].get("a")
writes = 0
print("ready", flush=True)
while not stop.exists():
    try:
        store.update(flip)
        writes += 1
    except RalphstateError:
        pass
print(writes, flush=True)
"""


def race(saves: int, delay: float, pause: float) -> tuple[dict[str, dict[str, int]], int]:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        ran = subprocess.run(
            [sys.executable, "-m", "ralphstate", "init", "Race", "-c", "a"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
        if ran.returncode != 0:
            raise SystemExit(f"ralphstate init failed: {ran.stderr.strip()}")
        path, stop = root / ".loop" / "state.json", root / "stop"
        updater = subprocess.Popen(
            [sys.executable, "-c", UPDATER, str(root), str(stop), str(delay)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert updater.stdout is not None and updater.stdout.readline() == "ready\n"
            editor = subprocess.run(
                [sys.executable, "-c", EDITOR, str(path), str(saves), str(pause)],
                capture_output=True,
                text=True,
                check=True,
            )
        finally:
            stop.touch()
            out, _ = updater.communicate(timeout=120)
        return json.loads(editor.stdout), int(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=30000)
    parser.add_argument("--delay", type=float, default=0.0005)
    parser.add_argument("--pause", type=float, default=0.0002)
    args = parser.parse_args()
    started = time.monotonic()
    counts, writes = race(args.saves, args.delay, args.pause)
    print(f"{'way of saving':<14}{'saves':>9}{'lost':>7}")
    for mode in MODES:
        print(f"{mode:<14}{counts['made'][mode]:>9}{counts['lost'][mode]:>7}")
    print(f"ralphstate wrote {writes} changes in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
