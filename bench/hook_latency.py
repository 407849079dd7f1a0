"""Latency of ralphstate as users install it: whole processes, as ratios.

    python bench/hook_latency.py [--runs N] [--quick] [--sealed]

Makes a temporary venv, `pip install`s this checkout into it (a regular install, not
editable: pip compiles the bytecode), makes scratch projects and times whole
processes there against the venv's `python -c pass`, in interleaved pairs (baseline,
case, baseline, case, ...). Each pair gives a ratio; the table shows the median, the
lowest and the highest, and the goal. The rows:

- Stop, no loop: the command `ralphstate install` writes for Claude Code's Stop hook,
  in a project without a loop;
- Stop, blocking: the same command blocking an in-progress loop with an unmet
  criterion, owned by the input's session;
- the plugin's Stop, no loop / blocking: the Claude Code plugin's command for Stop
  (`python hooks/launch.py stop`, the launcher of the copy installed from, run by the
  venv's python, which imports ralphstate of the plugin's version), in the project
  without a loop against `python -c pass`, and blocking the loop against the Stop
  hook's blocking row (the installed command: the plugin path as fast as the pip path);
- SessionStart: the SessionStart command restoring that loop;
- PostToolUse, no loop / a loop: the hook `ralphstate install --tasks` adds, mirroring
  a `TaskCreate` (each run a new task, so every run writes) in the project without a
  loop and in the one with it;
- PreToolUse, a Bash call / an approval: the hook `ralphstate install` writes for the
  Bash tool, in the project with a loop: a command that names no ralphstate (let go
  before the input is parsed), and `ralphstate trust` in a session a person attends
  (asked: a one-time approval written to the per-user approvals file);
- TaskCompleted, no loop / a loop: the TaskCompleted hook `ralphstate install --tasks`
  adds, completing a task in the project without a loop, and in the one with it a task
  tied to no criterion (nothing runs: a tied task's time is its check's);
- status line, no loop / a loop: the command `ralphstate install --statusline` writes,
  with Claude Code's status-line input, in the project without a loop and in the one
  with it;
- `ralphstate criteria set`, `step done`, `status`, through the installed console
  script (each `criteria set` flips the criterion, each `step done` marks another
  step, so every run writes);
- transcript: the Stop hook reading the last reply from a 1 GB (sparse) transcript,
  against the same hook on a 10 KB one (the baseline of this row);
- session usage: the Stop hook blocking a loop with a token budget (`maxTokens`),
  counting the tokens of one reply appended to a 1 GB (sparse) transcript since the
  last stop, against the same on a 10 KB one (the baseline of this row);
- history: `ralphstate log` on a 1 GB history whose tail has no newline (sparse),
  against a 10 KB one; `ralphstate status` of a loop with 10,000 steps, against 10
  (half of each done);
- clean room: `verify --clean` against `verify` (one check, `exit 0`) in git repositories
  of 3 and of 2,000 files; the Stop hook verifying a claimed completion (its check `exit
  1` fails) in a clean room, against the same with `clean-verify off`, in repositories
  of 3 and of 2,000 files (`--sealed` times these, the fingerprint's and the Stop hook
  with no loop alone);
- confined checks: `verify` of one check (`exit 0`) in place, confined (bubblewrap on
  Linux), against the same with the person's switch that runs checks unconfined (goal:
  under 50 ms a check);
- snapshot: `verify` in place (one check, `exit 0`) in a git repository of 20,000 files
  (200 MB) beside an untracked 2 GiB (sparse) file that grows a byte before each run,
  against the same without it: the evidence snapshot does not read an untracked file
  past its size limit, so its cost stays flat in untracked bytes;
- linear parsing: SessionStart with a task file whose box line holds 1 MiB of blanks,
  against one whose line is short; PreToolUse of a 1 MB Bash command holding an
  approving word (asked without being read), against `ralphstate trust`;
- scale: SessionStart restoring a loop of 50,000 criteria (half met) against one of 10,
  and `ralphstate list` of 1,000 loops against 10 (each in a git repository): linear
  renders, and `list` reads a state file a loop and starts no git;
- long suites: the Stop hook at a claim, on new code, whose check's last run (3 s) is
  longer than the stop's budget (2 s here): not run in the stop but left to the
  background verification, which the stop waits for up to its budget, against the Stop
  hook blocking an unmet criterion (goal: a block's cost, not the suite's);
  `ralphstate verify` of 50 checks of `sleep 0.2`, side by side, against one `sleep
  0.2` (goal: the time of a few of them, not of 50);
- toolchain fingerprint: what a check resolves to, fingerprinted in a whole process,
  for a check run by the python of a virtualenv of 200 distributions with entry
  points (bench/fingerprint.py): first (its cache removed before each run; no goal)
  and cached (goal: a few interpreter starts);
- for reference, with no goal: importing the dependencies alone (`python -c "import
  orjson, filelock"`, what a hook that changes the state needs; with click, what a
  command that changes it needs), the least those rows can cost.

The checks the rows run are the person's to trust: the benchmark, run by the person
from their own shell, answers `ralphstate trust` in a pseudo-terminal it opens
(bench/person.py) and starts every other process with no controlling terminal, so
nothing asks at the person's own. Windows has no pty: there those rows are left out.

Needs only the standard library here, and PyPI (or pip's configured index) for the
dependencies. Ratios move by 10-20% with the machine's load; exits 1 when a median
misses its goal.

A goal is a ratio, or for the rows whose floor is their dependencies' import (a hook
that writes the state or a per-user file imports orjson and filelock, a command click
too) at most 20% above that reference row's median, measured in the same run (`WRITES`,
`COMMANDS`).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

from confined import confined_checks
from fingerprint import fingerprint_rows
from person import LEFT_OUT, TRUSTS
from processes import BIG, SESSION, Proc, hook_input, run
from repositories import big_untracked, clean_rooms
from scale import big_loops
from suites import long_suites

CHECKOUT = Path(__file__).resolve().parent.parent
WINDOWS = os.name == "nt"


# Variables that would make a process act for someone else's session or loop.
LEAKY = ("CODEX_SESSION_ID", "CODEX_THREAD_ID", "COPILOT_AGENT_SESSION_ID", "GEMINI_CLI")


# Goals tied to a reference row: its median times the factor.
Floor = tuple[str, float]
WRITES: Floor = ("import orjson, filelock", 1.2)
COMMANDS: Floor = ("import click, orjson, filelock", 1.2)


def install(base: Path) -> tuple[str, Path]:
    """A venv with this checkout installed: its python, and its scripts directory. The
    copy it was built from stays in `base/source`, the plugin's files with it."""
    print(f"installing {CHECKOUT} into a temporary venv ...", file=sys.stderr)
    venv.create(base / "venv", with_pip=True)
    scripts = base / "venv" / ("Scripts" if WINDOWS else "bin")
    python = str(scripts / ("python.exe" if WINDOWS else "python"))
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    # Built from a copy: the build leaves nothing in the checkout, and a stale build/
    # there cannot put modules that are gone into what is measured.
    source = base / "source"
    junk = (".git", "node_modules", "build", "dist", "*.egg-info", "__pycache__", ".*cache")
    shutil.copytree(CHECKOUT, source, ignore=shutil.ignore_patterns(*junk, ".venv*", ".loop"))
    subprocess.run([*pip, str(source)], check=True)
    return python, scripts


def hook(python: str, event: str) -> tuple[str, list[str]]:
    """The command `ralphstate install` writes for `event` (`"PYTHON" -I -c "CODE"
    stop`, one simple command), and the process it starts: its words as sh splits them."""
    code = f"from ralphstate.install.agents import hook_command; print(hook_command({event!r}))"
    line = subprocess.run([python, "-I", "-c", code], check=True, capture_output=True, text=True)
    command = line.stdout.strip()
    return command, shlex.split(command)


def post_tool_use(python: str) -> list[str]:
    """The process of the PostToolUse hook's command (`"PYTHON" -I -c "CODE"
    post-tool-use`), as the install writes every hook's."""
    code = "from ralphstate.install import command; print(command.shell_command('post-tool-use'))"
    line = subprocess.run([python, "-I", "-c", code], check=True, capture_output=True, text=True)
    return shlex.split(line.stdout.strip())


def task_created(root: Path, i: int) -> bytes:
    task = {"id": str(i), "subject": f"task {i}", "description": ""}
    fields = {"tool_name": "TaskCreate", "tool_input": {"subject": task["subject"]}}
    return hook_input(root, "PostToolUse", **fields, tool_response={"task": task})


def statusline(python: str) -> list[str]:
    """The process of the command `ralphstate install --statusline` writes."""
    code = "from ralphstate.install.statusline_setup import command; print(command())"
    line = subprocess.run([python, "-I", "-c", code], check=True, capture_output=True, text=True)
    return shlex.split(line.stdout.strip())


def status_input(root: Path) -> bytes:
    workspace = {"current_dir": str(root), "project_dir": str(root)}
    data = {"session_id": SESSION, "cwd": str(root), "workspace": workspace, "version": "2"}
    return json.dumps(data).encode()


def sparse_transcript(path: Path, size: int) -> None:
    """`size` bytes whose end is a user turn and a reply without the marker."""
    tail = "".join(
        json.dumps(line) + "\n"
        for line in (
            {"type": "user", "message": {"role": "user", "content": "continue"}},
            {
                "type": "assistant",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Still working on it."}],
                },
            },
        )
    ).encode()
    with path.open("wb") as handle:
        handle.truncate(size - len(tail) - 1)  # a hole: no disk, no time to write
        handle.seek(0, os.SEEK_END)
        handle.write(b"\n" + tail)


def reply_line(number: int) -> bytes:
    """One Claude Code transcript line of a reply with its usage, its own message id."""
    usage = {"input_tokens": 100, "cache_read_input_tokens": 7, "output_tokens": 20}
    content = [{"type": "text", "text": "Still working on it."}]
    message = {"id": f"msg_bench_{number:08d}", "role": "assistant", "content": content}
    entry: dict[str, object] = {"type": "assistant", "timestamp": "2099-01-01T00:00:00.000Z"}
    entry["message"] = {**message, "usage": usage}
    return json.dumps(entry).encode() + b"\n"


def cases(
    base: Path, python: str, scripts: Path, env: dict[str, str], runs: int
) -> list[tuple[str, float | Floor | None, Proc, Proc | None]]:
    """(row, goal (None: a reference row; a Floor: tied to one), the process timed, its
    baseline: None for `python -c pass`)."""
    rs = [str(scripts / ("ralphstate.exe" if WINDOWS else "ralphstate"))]
    owned = dict(env, CLAUDE_CODE_SESSION_ID=SESSION)

    def project(name: str, *init: str) -> Path:
        root = base / name
        root.mkdir()
        if init:  # owned by the hook input's session; never paused by a cap
            run([*rs, "init", "Benchmark loop", *init, *BIG], owned, root)
        return root

    stop, start = hook(python, "Stop")[1], hook(python, "SessionStart")[1]
    said = {"last_assistant_message": "Still working on it."}
    empty = project("no-loop")
    looped = project("loop", "-c", "tests pass", "-c", "lint clean", "-s", "one")
    steps = [f"step {i}" for i in range(runs + 1)]  # one to mark in each run
    tasks = project("tasks", "-c", "tests pass", "-s", "one")
    cli = project("cli", "-c", "tests pass", *[a for s in steps for a in ("-s", s)])
    read = {}
    for label, size in (("10 KB", 10 * 1024), ("1 GB", 1 << 30)):
        root = project(f"transcript-{label.replace(' ', '')}", "-c", "tests pass")
        run([*rs, "criteria", "set", "tests pass", "true"], env, root)
        sparse_transcript(root / "transcript.jsonl", size)
        data = hook_input(root, "Stop", transcript_path=str(root / "transcript.jsonl"))
        read[label] = Proc(stop, root, data, '"block"')
    # A session's tokens: each stop reads only what was appended since the last one.
    # The first stop (not timed) reads the tail; each timed one a reply appended just
    # before it starts.
    counted = {}
    for label, size in (("10 KB", 10 * 1024), ("1 GB", 1 << 30)):
        root = project(f"usage-{label.replace(' ', '')}", "-c", "tests pass")
        run([*rs, "config", "max-tokens", "1000000000000"], env, root)
        path = root / "transcript.jsonl"
        sparse_transcript(path, size)
        data = hook_input(root, "Stop", transcript_path=str(path), **said)
        run(stop, dict(env, CLAUDE_PROJECT_DIR=str(root)), root, data)

        def appending(i: int, path: Path = path) -> list[str]:
            with path.open("ab") as handle:
                handle.write(reply_line(i))
            return stop

        counted[label] = Proc(appending, root, data, '"block"')
    # The history is read within a byte bound: `log` on a 1 GB history whose tail has
    # no newline (sparse) against a 10 KB one; `status` of 10,000 steps against 10.
    logs = {}
    for label, size in (("10 KB", 10 * 1024), ("1 GB", 1 << 30)):
        root = project(f"history-{label.replace(' ', '')}", "-c", "tests pass")
        with (root / ".loop" / "history.jsonl").open("ab") as handle:
            handle.truncate(size)  # a hole after the init line: no disk, no time to write
        logs[label] = Proc([*rs, "log", "-n", "20"], root)
    plans = {}
    for count in (10, 10_000):
        many = [a for i in range(count) for a in ("-s", f"step {i}")]
        root = project(f"steps-{count}", *many)
        state = json.loads((root / ".loop" / "state.json").read_bytes())
        state["completedSteps"] = state["steps"][: count // 2]  # half of them done
        (root / ".loop" / "state.json").write_text(json.dumps(state))
        plans[count] = Proc([*rs, "status"], root, expect="spec:")

    nothing = Proc(stop, empty, hook_input(empty, "Stop", **said))
    blocking = Proc(stop, looped, hook_input(looped, "Stop", **said), '"block"')
    plugin = [python, str(base / "source" / "hooks" / "launch.py"), "stop"]
    plugin_nothing = Proc(plugin, empty, hook_input(empty, "Stop", **said))
    plugin_blocking = Proc(plugin, looped, hook_input(looped, "Stop", **said), '"block"')
    restore = hook_input(looped, "SessionStart", source="startup")
    restoring = Proc(start, looped, restore, "additionalContext")
    flip = Proc(
        lambda i: [*rs, "criteria", "set", "tests pass", "false" if i % 2 else "true"],
        cli,
        expect="tests pass:",
    )
    mark = Proc(lambda i: [*rs, "step", "done", steps[i]], cli, expect="done: step")
    mirror = post_tool_use(python)
    # each run a new task (the hook prints nothing: `mirrored` checks the rows' effect)
    bare_task = Proc(mirror, empty, lambda i: task_created(empty, i))

    def mirrored() -> str | None:
        state = json.loads((tasks / ".loop" / "state.json").read_bytes())
        made = [t for t in state["steps"] if t.startswith("task ")]
        return None if len(made) == runs + 1 else f"{len(made)} tasks mirrored, not {runs + 1}"

    loop_task = Proc(mirror, tasks, lambda i: task_created(tasks, i), verify=mirrored)
    pre = hook(python, "PreToolUse")[1]

    def bash_call(command: str) -> bytes:
        call = {"tool_name": "Bash", "tool_input": {"command": command, "description": "Run"}}
        return hook_input(looped, "PreToolUse", **call)

    tests_call = Proc(pre, looped, bash_call("pytest -q"))
    attended = {"CLAUDE_CODE_SESSION_ATTENDED": "1"}
    approval = Proc(pre, looped, bash_call("ralphstate trust"), '"ask"', env=attended)
    gate = hook(python, "TaskCompleted")[1]
    done = {"task_id": "1", "task_subject": "Write the parser", "task_description": "It parses."}
    bare_gate = Proc(gate, empty, hook_input(empty, "TaskCompleted", **done))
    loop_gate = Proc(gate, looped, hook_input(looped, "TaskCompleted", **done))
    status = statusline(python)
    bare_line = Proc(status, empty, status_input(empty))
    loop_line = Proc(status, looped, status_input(looped), "verified")

    # Linear parsing: SessionStart with a 1 MiB line of blanks in a box of the task file,
    # against a short one; PreToolUse of a 1 MB Bash command, against a short approval.
    starts = {}
    for label, blanks in (("1 MiB", (1 << 20) - 100), ("short", 10)):
        root = base / f"tasks-line-{label.replace(' ', '')}"
        root.mkdir()
        (root / "TASKS.md").write_text("- [ ] one\n")
        run([*rs, "init", "Benchmark loop", "--task", "TASKS.md", *BIG], owned, root)
        (root / "TASKS.md").write_text(f"- [ ] one\n- [ ] long{' ' * blanks}x\n")
        begin = hook_input(root, "SessionStart", source="startup")
        starts[label] = Proc(start, root, begin, "additionalContext")
    huge = "ralphstate review " + " " * 1_000_000 + " --approve"
    huge_call = Proc(pre, looped, bash_call(huge), '"ask"', env=attended)

    def imports(names: str) -> Proc:
        return Proc([python, "-c", f"import {names}"], empty)

    return [
        ("Stop hook, no loop", 1.1, nothing, None),
        ("Stop hook, blocking", WRITES, blocking, None),
        ("plugin Stop, no loop", 1.1, plugin_nothing, None),
        ("plugin Stop, blocking / pip", 1.1, plugin_blocking, blocking),
        ("SessionStart hook", 4.5, restoring, None),
        ("PostToolUse hook, no loop", 1.1, bare_task, None),
        ("PostToolUse hook, a loop", WRITES, loop_task, None),
        ("PreToolUse hook, a Bash call", 1.1, tests_call, None),
        ("PreToolUse hook, an approval", WRITES, approval, None),
        ("TaskCompleted hook, no loop", 1.1, bare_gate, None),
        ("TaskCompleted hook, a loop", 4.5, loop_gate, None),
        ("status line, no loop", 1.1, bare_line, None),
        ("status line, a loop", 4.5, loop_line, None),
        ("ralphstate criteria set", COMMANDS, flip, None),
        ("ralphstate step done", COMMANDS, mark, None),
        ("ralphstate status", COMMANDS, Proc([*rs, "status"], cli, expect="spec:"), None),
        ("Stop, 1 GB transcript / 10 KB", 1.1, read["1 GB"], read["10 KB"]),
        ("Stop, tokens, 1 GB / 10 KB", 1.1, counted["1 GB"], counted["10 KB"]),
        ("log, 1 GB history / 10 KB", 1.3, logs["1 GB"], logs["10 KB"]),
        ("status, 10,000 steps / 10", 2.0, plans[10_000], plans[10]),
        ("SessionStart, 1 MiB line / short", 1.5, starts["1 MiB"], starts["short"]),
        ("PreToolUse, 1 MB command / short", 1.5, huge_call, approval),
        *clean_rooms(base, rs, env, owned, stop),
        *big_untracked(base, rs, env),
        *confined_checks(base, rs, env),
        *big_loops(base, rs, env, owned, start),
        *long_suites(base, rs, env, owned, stop),
        *fingerprint_rows(base, python, env),
        ("import orjson, filelock", None, imports("orjson, filelock"), None),
        ("import click, orjson, filelock", None, imports("click, orjson, filelock"), None),
    ]


def sealed(
    base: Path, python: str, scripts: Path, env: dict[str, str], runs: int
) -> list[tuple[str, float | Floor | None, Proc, Proc | None]]:
    """`--sealed`: the rows of `cases` a sealed verification's cost shows in, alone."""
    rs = [str(scripts / ("ralphstate.exe" if WINDOWS else "ralphstate"))]
    owned = dict(env, CLAUDE_CODE_SESSION_ID=SESSION)
    stop = hook(python, "Stop")[1]
    said = {"last_assistant_message": "Still working on it."}
    empty = base / "no-loop"
    empty.mkdir()
    return [
        ("Stop hook, no loop", 1.1, Proc(stop, empty, hook_input(empty, "Stop", **said)), None),
        *clean_rooms(base, rs, env, owned, stop),
        *fingerprint_rows(base, python, env),
    ]


def measure(proc: Proc, baseline: Proc, env: dict[str, str], runs: int) -> list[float]:
    """Ratios proc/baseline of `runs` interleaved pairs, after one unmeasured pair."""
    ratios = []
    for i in range(runs + 1):
        times = []
        for side in (baseline, proc):
            side_env = dict(env, CLAUDE_PROJECT_DIR=str(side.cwd), **side.env)
            took, out = run(side.command(i), side_env, side.cwd, side.data(i))
            if side.expect not in out:
                sys.exit(f"{shlex.join(side.command(i))}: no {side.expect!r} in {out!r}")
            times.append(took)
        if i:
            ratios.append(times[1] / times[0])
    wrong = proc.verify() if proc.verify else None
    if wrong:
        sys.exit(f"{shlex.join(proc.command(0))}: {wrong}")
    return ratios


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="pairs per case (default 21)")
    parser.add_argument("--quick", action="store_true", help="5 pairs per case")
    parser.add_argument(
        "--sealed",
        action="store_true",
        help="only the rows of sealed verification: Stop with no loop, the clean room's"
        " and the toolchain fingerprint's",
    )
    args = parser.parse_args()
    runs = 5 if args.quick else args.runs
    if runs < 1:
        parser.error("--runs must be at least 1")
    with tempfile.TemporaryDirectory(prefix="ralphstate-bench-") as tmp:
        base = Path(tmp)
        python, scripts = install(base)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CLAUDE_", "RALPHSTATE_", "PYTHON")) and k not in LEAKY
        }
        # Per-user files (the registry, the trust store) under a scratch home, found by
        # platformdirs as they are by default; Windows' known folders ignore the
        # environment, so there RALPHSTATE_HOME points at the scratch home instead.
        home = base / "home"
        home.mkdir()
        if WINDOWS:
            env["RALPHSTATE_HOME"] = str(home)
        else:
            env.update(
                HOME=str(home),
                XDG_DATA_HOME=str(home / "data"),
                XDG_STATE_HOME=str(home / "state"),
                XDG_CACHE_HOME=str(home / "cache"),
            )
        rows = []
        made = (sealed if args.sealed else cases)(base, python, scripts, env, runs)
        for name, goal, proc, baseline in made:
            bare = baseline or Proc([python, "-c", "pass"], proc.cwd)
            print(f"timing {name} ...", file=sys.stderr)
            ratios = measure(proc, bare, env, runs)
            rows.append((name, goal, statistics.median(ratios), min(ratios), max(ratios)))
        about = "import platform; print(platform.python_version())"
        version = run([python, "-c", about], env, base)[1].strip()
        shown = hook(python, "Stop")[0]
    print(
        f"Python {version} on {sys.platform}, {os.cpu_count()} CPUs; {runs} pairs a case;"
        f" ratios against `python -c pass` (a row named A / B: against B)"
    )
    print(f"Stop hook, as install writes it: {shown.replace(str(base), '<tmp>')}")
    if not TRUSTS:
        print(LEFT_OUT)
    print()
    print(f"| {'case':<30} | median | {'min':>5} | {'max':>5} | goal | met? |")
    print(f"|{'-' * 32}|-------:|------:|------:|-----:|------|")
    missed = False
    medians = {name: median for name, _, median, _, _ in rows}
    for name, wanted, median, low, high in rows:
        goal = medians[wanted[0]] * wanted[1] if isinstance(wanted, tuple) else wanted
        met = "ref" if goal is None else "yes" if median <= goal else "no"
        missed |= met == "no"
        shown_goal = "-" if goal is None else f"{goal:.1f}"
        print(
            f"| {name:<30} | {median:>6.2f} | {low:>5.2f} | {high:>5.2f} |"
            f" {shown_goal:>4} | {met:<4} |"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
