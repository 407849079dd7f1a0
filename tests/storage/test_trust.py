"""Every trust rule: checks run only when a person trusted exactly these checks for
this loop on this machine, or ralphstate itself changed trusted checks. Plus Ctrl-C
during `verify`, and what status, doctor, SessionStart and install say."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.agents.contract import TIMEOUTS
from ralphstate.core import limits
from ralphstate.core import state as st
from ralphstate.install.agents import hook_command, install_agent
from ralphstate.storage.peruser import truststore
from ralphstate.storage.system.paths import LoopPaths
from tests.helpers import run_process
from tests.helpers.checks import PASS, alive, py, sleeper, wait_for

UNTRUSTED = (
    "ralphstate: the checks in .loop/state.json are not trusted on this machine (changed"
    " outside ralphstate, or they came with the repository); nothing was run. Review them"
    " (`ralphstate criteria check NAME` or `ralphstate status`), then run `ralphstate trust`.\n"
)


def state_path(project: Path) -> Path:
    return project / ".loop" / "state.json"


def hand_edit(project: Path, **changes: Any) -> None:
    raw = orjson.loads(state_path(project).read_bytes())
    raw.update(changes)
    state_path(project).write_bytes(orjson.dumps(raw))


def touch(path: Path) -> str:
    return py(f"open({str(path)!r}, 'w').close()")


def trusted(project: Path) -> bool:
    return truststore.is_trusted(LoopPaths(project, project / ".loop"), st.parse(
        state_path(project).read_bytes()
    ))  # fmt: skip


@pytest.fixture
def ran(project: Path) -> Path:
    return project / "ran"


# -- what trusts checks -----------------------------------------------------------------


def test_checks_added_through_ralphstate_are_trusted(project: Path, rs: Any, ran: Path) -> None:
    rs("init", "Build it")
    assert trusted(project)  # no checks: nothing to run
    assert rs("criteria", "add", "a", "--check", touch(ran)).code == 0
    assert trusted(project)
    assert rs("verify").code == 0 and ran.exists()


def test_a_hand_edited_check_is_refused_until_trusted(project: Path, rs: Any, ran: Path) -> None:
    rs("init", "Build it", "-c", "a")
    rs("criteria", "check", "a", PASS)
    hand_edit(project, checks={"a": touch(ran)})
    before = state_path(project).read_bytes()
    done = rs("verify")
    assert (done.code, done.out, done.err) == (1, "", UNTRUSTED)
    assert not ran.exists()
    assert state_path(project).read_bytes() == before
    done = rs("trust")
    assert done.out == (f"  a: {touch(ran)}\ntrusted this check in {project} on this machine\n")
    assert [e["event"] for e in history(project)][-1] == "trusted"
    assert rs("verify").code == 0 and ran.exists()


def test_a_hand_edit_elsewhere_in_the_file_keeps_trust(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "a")
    rs("criteria", "check", "a", PASS)
    hand_edit(project, spec="Build it better", criteriaStatus={"a": True})
    assert trusted(project)


def test_ralphstate_does_not_launder_untrusted_checks(project: Path, rs: Any, ran: Path) -> None:
    """Changing one check through ralphstate keeps the other, hand-made ones untrusted."""
    rs("init", "Build it", "-c", "a", "-c", "b")
    hand_edit(project, checks={"a": touch(ran)})
    rs("criteria", "check", "b", PASS)
    rs("criteria", "add", "c", "--check", PASS)
    assert not trusted(project)
    assert rs("verify", "b").err == UNTRUSTED
    # Removing the untrusted check leaves only what ralphstate made; still untrusted
    # until a person says so, since the trust record never covered this set.
    rs("criteria", "check", "a", "--remove")
    assert not trusted(project)
    rs("trust")
    assert trusted(project)


def test_removing_every_check_leaves_nothing_to_trust(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "a")
    hand_edit(project, checks={"a": PASS})
    assert not trusted(project)
    rs("criteria", "remove", "a")
    assert trusted(project)


def test_trusted_changes_carry_trust(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "a", "-c", "b")
    rs("criteria", "check", "a", PASS)
    rs("criteria", "check", "b", PASS)
    rs("criteria", "check", "a", py("print(2)"))
    rs("criteria", "check", "b", "--remove")
    rs("criteria", "remove", "b")
    assert trusted(project)
    assert rs("verify").code == 0


def test_a_state_file_copied_in_from_elsewhere_never_runs(
    project: Path, rs: Any, ran: Path, tmp_path: Path
) -> None:
    """A loop made and trusted in one directory, copied to another: the trust store has
    never seen it there, so nothing runs it, not verify and not the Stop hook."""
    origin = tmp_path / "origin"
    origin.mkdir()
    run_process(["init", "Build it", "-c", "a", "--verify-on-stop"], cwd=origin)
    run_process(["criteria", "check", "a", touch(ran)], cwd=origin)
    run_process(["criteria", "set", "a", "true"], cwd=origin)
    shutil.copytree(origin / ".loop", project / ".loop")
    assert not trusted(project)
    assert rs("verify").err == UNTRUSTED
    # Even once adopted here (known to the registry), the hook never runs it.
    assert rs("adopt").code == 0
    data = {"session_id": "s1", "cwd": str(project), "last_assistant_message": "<loop-complete>"}
    done = run_process(["hook", "stop"], cwd=project, input=orjson.dumps(data))
    assert b"not trusted" in done.stdout
    assert not ran.exists()
    assert json.loads(state_path(project).read_text())["pauseReason"] == "untrusted_checks"


def test_trust_is_for_exactly_these_checks_at_this_path(
    project: Path, rs: Any, tmp_path: Path
) -> None:
    rs("init", "Build it", "-c", "a")
    rs("criteria", "check", "a", PASS)
    # The same checks in a loop that replaced this one here: the commands a person
    # allowed in this directory, so still trusted.
    hand_edit(project, startedAt="2030-01-01T00:00:00Z", spec="Another loop")
    assert trusted(project)
    # One character changed: not trusted.
    hand_edit(project, checks={"a": PASS + " "})
    assert not trusted(project)


def test_an_unreadable_trust_store_trusts_nothing(project: Path, rs: Any, isolated: Path) -> None:
    rs("init", "Build it", "-c", "a")
    rs("criteria", "check", "a", PASS)
    (isolated / "data" / "trust.json").write_text("{not json")
    assert not trusted(project)
    assert rs("trust").code == 0  # and trusting writes a good store again
    assert trusted(project)
    kept = [p for p in (isolated / "data").iterdir() if p.name.endswith(".bak")]
    assert [p.read_text() for p in kept] == ["{not json"]  # keeping the old one beside


def test_trust_without_checks(project: Path, rs: Any) -> None:
    rs("init", "Build it")
    assert rs("trust").out == "this loop has no checks; there is nothing to trust\n"


# -- Ctrl-C -----------------------------------------------------------------------------


@pytest.mark.usefixtures("unconfined_checks")  # the check's pid: the test sees it
@pytest.mark.skipif(sys.platform == "win32", reason="a real SIGINT is POSIX")
def test_ctrl_c_stops_the_running_check_and_records_nothing_false(project: Path, rs: Any) -> None:
    command, pid_file, started = sleeper(project)
    rs("init", "Build it", "-c", "first", "-c", "slow")
    rs("criteria", "check", "first", PASS)
    rs("criteria", "check", "slow", command)
    rs("criteria", "set", "slow", "true")
    rs("config", "verify-jobs", "1")  # first, then slow: one at a time
    proc = subprocess.Popen(
        [sys.executable, "-m", "ralphstate", "verify"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    wait_for(started.exists, "the slow check to start")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert out.decode().startswith("PASS  first  (")
    assert err.decode() == (
        "ralphstate: interrupted; the running check was stopped and nothing was recorded for"
        " it (1 finished before it were recorded).\n"
    )
    wait_for(lambda: not alive(int(pid_file.read_text())), "the slow check to be killed")
    state = st.parse(state_path(project).read_bytes())
    assert state["criteriaStatus"] == {"first": True, "slow": True}  # the claim stands
    assert state["evidence"]["first"]["result"] == "verified"
    assert state["evidence"]["slow"]["result"] == "claimed"
    assert [e["criterion"] for e in history(project) if e["event"] == "check"] == ["first"]


# -- what people are told ---------------------------------------------------------------


def history(project: Path) -> list[dict[str, Any]]:
    path = project / ".loop" / "history.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_status_says_why_and_what_to_run(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "a")
    rs("criteria", "check", "a", PASS)
    assert (
        "checks 1: trusted on this machine · verify on stop: on (the default)" in rs("status").out
    )
    hand_edit(project, checks={"a": "make a"})
    assert (
        "checks 1: NOT trusted on this machine (changed outside ralphstate, or they came with"
        " the repository); they will not run until you review them and run `ralphstate trust`"
        " · verify on stop: on (the default)\n  a: make a\n"
    ) in rs("status").out


def test_doctor_says_why_and_what_to_run(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "a", "--verify-on-stop")
    rs("criteria", "check", "a", PASS)
    assert (
        "ok   1 check, trusted on this machine, run by `ralphstate verify` and before the"
        " Stop hook allows a claimed completion\n"
    ) in rs("doctor").out
    hand_edit(project, checks={"a": "make a"})
    assert (
        "warn the loop's 1 check is not trusted on this machine (changed outside ralphstate,"
        " or they came with the repository), so nothing runs them; review them"
        " (`ralphstate status`) and run `ralphstate trust`\n"
    ) in rs("doctor").out


def test_session_start_says_why_and_what_to_run(project: Path, rs: Any) -> None:
    rs("init", "Build it", "-c", "a", "--verify-on-stop")
    rs("criteria", "check", "a", PASS)
    data = orjson.dumps({"session_id": "s1", "cwd": str(project), "source": "startup"})
    out = orjson.loads(run_process(["hook", "session-start"], cwd=project, input=data).stdout)
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "- When you claim completion, the Stop hook runs the checks first;" in context
    assert "not trusted" not in out["systemMessage"]
    hand_edit(project, checks={"a": "make a"})
    out = orjson.loads(run_process(["hook", "session-start"], cwd=project, input=data).stdout)
    assert out["systemMessage"].endswith(
        " Its 1 check is not trusted on this machine (changed outside ralphstate, or they"
        " came with the repository) and will not run; review them (`ralphstate status`) and"
        " run `ralphstate trust`."
    )
    context = out["hookSpecificOutput"]["additionalContext"]
    assert context.endswith(
        "- The loop's checks are not trusted on this machine (changed outside ralphstate, or"
        " they came with the repository), so ralphstate will not run them; only the person"
        " may trust them: ask them to review and trust them."
    )
    assert "ralphstate trust" not in context  # what the model reads never suggests it


def test_session_start_for_a_cloned_loop_mentions_its_checks(project: Path, tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    origin.mkdir()
    run_process(["init", "Build it", "-c", "a"], cwd=origin)
    run_process(["criteria", "check", "a", PASS], cwd=origin)
    shutil.copytree(origin / ".loop", project / ".loop")
    data = orjson.dumps({"session_id": "s1", "cwd": str(project), "source": "startup"})
    out = orjson.loads(run_process(["hook", "session-start"], cwd=project, input=data).stdout)
    assert out == {
        "systemMessage": "ralphstate: this project has a loop that was not started on this"
        " machine (1 criterion, status in_progress). It is ignored until you run"
        " `ralphstate adopt`. Its 1 check will not run until you review it"
        " (`ralphstate status`) and run `ralphstate trust`."
    }


# -- the Stop hook's timeout ------------------------------------------------------------


def test_install_gives_the_stop_hook_room_for_verification(tmp_path: Path) -> None:
    assert TIMEOUTS["stop"] > limits.STOP_VERIFY_BUDGET
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    stop = {"type": "command", "command": hook_command("Stop"), "timeout": 30}
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [stop]}]}}))
    result = install_agent("claude", "project", tmp_path)
    assert "raised the Stop hook's timeout to 180s (was 30)" in result.actions
    hooks = json.loads(path.read_text())["hooks"]
    assert hooks["Stop"][0]["hooks"][0]["timeout"] == 180
    assert hooks["SessionStart"][0]["hooks"][0]["timeout"] == 30
    assert install_agent("claude", "project", tmp_path).changed is False


def test_doctor_warns_about_a_short_stop_hook_timeout(tmp_path: Path) -> None:
    from ralphstate.install import checkup

    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    install_agent("claude", "project", tmp_path)
    data = json.loads(path.read_text())
    data["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 30
    path.write_text(json.dumps(data))
    findings = checkup.check_hooks(tmp_path, home=tmp_path / "home")
    assert (
        "warn",
        (
            f"Stop hook in {path} has a timeout of 30s, less than the 180s verify-on-stop may"
            " need; run `ralphstate install --scope project` again"
        ),
    ) in findings
