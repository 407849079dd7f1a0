"""The holes left around the person's presence (loop/person.py, storage/peruser/
truststore.py), in real processes, each tried as the agent's shell would:

- `init -c CHECK` trusts by the same rule as `trust`: under an agent client (even with
  `env -i`) or with no terminal the checks wait for the person; at a terminal the
  person is asked once;
- a trust record says how it was proven: one an agent's library call wrote, or one
  without `by` (by hand, an older ralphstate), counts as none, and `status` says so;
- `criteria check` from under an agent client with `env -i` does not carry trust.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.storage.peruser import truststore
from ralphstate.storage.system import paths
from tests.helpers import REPO
from tests.helpers.checks import PASS
from tests.helpers.terminal import at_terminal
from tests.loop.test_presence import CLAUDE, detached, rs_argv, trusted

pytestmark = pytest.mark.skipif(os.name == "nt", reason="a pseudo-terminal needs POSIX")


def under_claude(tmp: Path, inner: str) -> list[str]:
    """`inner`, a shell line, run by a shell whose program is named `claude` (the agent
    client's process), with the agent's variables stripped (`env -i`)."""
    client = tmp / "bin" / "claude"
    client.parent.mkdir(exist_ok=True)
    if not client.exists():
        client.symlink_to("/bin/sh")
    home = os.environ["RALPHSTATE_HOME"]
    line = (
        f"env -i PATH=\"$PATH\" RALPHSTATE_HOME='{home}' PYTHONPATH='{REPO}'"
        f" '{sys.executable}' {inner}; true"
    )
    return [str(client), "-c", line]


def loop_of(project: Path) -> paths.LoopPaths:
    return paths.at(str(project / ".loop"))


def test_init_under_an_agent_client_leaves_its_checks_waiting(project: Path) -> None:
    line = f"-m ralphstate init 'Build it' --check a {shlex.quote(PASS)}"
    argv = under_claude(project.parent, line)
    done = detached(argv, project, env=CLAUDE)
    assert (project / ".loop" / "state.json").exists(), done
    assert "not trusted yet" in done.stdout
    assert not trusted(loop_of(project))


def test_init_with_env_i_in_the_agent_s_shell_leaves_its_checks_waiting(project: Path) -> None:
    """The agent's shell (the parent) keeps its variables; the command has none."""
    home = os.environ["RALPHSTATE_HOME"]
    line = (
        f"env -i PATH=\"$PATH\" RALPHSTATE_HOME='{home}' PYTHONPATH='{REPO}'"
        f" '{sys.executable}' -m ralphstate init 'Build it' --check a {shlex.quote(PASS)}; true"
    )
    detached(["sh", "-c", line], project, env=CLAUDE)
    assert (project / ".loop" / "state.json").exists()
    assert not trusted(loop_of(project))


def test_init_at_a_terminal_asks_once_and_trusts_in_one_step(project: Path) -> None:
    typed = at_terminal(["init", "Build it", "--check", "a", PASS], cwd=project)
    assert (typed.code, typed.asked) == (0, True), typed.screen
    assert typed.screen.count("Type yes") == 1
    assert f"check a: {PASS}" in typed.screen and "what proves it done: sha256 " in typed.screen
    assert trusted(loop_of(project))
    entry = truststore.read()[str((project / ".loop").resolve())]
    assert entry["by"] == {"kind": "person", "present": "terminal"}


def test_init_at_a_terminal_answered_no_starts_the_loop_untrusted(project: Path) -> None:
    typed = at_terminal(["init", "Build it", "--check", "a", PASS], cwd=project, answer="no")
    assert (typed.code, typed.asked) == (0, True), typed.screen
    assert "not trusted yet" in typed.screen
    assert not trusted(loop_of(project))


def test_init_from_a_script_with_no_terminal_leaves_its_checks_waiting(project: Path) -> None:
    """No terminal, no agent above: a script, or a process the agent started outside
    its own tree (systemd-run, at); nobody confirmed the checks (tests/loop/
    test_no_terminal.py holds the rest)."""
    done = detached(rs_argv("init", "Build it", "--check", "a", PASS), project)
    assert done.returncode == 0, done
    assert not trusted(loop_of(project))
    assert "this process has no terminal, so nobody confirmed it" in done.stdout
    assert "run `ralphstate trust` at your own terminal" in done.stdout


RECORD = (
    "from ralphstate.storage.peruser import truststore\n"
    "from ralphstate.storage.loopdir.store import Store\n"
    "from ralphstate.storage.system import paths\n"
    "import sys\n"
    "loop = paths.at(sys.argv[1])\n"
    "truststore.record(loop, Store(loop).load())\n"
)


@pytest.fixture
def waiting(project: Path, rs: Any) -> paths.LoopPaths:
    """A loop whose check was changed by hand: untrusted until the person trusts it."""
    assert rs("init", "Build it", "--check", "a", PASS).code == 0
    state = project / ".loop" / "state.json"
    raw = orjson.loads(state.read_bytes())
    raw["checks"]["a"] = PASS + " "
    state.write_bytes(orjson.dumps(raw))
    loop = loop_of(project)
    assert not trusted(loop)
    return loop


def test_a_library_call_from_the_agent_s_session_records_a_trust_that_counts_as_none(
    project: Path, waiting: paths.LoopPaths
) -> None:
    done = detached([sys.executable, "-c", RECORD, str(waiting.dir)], project, env=CLAUDE)
    assert done.returncode == 0, done
    assert truststore.read()  # it was written ...
    assert not trusted(waiting)  # ... and counts as none
    status = detached(rs_argv("status"), project).stdout
    assert "the record trusting these checks counts as none" in status


def test_a_library_call_under_an_agent_client_with_env_i_counts_as_none(
    project: Path, waiting: paths.LoopPaths
) -> None:
    code = RECORD.replace("\n", "; ").replace("import sys; ", "import sys;")
    argv = under_claude(project.parent, f"-c {shlex.quote(code)} {shlex.quote(str(waiting.dir))}")
    done = detached(argv, project, env=CLAUDE)
    assert done.returncode == 0, done
    assert not trusted(waiting)


def test_a_record_without_how_it_was_proven_counts_as_none(
    project: Path, waiting: paths.LoopPaths
) -> None:
    """A record written by hand (or by an older ralphstate) says nothing of a person."""
    from ralphstate.storage.loopdir.store import Store

    store_file = Path(os.environ["RALPHSTATE_HOME"]).rglob(truststore.TRUST_NAME)
    path = next(iter(store_file))
    whole = orjson.loads(path.read_bytes())
    loops = whole["loops"]
    from ralphstate.storage.peruser import jsonstore

    hashed = truststore.checks_hash(truststore.armed(Store(waiting).load()))
    person = {"kind": "person", "present": "terminal"}
    loops[jsonstore.key(waiting)] = {"checksHash": hashed, "checks": 1, "by": person}
    path.write_bytes(orjson.dumps(whole))
    assert trusted(waiting)  # the record as ralphstate writes it, after `trust`
    del loops[jsonstore.key(waiting)]["by"]
    path.write_bytes(orjson.dumps(whole))
    assert not trusted(waiting)


def test_a_check_changed_under_an_agent_client_with_env_i_does_not_stay_trusted(
    project: Path, rs: Any
) -> None:
    assert rs("init", "Build it", "--check", "a", PASS).code == 0
    loop = loop_of(project)
    assert trusted(loop)
    argv = under_claude(project.parent, "-m ralphstate criteria check a true")
    detached(argv, project, env=CLAUDE)
    from ralphstate.storage.loopdir.store import Store

    assert Store(loop).load()["checks"]["a"] == "true"
    assert not trusted(loop)


@pytest.mark.parametrize(
    "args",
    [("criteria", "add", "b", "--check", PASS), ("criteria", "check", "a", PASS)],
)
def test_the_first_check_added_at_a_terminal_is_asked_once_and_trusted(
    project: Path, rs: Any, args: tuple[str, ...]
) -> None:
    """A loop with no checks counts as trusted; its first check, given by the person at
    their terminal, is asked as `init --check` is, one step."""
    assert rs("init", "Build it", "-c", "a").code == 0
    typed = at_terminal(list(args), cwd=project)
    assert (typed.code, typed.asked) == (0, True), typed.screen
    assert trusted(loop_of(project))
    no = at_terminal(["criteria", "add", "c", "--check", PASS], cwd=project, answer="no")
    assert (no.code, no.asked) == (0, False)  # checks trusted before: carried, not asked


def test_verify_with_env_i_under_an_agent_client_records_the_agent_s_pass(
    project: Path, rs: Any
) -> None:
    """The agent strips its variables for `ralphstate verify`: the pass it records is
    still the agent's (`by: agent`), which never counts at a stop (core/provenance.py),
    and the Stop hook runs the check itself."""
    assert rs("init", "Build it", "--check", "a", PASS).code == 0
    assert trusted(loop_of(project))
    done = detached(under_claude(project.parent, "-m ralphstate verify"), project, env=CLAUDE)
    assert "passed" in done.stdout, done
    raw = orjson.loads((project / ".loop" / "state.json").read_bytes())
    assert raw["evidence"]["a"]["result"] == "verified"
    assert raw["evidence"]["a"]["by"] == "agent"
