"""Fake agents for `ralphstate run` tests: one Python script, its behaviour chosen by
its arguments, that records what it was given in $FAKE_AGENT_DIR.

    fake_agent.py MODE BEHAVIOUR [PROMPT_FILE_OR_PROMPT]

MODE says where the prompt is (stdin, arg: the last argument, file: the path given).
BEHAVIOUR: progress (sets the criterion the prompt names, with the ralphstate command
line), build (writes built.txt), idle, crash (exit 7), hang (sleeps; SIGINT ends it
with 130), stubborn (ignores SIGINT and SIGTERM), commit (a git commit of a new file,
work-N.txt), empty-commit (a git commit of nothing), note (adds a line to notes.txt,
uncommitted; note-once: only in the first iteration, then idle), pause (`ralphstate
pause`), block (`ralphstate pause --blocked`), corrupt (writes bad JSON into
state.json), replay (prints `replay-N.out` or else `replay.out` from $FAKE_AGENT_DIR, a
real client's recorded output, and exits with `replay-N.exit` or `replay.exit`, 0
without). Behaviours join with `+`: `progress+replay` replays after making progress,
`replay+progress` before (so an iteration that replays a failure exits before it makes
progress); `+slow` makes any of them take 0.3 s more.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ralphstate.run import spawn

SCRIPT = r"""
import os, re, signal, subprocess, sys, time
from pathlib import Path

mode, behaviour = sys.argv[1], sys.argv[2]
if mode == "stdin":
    prompt = sys.stdin.read()
elif mode == "arg":
    prompt = sys.argv[3]
else:
    prompt = Path(sys.argv[3]).read_text(encoding="utf-8")
record = Path(os.environ["FAKE_AGENT_DIR"])
n = len(list(record.glob("prompt-*.txt"))) + 1
(record / f"prompt-{n}.txt").write_text(prompt, encoding="utf-8")
(record / f"runner-{n}.txt").write_text(os.environ.get("RALPHSTATE_RUNNER", "-"))
(record / f"argv-{n}.txt").write_text("\n".join(sys.argv[1:3] + sys.argv[3:4] * (mode == "file")))
print(f"agent {n}: {behaviour}", flush=True)


def ralphstate(*args):
    subprocess.run([sys.executable, "-m", "ralphstate", *args], check=True)


def signals():
    return record / "signals.txt"


def note(signum, frame):
    with open(signals(), "a") as handle:
        handle.write(signal.Signals(signum).name + "\n")


behaviours = behaviour.split("+")
if "slow" in behaviours:  # takes a moment before anything else, whatever the machine
    behaviours.remove("slow")
    time.sleep(0.3)
replay_first = behaviours[0] == "replay"
behaviour = next((b for b in behaviours if b != "replay"), "replay")


def replay():
    for name in (f"replay-{n}", "replay"):
        out = record / f"{name}.out"
        if out.exists():
            sys.stdout.buffer.write(out.read_bytes())
            sys.stdout.flush()
            break
    for name in (f"replay-{n}", "replay"):
        code = record / f"{name}.exit"
        if code.exists():
            sys.exit(int(code.read_text()))


if replay_first:
    replay()
if behaviour == "replay":
    pass
elif behaviour == "progress":
    # The criterion the protocol names; one with a check is claimed all the same.
    name = re.search(r'ralphstate (?:criteria set|verify) "([^"]*)"', prompt).group(1)
    ralphstate("criteria", "set", name, "true", "--note", f"proved by agent {n}")
elif behaviour == "build":
    Path("built.txt").write_text("built")
elif behaviour == "crash":
    print("boom", file=sys.stderr, flush=True)
    sys.exit(7)
elif behaviour == "commit":
    Path(f"work-{n}.txt").write_text(f"work of agent {n}\n")
    subprocess.run(["git", "add", f"work-{n}.txt"], check=True)
    subprocess.run(["git", "commit", "-q", "-m", f"agent {n}"], check=True)
elif behaviour == "empty-commit":
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", f"agent {n}"], check=True)
elif behaviour == "note" or (behaviour == "note-once" and n == 1):
    with open("notes.txt", "a") as handle:
        handle.write(f"agent {n} was here\n")
elif behaviour == "pause":
    ralphstate("pause", "--reason", "agent asked")
elif behaviour == "block":
    ralphstate("pause", "--blocked", "agent needs a key")
elif behaviour == "corrupt":
    Path(".loop/state.json").write_text("{not json")
elif behaviour in ("hang", "stubborn"):
    if behaviour == "hang":
        def stop(signum, frame):
            note(signum, frame)
            sys.exit(130)
        signal.signal(signal.SIGINT, stop)
    else:
        signal.signal(signal.SIGINT, note)
        signal.signal(signal.SIGTERM, note)
    (record / "pid").write_text(str(os.getpid()))
    while True:
        time.sleep(0.05)
if "replay" in behaviours and not replay_first:
    replay()
"""


def write(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "fake agent.py"
    script.write_text(SCRIPT, encoding="utf-8")
    return script


def command(script: Path, mode: str, behaviour: str) -> str:
    """The agent command line for `--agent`, quoted for this platform."""
    argv = [sys.executable, str(script), mode, behaviour]
    if mode == "file":
        argv.append("{prompt_file}")
    return spawn.join_command(argv)


def env(directory: Path) -> dict[str, str]:
    return {"FAKE_AGENT_DIR": str(directory), "PYTHONUNBUFFERED": "1"}


def prompts(directory: Path) -> list[str]:
    found = sorted(directory.glob("prompt-*.txt"), key=lambda p: int(p.stem.split("-")[1]))
    return [p.read_text(encoding="utf-8") for p in found]


def signals(directory: Path) -> list[str]:
    path = directory / "signals.txt"
    return path.read_text().split() if path.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - someone else's process by now
        return True
    return True


def replay(directory: Path, output: bytes, exit_code: int = 0, n: int | None = None) -> None:
    """What the `replay` behaviour prints (in iteration `n`, or in every one)."""
    name = "replay" if n is None else f"replay-{n}"
    (directory / f"{name}.out").write_bytes(output)
    (directory / f"{name}.exit").write_text(str(exit_code))
