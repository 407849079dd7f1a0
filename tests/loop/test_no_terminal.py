"""No terminal, no approval (loop/person.py, storage/peruser/truststore.py), in real
processes: a process with no controlling terminal and no agent above it (a script, or
one the agent started outside its own tree: systemd-run, at, a daemon it left) shows
no person, so

- `criteria add NAME --check` and `criteria check NAME COMMAND` run there carry no
  trust: the changed checks wait for `ralphstate trust`;
- a trust record an older ralphstate wrote for such a process ("unconfirmed": no
  terminal, no agent above) counts as none, and `status` says so;
- the person's `ralphstate trust` at a terminal trusts them in one step.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.storage.peruser import jsonstore, truststore
from ralphstate.storage.system import paths
from tests.helpers.checks import PASS
from tests.helpers.terminal import at_terminal
from tests.loop.test_presence import detached, rs_argv, trusted

pytestmark = pytest.mark.skipif(os.name == "nt", reason="a pseudo-terminal needs POSIX")


def loop_of(project: Path) -> paths.LoopPaths:
    return paths.at(str(project / ".loop"))


def test_a_check_changed_from_a_script_with_no_terminal_does_not_stay_trusted(
    project: Path, rs: Any
) -> None:
    assert rs("init", "Build it", "--check", "a", PASS).code == 0
    loop = loop_of(project)
    assert trusted(loop)
    done = detached(rs_argv("criteria", "check", "a", "true"), project)
    assert done.returncode == 0, done
    from ralphstate.storage.loopdir.store import Store

    assert Store(loop).load()["checks"]["a"] == "true"
    assert not trusted(loop)


def test_a_first_check_added_from_a_script_with_no_terminal_waits(project: Path, rs: Any) -> None:
    assert rs("init", "Build it", "-c", "a").code == 0
    done = detached(rs_argv("criteria", "add", "b", "--check", PASS), project)
    assert done.returncode == 0, done
    assert not trusted(loop_of(project))
    typed = at_terminal(["trust"], cwd=project)
    assert (typed.code, typed.asked) == (0, True), typed.screen
    assert trusted(loop_of(project))


def test_an_old_unconfirmed_record_counts_as_none_and_status_says_so(
    project: Path, rs: Any
) -> None:
    """What an older ralphstate recorded for a script's `init -c`: a person's actor
    with no presence, no terminal, no agent above."""
    assert rs("init", "Build it", "--check", "a", PASS).code == 0
    loop = loop_of(project)
    path = next(iter(Path(os.environ["RALPHSTATE_HOME"]).rglob(truststore.TRUST_NAME)))
    whole = orjson.loads(path.read_bytes())
    entry = whole["loops"][jsonstore.key(loop)]
    entry.update(by={"kind": "person"}, terminal=False, agentAbove=False)
    path.write_bytes(orjson.dumps(whole))
    assert not trusted(loop)
    status = detached(rs_argv("status"), project).stdout
    assert "the record trusting these checks counts as none" in status
    verify = detached(rs_argv("verify"), project)
    assert "not trusted" in verify.stdout + verify.stderr
