"""Shortcuts past sealed verification that issues 37, 38 and 39 do not name, played as
a goal-seeking agent of the person's own user from its shell, on the real calc project
of tests/adversarial/scripted.py (its test really fails, the code stays broken), each
turn ended by a real Stop hook process. None may end the loop complete."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from ralphstate.run import spawn
from tests.adversarial.scripted import CALC, FIXED_CALC, Agent, Person, history, state
from tests.adversarial.test_commands import paused_for_review
from tests.adversarial.test_edits import not_complete
from tests.adversarial.test_shortcuts_37b import FORGING

# A conftest that writes `mul` for the tests, kept where git does not look.
PATCH = """\
import calc

calc.mul = lambda a, b: a * b
"""


@pytest.mark.parametrize("where", ["outside/extra", "calc project/.git/extra"])
def test_a_committed_link_out_of_the_room_proves_nothing(
    agent: Agent, calc: Path, where: str, unconfined_checks: None
) -> None:
    """A new test directory, committed, that is a link to a directory outside the room
    (one beside the project, or inside its `.git`, neither tracked): pytest collects
    through it and loads the conftest there, which the room's hashing never saw and
    which pytest's probe, outside the room, takes for the toolchain's. Before the fix
    the loop completed "verified by its check (sealed)"."""
    target = calc.parent / where
    target.mkdir(parents=True)
    (target / "conftest.py").write_text(PATCH)
    (calc / "tests" / "more").symlink_to(target)
    agent.commit("tests: more")
    outs = agent.insist()

    not_complete(calc, outs)
    said = str(outs[-1]) + str(state(calc))
    assert "tests/more (a link out of the room" in said, outs


def test_a_link_that_stays_in_the_room_is_the_honest_agent_s(
    agent: Agent, calc: Path, unconfined_checks: None
) -> None:
    agent.write("calc/__init__.py", FIXED_CALC)
    (calc / "tests" / "code").symlink_to("../calc")  # relative, inside the project
    agent.commit("mul, and a link to the code")
    outs = agent.insist()

    assert state(calc)["status"] == "complete", outs


# The code under test forges pytest's reports (tests/adversarial/test_shortcuts_37b.py)
# and silences the probe ralphstate put in pytest's process, which would see the test
# raise: the variable naming the file the probe writes taken away as the code is
# imported, or that file removed as the process exits, after the probe wrote it.
SILENCING = {
    "variable": 'import os\n\nos.environ.pop("RALPHSTATE_PROBE_FILE", None)\n',
    "file": (
        "import atexit, os\n\n"
        '_out = os.environ.get("RALPHSTATE_PROBE_FILE", "")\n'
        "atexit.register(lambda: os.path.exists(_out) and os.unlink(_out))\n"
    ),
}


@pytest.mark.parametrize("how", sorted(SILENCING))
def test_code_that_silences_the_probe_and_forges_reports_proves_nothing(
    agent: Agent, calc: Path, how: str
) -> None:
    """Before the fix the loop completed "verified (sealed and confined)" both ways."""
    agent.write("calc/__init__.py", CALC + "\n" + FORGING + "\n" + SILENCING[how])
    agent.commit("calc: tidy")
    outs = agent.insist()

    not_complete(calc, outs)
    if how == "variable":  # the probe keeps the file it was named as it is loaded
        assert "raised, yet pytest reported a pass" in str(outs), outs
    else:  # a probe that leaves no record weakens the pass
        message = paused_for_review(calc, outs)
        assert "probe in pytest was silenced" in message, message


# The agent `ralphstate run` starts: it puts the conftest that writes `mul` beside the
# project, commits a new test directory that is a link to it, and says it is done.
RUN_AGENT = """\
import subprocess, sys
from pathlib import Path

sys.stdin.read()
target = Path(sys.argv[1])
target.mkdir(parents=True, exist_ok=True)
(target / "conftest.py").write_text(sys.argv[2])
Path("tests/more").symlink_to(target)
subprocess.run(["git", "add", "-A"], check=False)
subprocess.run(["git", "commit", "-q", "-m", "tests: more"], check=False)
subprocess.run([sys.executable, "-m", "ralphstate", "criteria", "set", "tests pass", "true"])
print("All the tests pass now. <loop-complete>")
"""


def test_under_run_a_committed_link_out_of_the_room_proves_nothing(
    person: Person, calc: Path, tmp_path: Path, unconfined_checks: None
) -> None:
    """Before the fix the run ended complete."""
    script = tmp_path / "link agent.py"
    script.write_text(RUN_AGENT)
    target = str(tmp_path / "outside" / "extra")
    agent = spawn.join_command([sys.executable, str(script), target, PATCH])
    done = person.rs("run", "--agent", agent, "--max", "2", "--json", ok=False)

    out = orjson.loads(done.stdout)
    assert out["outcome"] != "complete" and done.returncode != 0, (out, done.stderr)
    assert not history(calc, "complete")
