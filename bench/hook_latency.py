"""Hook latency: median wall time of real hook processes, as ratios.

    python bench/hook_latency.py [--runs N]

Rows:
- no loop: `ralphstate hook stop` in a project without a loop, against `python -c pass`
  (goal: at most 1.3);
- blocking: the hook blocking an in-progress loop, against
  `python -c "import orjson, filelock"` (goal: at most 1.2);
- transcript: the marker read from the tail of a 1 GB transcript, against the same
  hook on a 10 KB transcript (goal: at most 1.1).

The hook is run the way Claude Code runs it: the installed `ralphstate` console
script when there is one next to this interpreter, else `python -m ralphstate`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

GOALS = {"no loop": 1.3, "blocking": 1.2, "transcript 1 GB / 10 KB": 1.1}


def hook_command() -> list[str]:
    scripts = Path(sys.executable).parent
    for name in ("ralphstate", "ralphstate.exe"):
        if (scripts / name).exists():
            return [str(scripts / name)]
    found = shutil.which("ralphstate")
    return [found] if found else [sys.executable, "-m", "ralphstate"]


def median_time(cmd: list[str], data: bytes, env: dict[str, str], cwd: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, input=data, env=env, cwd=cwd, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def write_loop(root: Path, met: bool) -> None:
    status = {"tests pass": met, "lint clean": met}
    state = {
        "version": 1,
        "spec": "Benchmark loop",
        "criteria": list(status),
        "criteriaStatus": status,
        "steps": ["one", "two"],
        "maxIterations": 100_000,
        "stallLimit": 100_000,
        "status": "in_progress",
        "sessionId": "bench",
    }
    (root / ".loop").mkdir(parents=True, exist_ok=True)
    (root / ".loop" / "state.json").write_bytes(orjson.dumps(state))


def reset(root: Path) -> None:
    state_path = root / ".loop" / "state.json"
    state = orjson.loads(state_path.read_bytes())
    state.update(iteration=0, blocksWithoutProgress=0, status="in_progress")
    state_path.write_bytes(orjson.dumps(state))


def transcript(path: Path, size: int) -> None:
    """A transcript of `size` bytes whose last reply has no marker."""
    tail = b"".join(
        orjson.dumps(line) + b"\n"
        for line in [
            {"type": "user", "message": {"role": "user", "content": "continue"}},
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Still working on it."}],
                },
            },
        ]
    )
    filler = orjson.dumps(
        {"type": "assistant", "message": {"role": "assistant",
                                          "content": [{"type": "text", "text": "x" * 400}]}}
    ) + b"\n"
    with open(path, "wb") as handle:
        written = 0
        block = filler * 2048
        while written + len(block) + len(tail) <= size:
            handle.write(block)
            written += len(block)
        while written + len(filler) + len(tail) <= size:
            handle.write(filler)
            written += len(filler)
        handle.write(tail)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    hook = [*hook_command(), "hook", "stop"]
    py = sys.executable
    rows = []
    with tempfile.TemporaryDirectory(prefix="ralphstate-bench-") as tmp:
        base = Path(tmp)
        env = dict(os.environ, RALPHSTATE_HOME=str(base / "home"))
        for name in ("RALPHSTATE_DIR", "RALPHSTATE_RUNNER", "CLAUDE_PROJECT_DIR"):
            env.pop(name, None)

        empty = base / "no-loop"
        empty.mkdir()
        data = orjson.dumps({"session_id": "bench", "cwd": str(empty), "hook_event_name": "Stop",
                             "last_assistant_message": "hi"})
        base_t = median_time([py, "-c", "pass"], b"", env, empty, args.runs)
        hook_t = median_time(hook, data, dict(env, CLAUDE_PROJECT_DIR=str(empty)), empty, args.runs)
        rows.append(("no loop", "python -c pass", base_t, hook_t))

        looped = base / "loop"
        write_loop(looped, met=False)
        data = orjson.dumps({"session_id": "bench", "cwd": str(looped), "hook_event_name": "Stop",
                             "last_assistant_message": "hi"})
        base_t = median_time([py, "-c", "import orjson, filelock"], b"", env, looped, args.runs)
        hook_t = median_time(hook, data, dict(env, CLAUDE_PROJECT_DIR=str(looped)), looped,
                             args.runs)
        rows.append(("blocking", 'python -c "import orjson, filelock"', base_t, hook_t))

        times = {}
        for label, size in (("10 KB", 10 * 1024), ("1 GB", 1 << 30)):
            root = base / f"transcript-{label.replace(' ', '')}"
            write_loop(root, met=True)
            path = root / "transcript.jsonl"
            transcript(path, size)
            data = orjson.dumps({"session_id": "bench", "cwd": str(root),
                                 "hook_event_name": "Stop", "transcript_path": str(path)})
            samples = []
            for _ in range(args.runs):
                reset(root)
                samples.append(median_time(hook, data, dict(env, CLAUDE_PROJECT_DIR=str(root)),
                                           root, 1))
            times[label] = statistics.median(samples)
            path.unlink()
        rows.append(("transcript 1 GB / 10 KB", "hook on a 10 KB transcript",
                     times["10 KB"], times["1 GB"]))

    print(f"Python {sys.version.split()[0]} on {sys.platform}; median of {args.runs} runs;"
          f" hook: {' '.join(hook[:-2])}")
    print()
    print(f"| {'case':<24} | {'baseline':<36} | {'baseline ms':>11} | {'hook ms':>8} |"
          f" {'ratio':>5} | {'goal':>5} |")
    print(f"|{'-' * 26}|{'-' * 38}|{'-' * 13}|{'-' * 10}|{'-' * 7}|{'-' * 7}|")
    failed = False
    for name, baseline, b, h in rows:
        ratio = h / b
        goal = GOALS[name]
        failed |= ratio > goal
        print(f"| {name:<24} | {baseline:<36} | {b * 1000:>11.1f} | {h * 1000:>8.1f} |"
              f" {ratio:>5.2f} | {goal:>5.1f} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
