"""Held-out checks (docs/how-to/held-out-checks.md): an agent that fits `mul` to the
visible test's values (`return 12` passes `assert mul(3, 4) == 12`) is caught by a
check the person added and the agent never sees, at the real Stop hook and under
`ralphstate run`; nothing of that check's command or file reaches the project's
files or the output of any ralphstate command the agent runs. The honest agent
completes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from ralphstate.run import spawn
from tests.adversarial.scripted import (
    CALC,
    CRITERION,
    FIXED_CALC,
    SESSION,
    SHOWN_SESSION,
    Agent,
    Person,
    history,
    state,
)

# The held-out test: its name, its values and a token the agent must never read.
SECRET = "HIDDEN-EDGE-7731"
HIDDEN_NAME = "test_secret_edge.py"
HIDDEN_TEST = f'''\
"""{SECRET}"""
from calc import mul


def test_other_values():
    assert mul(10, 1) == 10
'''
HINT = "mul must work for every pair of numbers"
HARD_CODED = CALC.replace('raise NotImplementedError("mul is not written yet")', "return 12")
# What the agent may never read: the file's token, its name, its values.
NEVER_SHOWN = (SECRET, "test_secret_edge", "mul(10, 1)", "test_other_values")
# The commands an agent reads the loop with.
READING = (
    ("status",),
    ("status", "--json"),
    ("show",),
    ("log",),
    ("report",),
    ("list",),
    ("verify",),
    ("heldout", "list"),
    ("heldout", "show"),
)


@pytest.fixture
def held(person: Person, calc: Path, tmp_path: Path) -> Path:
    """The person's held-out check on "tests pass", its file kept outside the project."""
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    path = hidden / HIDDEN_NAME
    path.write_text(HIDDEN_TEST)
    command = f'"{sys.executable}" -m pytest -q -p no:cacheprovider {HIDDEN_NAME}'
    added = person.rs(
        "heldout", "add", CRITERION, "--command", command, "--file", str(path), "--hint", HINT
    )
    assert "Added held-out check h1" in added.stdout, added.stdout
    # Red before green: on the tree the loop started on, `mul` is not written.
    assert "fails on the tree the loop started on, as it should" in added.stdout, added.stdout
    path.unlink()  # kept in the store: the person's copy is not needed
    return calc


def leaks(text: str) -> list[str]:
    return [word for word in NEVER_SHOWN if word in text]


def project_leaks(root: Path) -> list[str]:
    """Every file under the project, .git included, that holds held-out text."""
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes().decode("utf-8", "replace")
            found += [f"{path}: {word}" for word in leaks(data)]
    return found


def test_a_hard_coded_mul_is_caught_at_the_stop_hook(held: Path, agent: Agent) -> None:
    agent.write("calc/__init__.py", HARD_CODED)
    assert agent.rs("verify").returncode == 0  # the visible test passes

    out = agent.stop()

    assert out.get("decision") == "block", out
    reason = str(out.get("reason"))
    assert f"a held-out check for criterion '{CRITERION}' failed (hint: {HINT})" in reason
    assert leaks(reason) == [], reason
    assert state(held)["status"] == "in_progress"
    assert state(held)["criteriaStatus"][CRITERION] is False
    assert [e["by"] for e in history(held, "heldout_failed")] == ["stop"]


def test_the_agent_reads_nothing_of_it_and_the_person_everything(
    held: Path, agent: Agent, person: Person
) -> None:
    agent.write("calc/__init__.py", HARD_CODED)
    agent.rs("verify")
    outs = [str(agent.stop()), str(agent.stop())]
    for args in READING:
        done = agent.rs(*args)
        outs.append(done.stdout + done.stderr)
        assert args[0] == "heldout" or done.returncode == 0, (args, done.stderr)
    refused = agent.rs("heldout", "show")
    assert refused.returncode != 0 and "only the person" in refused.stderr, refused
    assert [leaks(text) for text in outs] == [[] for _ in outs], outs
    assert project_leaks(held) == []

    told = person.rs("heldout", "show").stdout
    assert "FAILED" in told and "mul(10, 1)" in told and HIDDEN_NAME in told, told
    assert SHOWN_SESSION.split()[-1] in told or "session 7f3c9e21" in told, told


def test_an_agents_own_verify_never_runs_it(held: Path, agent: Agent, person: Person) -> None:
    agent.write("calc/__init__.py", HARD_CODED)
    assert agent.rs("verify").returncode == 0

    assert "No runs yet." in person.rs("heldout", "show", "h1").stdout
    assert history(held, "heldout_failed") == []


def test_the_honest_agent_completes(held: Path, agent: Agent, person: Person) -> None:
    agent.write("calc/__init__.py", HARD_CODED)
    agent.rs("verify")
    assert agent.stop().get("decision") == "block"
    assert history(held, "heldout_failed")

    agent.write("calc/__init__.py", FIXED_CALC)
    assert agent.rs("verify").returncode == 0
    out = agent.stop()

    assert "decision" not in out, out
    assert state(held)["status"] == "complete"
    told = person.rs("heldout", "show", "h1").stdout
    assert "FAILED" in told and "passed" in told, told


# The scripted agent of `ralphstate run`: it fits `mul` to the visible test first, and
# writes it honestly once its prompt says a held-out check failed. Each prompt is kept
# beside the script (outside the project), to be read for leaks.
RUN_AGENT = r"""
import subprocess, sys
from pathlib import Path

prompt = sys.stdin.read()
kept = Path(sys.argv[1])
number = len(list(kept.glob("prompt-*.txt"))) + 1
(kept / f"prompt-{number}.txt").write_text(prompt)
code = Path(sys.argv[2] if "held-out check" in prompt else sys.argv[3]).read_text()
Path("calc/__init__.py").write_text(code)
subprocess.run([sys.executable, "-m", "ralphstate", "verify"], check=False)
print("wrote mul", flush=True)
"""


def test_under_run_the_hard_coded_mul_is_caught_then_the_honest_one_completes(
    held: Path, person: Person, tmp_path: Path
) -> None:
    kept = tmp_path / "agent"
    kept.mkdir()
    (kept / "fixed.py").write_text(FIXED_CALC)
    (kept / "hard.py").write_text(HARD_CODED)
    script = kept / "agent.py"
    script.write_text(RUN_AGENT)
    agent = spawn.join_command(
        [sys.executable, str(script), str(kept), str(kept / "fixed.py"), str(kept / "hard.py")]
    )

    done = person.rs("run", "--agent", agent, "--max", "4", "--json", ok=False)

    assert done.returncode == 0, (done.stdout, done.stderr)
    assert [e["by"] for e in history(held, "heldout_failed")] == ["run"]
    prompts = [p.read_text() for p in sorted(kept.glob("prompt-*.txt"))]
    assert len(prompts) == 2, prompts
    assert "a held-out check for criterion" in prompts[1] and HINT in prompts[1]
    assert [leaks(p) for p in prompts] == [[], []]
    assert project_leaks(held) == []
    assert state(held)["status"] == "complete"


def test_under_run_a_hard_coded_mul_never_completes(
    held: Path, person: Person, tmp_path: Path
) -> None:
    kept = tmp_path / "agent"
    kept.mkdir()
    (kept / "hard.py").write_text(HARD_CODED)
    script = kept / "agent.py"
    script.write_text(RUN_AGENT)
    hard = str(kept / "hard.py")
    agent = spawn.join_command([sys.executable, str(script), str(kept), hard, hard])

    done = person.rs("run", "--agent", agent, "--max", "2", "--json", ok=False)

    assert done.returncode != 0, done.stdout
    assert state(held)["status"] != "complete"
    assert len(history(held, "heldout_failed")) == 2


def test_a_completion_the_stop_would_take_as_it_stands_runs_them_first(
    held: Path, agent: Agent, person: Person
) -> None:
    # verify-on-stop off and a pass the person's own `verify` recorded on this very code:
    # the stop would complete with no check run; the held-out check runs first.
    person.rs("config", "verify-on-stop", "false")
    agent.write("calc/__init__.py", HARD_CODED)
    person.rs("verify")

    out = agent.stop()

    assert out.get("decision") == "block", out
    assert "a held-out check for criterion" in str(out.get("reason")), out
    assert state(held)["status"] == "in_progress"


def complete_task(agent: Agent, subject: str) -> subprocess.CompletedProcess[bytes]:
    """Claude Code's TaskCompleted hook, a real process, for the agent's task."""
    data = {
        "session_id": SESSION,
        "transcript_path": str(agent.root / "no-transcript.jsonl"),
        "cwd": str(agent.root),
        "hook_event_name": "TaskCompleted",
        "task_id": "1",
        "task_subject": subject,
    }
    return subprocess.run(
        [sys.executable, "-I", "-m", "ralphstate", "hook", "task-completed"],
        cwd=agent.root,
        env=agent.env(),
        input=orjson.dumps(data),
        capture_output=True,
        timeout=120,
    )


def test_the_task_gate_refuses_a_task_a_held_out_check_fails(held: Path, agent: Agent) -> None:
    agent.write("calc/__init__.py", HARD_CODED)
    agent.rs("verify")
    agent.stop("Working on it.")  # the session takes the loop on

    done = complete_task(agent, CRITERION)

    told = done.stderr.decode()
    assert done.returncode == 2, done
    assert f"a held-out check for criterion '{CRITERION}' failed (hint: {HINT})" in told, told
    assert leaks(told) == [] and done.stdout == b""
    assert [e["by"] for e in history(held, "heldout_failed")] == ["task"]

    agent.write("calc/__init__.py", FIXED_CALC)
    assert complete_task(agent, CRITERION).returncode == 0
