"""Faults stay calm: a missing home directory, per-user directories that cannot be
written, a hook whose output streams are closed, a working directory that was deleted,
a full disk during `ralphstate run`, and a stop whose reply cannot be read. Each is one
sentence, said before anything changes, in real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.core import state as st
from tests.helpers.hardening import hook_input_for, make_loop
from tests.test_faults import not_writable, ralphstate

POSIX = pytest.mark.skipif(os.name != "posix", reason="POSIX users, streams and directories")

# ralphstate as a user the password database does not know, with no HOME: no home
# directory can be found.
NO_HOME = """
import pwd, sys

def unknown(uid):
    raise KeyError(f"getpwuid(): uid not found: {uid}")

pwd.getpwuid = unknown
from ralphstate.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


def homeless(args: list[str], cwd: Path, data: bytes = b"") -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HOME", "RALPHSTATE_HOME") and not k.startswith("XDG_")
    }
    return subprocess.run(
        [sys.executable, "-c", NO_HOME, *args],
        cwd=cwd,
        input=data.decode(),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


NO_HOME_LINE = (
    "ralphstate: cannot find your home directory, where ralphstate keeps what this"
    " machine knows (HOME is not set, and your user has no home in the password database);"
    " set HOME, or RALPHSTATE_HOME to a directory of your own.\n"
)


@POSIX
def test_without_a_home_directory_init_says_so_before_anything_changes(project: Path) -> None:
    done = homeless(["init", "Build it", "-c", "tests pass"], project)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", NO_HOME_LINE)
    assert not (project / ".loop").exists()


@POSIX
def test_without_a_home_directory_the_other_commands_and_hooks_are_calm(
    project: Path, rs: Any
) -> None:
    assert rs("init", "Build it", "-c", "tests pass").code == 0
    assert rs("criteria", "check", "1", "true").code == 0
    for args in (
        ["criteria", "set", "1", "true"],
        ["criteria", "check", "1", "exit 0"],
        ["status"],
        ["criteria", "add", "docs"],
    ):
        done = homeless(args, project)
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stdout + done.stderr
    state = st.parse((project / ".loop" / "state.json").read_bytes())
    assert state["criteriaStatus"] == {"tests pass": True, "docs": False}
    adopted = homeless(["adopt"], project)
    assert (adopted.returncode, adopted.stdout, adopted.stderr) == (1, "", NO_HOME_LINE)
    verified = homeless(["verify"], project)  # nothing is trusted without a home
    assert (verified.returncode, verified.stdout) == (1, "")
    assert verified.stderr.count("\n") == 1 and "not trusted" in verified.stderr
    hook = homeless(["hook", "stop"], project, orjson.dumps(hook_input_for(project)))
    assert hook.returncode == 0
    assert "Traceback" not in hook.stdout + hook.stderr


@POSIX
def test_unwritable_per_user_directories_init_refuses_before_starting_a_loop(
    project: Path, isolated: Path
) -> None:
    (isolated / "state").mkdir()
    with not_writable(isolated / "state") as preexec:
        done = ralphstate(["init", "Build it", "-c", "tests pass"], project, preexec=preexec)
    assert done.code == 1
    assert done.text.startswith("ralphstate: could not write the loop registry ")
    assert done.text.endswith(
        "; without it the hooks would take the loop for one that came with a clone."
        " Nothing was started.\n"
    )
    assert not (project / ".loop").exists()


@POSIX
@pytest.mark.parametrize("closed", [(1,), (2,), (1, 2)])
def test_a_hook_with_its_output_closed_exits_0_silently(
    project: Path, closed: tuple[int, ...]
) -> None:
    make_loop(project)

    def close() -> None:
        for fd in closed:
            os.close(fd)

    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", "hook", "stop"],
        cwd=project,
        input=orjson.dumps(hook_input_for(project)),
        capture_output=False,
        preexec_fn=close,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0


@POSIX
def test_a_deleted_working_directory_is_one_sentence(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    script = (
        "import os, sys\n"
        f"os.chdir({str(gone)!r}); os.rmdir({str(gone)!r})\n"
        "from ralphstate.__main__ import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    for args in (["status"], ["init", "x", "-c", "a"]):
        gone.mkdir()
        done = subprocess.run(
            [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False
        )
        assert (done.returncode, done.stdout) == (1, "")
        assert done.stderr == (
            "ralphstate: the current directory no longer exists (it was deleted or moved);"
            " cd to the project and run the command again.\n"
        )


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("missing.jsonl", "the transcript could not be read"),
        # not a path at all: said the same way, never a silent block
        (5, "its transcript_path is a number, not a path"),
        (["a.jsonl"], "its transcript_path is a list, not a path"),
        ({"file": "a.jsonl"}, "its transcript_path is an object, not a path"),
        (True, "its transcript_path is true or false, not a path"),
    ],
)
def test_a_stop_without_a_reply_it_can_read_says_so(
    project: Path, isolated: Path, path: object, why: str
) -> None:
    make_loop(project)
    given = str(project / path) if isinstance(path, str) else path
    data = hook_input_for(project, transcript_path=given)
    del data["last_assistant_message"]
    done = ralphstate(["hook", "stop"], project, input=orjson.dumps(data))
    assert done.code == 0
    assert orjson.loads(done.out)["decision"] == "block"
    assert done.text == (
        "ralphstate hook stop: the reply that ended the turn could not be read (no"
        f" last_assistant_message, and {why}); it is taken to hold no completion marker.\n"
    )
    log = (isolated / "log" / "ralphstate.log").read_text()
    assert "the reply that ended the turn could not be read" in log


@POSIX
def test_a_full_disk_during_run_names_the_file_records_the_iteration_and_pauses(
    project: Path, rs: Any, tmp_path: Path
) -> None:
    """The prompt file cannot be written (a file size limit stands in for a full disk):
    the run names the file, records the iteration it had started, and pauses the loop
    so that no hook keeps a session on a loop whose run broke."""
    from tests.helpers import run_agents
    from tests.test_faults import size_limit

    assert rs("init", "Build the parser", "-c", "tests pass", "-s", "write it").code == 0
    (project / "context.md").write_text("notes " * 400)  # only the prompt holds it
    agent = run_agents.command(run_agents.write(tmp_path / "agents"), "file", "progress")
    done = ralphstate(
        ["run", "--agent", agent, "--context", "context.md", "--max", "3"],
        project,
        preexec=size_limit(2000),
    )
    assert done.code == 1, done
    last = done.text.splitlines()[-1]
    assert last.startswith("ralphstate: iteration 1: could not write ")
    assert "ralphstate-prompt-" in last and last.endswith(": File too large.")
    assert "Traceback" not in done.text
    lines = (project / ".loop" / "history.jsonl").read_bytes().splitlines()
    events = [orjson.loads(line) for line in lines]
    (iteration,) = [e for e in events if e["event"] == "run_iteration"]
    assert (iteration["iteration"], iteration["decision"]) == (1, "error")
    assert events[-1]["event"] == "run_finished" and events[-1]["outcome"] == "error"
    state = st.parse((project / ".loop" / "state.json").read_bytes())
    assert state["status"] == "paused"
    assert str(state["pauseReason"]).startswith("ralphstate run stopped: iteration 1: could")
