"""`ralphstate verify`, `criteria check`, `config` and claimed versus verified, with
real check commands: pass, fail, a sleeper past its timeout, 10 MB of output."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, cast

import orjson
import pytest

from ralphstate.core import clock, limits, queries
from ralphstate.core import state as st
from ralphstate.core.errors import CorruptState
from ralphstate.loop.project import locate
from ralphstate.verify import onecheck, pipeline
from tests.helpers.checks import FAIL, PASS, alive, py, script, sleeper, wait_for

POSIX_ONLY = pytest.mark.skipif(sys.platform == "win32", reason="process groups are POSIX")


def state_of(project: Path) -> st.State:
    return st.parse((project / ".loop" / "state.json").read_bytes())


def history_of(project: Path) -> list[dict[str, Any]]:
    path = project / ".loop" / "history.jsonl"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def make_loop(rs: Any, checks: dict[str, str | None], *extra: str) -> None:
    """A loop whose criteria are `checks`' keys, each given its check through ralphstate."""
    args = ["init", "Build it", *extra]
    for name in checks:
        args += ["-c", name]
    assert rs(*args).code == 0
    for name, command in checks.items():
        if command is not None:
            done = rs("criteria", "check", name, command)
            assert done.code == 0, done.err


def ageless(text: str) -> str:
    return re.sub(r"\d+[smhd] ago", "N ago", text)


def timeless(text: str) -> str:
    return re.sub(r"\(\d+\.\ds", "(Ts", text)


# -- verify ---------------------------------------------------------------------------


def test_verify_records_pass_and_fail_with_evidence(project: Path, rs: Any) -> None:
    make_loop(rs, {"tests pass": PASS, "lint clean": FAIL, "docs": None})
    done = rs("verify")
    assert (done.code, done.err) == (1, "")
    assert timeless(done.out) == (
        "PASS  tests pass  (Ts, exit code only)\n"
        "FAIL  lint clean  (Ts, exit code 3)\n"
        "    first line\n"
        "    boom: 1 == 2\n"
        "1 of 2 checks failed\n"
    )
    state = state_of(project)
    assert state["criteriaStatus"] == {"tests pass": True, "lint clean": False, "docs": False}
    good, bad = state["evidence"]["tests pass"], state["evidence"]["lint clean"]
    assert set(state["evidence"]) == {"tests pass", "lint clean"}
    assert {k: good[k] for k in ("result", "exitCode", "timedOut", "outputTail")} == {
        "result": "verified",
        "exitCode": 0,
        "timedOut": False,
        "outputTail": "all good",
    }
    assert {k: bad[k] for k in ("result", "exitCode", "summary", "outputTail", "command")} == {
        "result": "failing",
        "exitCode": 3,
        "summary": "exit code 3",
        "outputTail": "first line\nboom: 1 == 2",
        "command": FAIL,
    }
    assert bad["outputBytes"] in (24, 26)  # "\n" or "\r\n" line ends
    assert isinstance(bad["durationMs"], int) and bad["durationMs"] >= 0
    assert clock.parse_iso(bad["at"]) is not None
    checks = [e for e in history_of(project) if e["event"] == "check"]
    assert [(e["criterion"], e["result"], e["by"], e["exitCode"]) for e in checks] == [
        ("tests pass", "verified", "verify", 0),
        ("lint clean", "failing", "verify", 3),
    ]
    assert checks[1]["outputTail"] == "first line\nboom: 1 == 2"


def test_verify_all_passing_exits_0(project: Path, rs: Any) -> None:
    make_loop(rs, {"a": PASS, "b": PASS})
    done = rs("verify")
    assert (done.code, timeless(done.out)) == (
        0,
        "PASS  a  (Ts, exit code only)\nPASS  b  (Ts, exit code only)\nall 2 checks passed\n",
    )


def test_verify_runs_in_the_project_root_from_a_subdirectory(
    project: Path, rs: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_loop(rs, {"cwd": py("import os; print(os.getcwd())")})
    (project / "sub" / "deeper").mkdir(parents=True)
    monkeypatch.chdir(project / "sub" / "deeper")
    assert rs("verify").code == 0
    tail = state_of(project)["evidence"]["cwd"]["outputTail"]
    assert Path(tail).resolve() == project.resolve()


def test_verify_names_and_numbers_select_checks(project: Path, rs: Any) -> None:
    marker = project / "ran-b"
    make_loop(
        rs,
        {"a": PASS, "b": py(f"open({str(marker)!r}, 'w').close()"), "c": FAIL},
    )
    done = rs("verify", "3", "a", "a")
    assert timeless(done.out).splitlines()[0] == "PASS  a  (Ts, exit code only)"  # the loop's order
    assert timeless(done.out).splitlines()[1] == "FAIL  c  (Ts, exit code 3)"
    assert not marker.exists()
    assert set(state_of(project)["evidence"]) == {"a", "c"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "ralphstate: no criterion 'nope' in this loop (criteria: 'a', 'b').\n"),
        (
            ["b"],
            (
                "ralphstate: criterion 'b' has no check; give it one with"
                ' `ralphstate criteria check "b" "COMMAND"`.\n'
            ),
        ),
        (
            ["--timeout", "0"],
            "ralphstate: --timeout must be a number of seconds above 0 and at most 86400, not 0.\n",
        ),
    ],
)
def test_verify_user_errors_run_nothing(
    project: Path, rs: Any, args: list[str], message: str
) -> None:
    marker = project / "ran"
    make_loop(rs, {"a": py(f"open({str(marker)!r}, 'w').close()"), "b": None})
    before = (project / ".loop" / "state.json").read_bytes()
    done = rs("verify", *args)
    assert (done.code, done.out, done.err) == (1, "", message)
    assert not marker.exists()
    assert (project / ".loop" / "state.json").read_bytes() == before


def test_verify_without_checks_says_how_to_add_one(project: Path, rs: Any) -> None:
    make_loop(rs, {"a": None})
    done = rs("verify")
    assert (done.code, done.err) == (
        1,
        (
            "ralphstate: no criterion in this loop has a check; add one: ralphstate criteria check"
            ' NAME "CMD".\n'
        ),
    )


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_verify_json(project: Path, rs: Any) -> None:
    make_loop(rs, {"a": PASS, "b": FAIL})
    done = rs("verify", "--json")
    assert done.code == 1
    data = json.loads(done.out)
    assert [(d["criterion"], d["result"], d["exitCode"], d["outputTail"]) for d in data] == [
        ("a", "verified", 0, "all good"),
        ("b", "failing", 3, "first line\nboom: 1 == 2"),
    ]
    assert set(data[0]) == {
        "criterion", "result", "command", "exitCode", "timedOut", "durationMs", "at",
        "summary", "outputTail", "outputBytes", "alreadyTrue", "strength", "by", "confined",
    }  # fmt: skip
    assert "alreadyTrue" not in data[1]  # it passed at its first run, before any work


def test_a_check_that_cannot_start_fails_and_says_why(project: Path) -> None:
    result = onecheck.run_one("x", PASS, str(project / "no such directory"), 5)
    assert (result.passed, result.exit_code, result.timed_out) == (False, None, False)
    assert result.summary.startswith("could not start: ")


# -- timeouts ---------------------------------------------------------------------------


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_a_check_past_its_timeout_is_killed_and_fails(project: Path, rs: Any) -> None:
    command, pid_file, _ = sleeper(project)
    make_loop(rs, {"slow": command, "fast": PASS})
    done = rs("verify", "--timeout", "2")
    assert done.code == 1
    assert timeless(done.out) == (
        "FAIL  slow  (Ts, timed out after 2s)\n"
        "    sleeping\n"
        "PASS  fast  (Ts, exit code only)\n"
        "1 of 2 checks failed\n"
    )
    evidence = state_of(project)["evidence"]["slow"]
    assert (evidence["result"], evidence["timedOut"], evidence["exitCode"]) == (
        "failing",
        True,
        None,
    )
    assert evidence["summary"] == "timed out after 2s"
    assert not alive(int(pid_file.read_text()))


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_a_criterions_own_timeout_applies(project: Path, rs: Any) -> None:
    command, pid_file, _ = sleeper(project)
    make_loop(rs, {"slow": command})
    assert rs("criteria", "check", "slow", "--timeout", "1.5").out == (
        f"slow: {command}  (timeout 1.5s)\n"
    )
    assert state_of(project)["checkTimeouts"] == {"slow": 1.5}
    done = rs("verify")
    assert timeless(done.out).splitlines()[0] == "FAIL  slow  (Ts, timed out after 1.5s)"
    assert not alive(int(pid_file.read_text()))


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
@POSIX_ONLY
def test_nothing_a_check_starts_outlives_it(project: Path, rs: Any) -> None:
    """A check that leaves a process behind in the background: the group is killed
    when its shell exits, and verify does not wait for the straggler."""
    command, pid_file, started = sleeper(project, "straggler")
    waiter = script(
        project / "wait.py",
        "import pathlib, time\n"
        f"while not pathlib.Path({str(started)!r}).exists():\n"
        "    time.sleep(0.01)\n",
    )
    make_loop(rs, {"bg": f"{command} & {waiter}; echo done"})
    done = rs("verify")
    said = "PASS  bg  (Ts, exit code only)\nthe one check passed\n"
    assert (done.code, timeless(done.out)) == (0, said)
    assert started.exists()
    wait_for(lambda: not alive(int(pid_file.read_text())), "the straggler to be killed")


@pytest.mark.usefixtures("unconfined_checks")  # the check talks to the test
def test_the_budget_bounds_all_checks_together(project: Path, rs: Any) -> None:
    command, pid_file, _ = sleeper(project)
    marker = project / "ran-second"
    make_loop(rs, {"slow": command, "second": py(f"open({str(marker)!r}, 'w').close()")})
    rs("config", "verify-jobs", "1")  # one after the other: the budget is the slow one's
    results = pipeline.verify(locate(), pipeline.Ask(budget=2)).results
    assert [(r.criterion, r.passed, r.timed_out, r.exit_code) for r in results] == [
        ("slow", False, True, None),
        ("second", False, False, None),
    ]
    assert re.fullmatch(
        r"timed out after [12](\.\d+)?s: the verification time budget ran out", results[0].summary
    )
    assert results[1].summary == "not run: the verification time budget was used up"
    assert not marker.exists()
    assert not alive(int(pid_file.read_text()))
    state = state_of(project)
    assert state["criteriaStatus"] == {"slow": False, "second": False}
    assert state["evidence"]["second"]["summary"] == results[1].summary


# -- 10 MB of output --------------------------------------------------------------------


def test_ten_megabytes_of_output_keep_only_a_bounded_tail(project: Path, rs: Any) -> None:
    code = (
        "import sys\n"
        "line = 'x' * 99 + '\\n'\n"
        "for _ in range(100_000):\n"
        "    sys.stdout.write(line)\n"
        "sys.stdout.write('the last line\\n')\n"
        "sys.exit(1)\n"
    )
    make_loop(rs, {"loud": script(project / "loud.py", code)})
    done = rs("verify")
    assert done.code == 1
    evidence = state_of(project)["evidence"]["loud"]
    tail = evidence["outputTail"]
    assert tail.endswith("\nthe last line")
    assert len(tail.encode()) <= limits.MAX_CHECK_OUTPUT_BYTES
    assert len(tail.splitlines()) <= limits.MAX_CHECK_OUTPUT_LINES
    assert set(tail.splitlines()[:-1]) == {"x" * 99}  # no line cut through
    assert evidence["outputBytes"] >= 10_000_000
    assert (project / ".loop" / "state.json").stat().st_size < 20_000
    assert len(done.out) < 10_000


def test_tail_drops_escape_codes_and_control_characters(project: Path, rs: Any) -> None:
    make_loop(rs, {"colour": py(r"print('\x1b[31mred\x1b[0m\x07 and\r\nplain')")})
    rs("verify")
    assert state_of(project)["evidence"]["colour"]["outputTail"] == "red and\nplain"


# -- claimed versus verified ------------------------------------------------------------


def test_claimed_then_verified_then_failing_in_status(project: Path, rs: Any) -> None:
    make_loop(rs, {"tests pass": PASS, "docs": None, "lint": FAIL})
    done = rs("criteria", "set", "tests pass", "true")
    assert done.out == "tests pass: met\n"
    rs("criteria", "set", "docs", "true")
    state = state_of(project)
    assert state["evidence"]["tests pass"]["result"] == "claimed"
    assert state["evidence"]["docs"]["result"] == "claimed"
    setting = [e for e in history_of(project) if e["event"] == "criterion_set"]
    assert setting[-1]["evidence"] == "claimed"
    lines = ageless(rs("status").out).splitlines()
    assert lines[2:9] == [
        "criteria 2/3 (2 claimed):",
        "  [x] tests pass  (claimed N ago)",
        "  [x] docs  (claimed N ago)",
        "  [ ] lint  (check not run yet)",
        "checks 2: trusted on this machine · verify on stop: on (the default)",
        f"  tests pass: {PASS}",
        f"  lint: {FAIL}",
    ]
    rs("verify")
    lines = ageless(rs("status").out).splitlines()
    assert lines[3:6] == [  # it passed at the first run, before any work
        (
            "  [x] tests pass  (verified N ago, checked in the agent's environment,"
            " exit code only, already true at the start: proves nothing about the work)"
        ),
        "  [x] docs  (claimed N ago)",
        "  [ ] lint  (failing N ago: exit code 3)",
    ]
    # Claiming a verified criterion again changes nothing: it stays verified.
    rs("criteria", "set", "tests pass", "true")
    assert state_of(project)["evidence"]["tests pass"]["result"] == "verified"
    # Setting it false drops the evidence; a failing one claimed true is a claim.
    rs("criteria", "set", "tests pass", "false")
    rs("criteria", "set", "lint", "true")
    state = state_of(project)
    assert "tests pass" not in state["evidence"]
    assert state["evidence"]["lint"]["result"] == "claimed"
    assert ageless(rs("status").out).splitlines()[3:6] == [
        "  [ ] tests pass  (check not run yet)",
        "  [x] docs  (claimed N ago)",
        "  [x] lint  (claimed N ago)",
    ]


def test_status_shows_the_age_of_the_evidence() -> None:
    from freezegun import freeze_time

    from ralphstate.core import views

    state = st.new("s", ["a", "b", "c", "d"], [], now="2026-01-01T00:00:00Z")
    state["checks"] = {"a": "x", "b": "y", "d": "z"}
    state["criteriaStatus"] = {"a": True, "b": False, "c": True, "d": False}
    state["evidence"] = {
        "a": {"result": "verified", "at": "2026-01-01T10:00:00Z"},
        "b": {"result": "failing", "at": "2026-01-01T09:00:00Z", "summary": "exit code 2"},
        "c": {"result": "claimed", "at": "2025-12-30T12:00:00Z"},
    }
    with freeze_time("2026-01-01T10:03:00Z"):
        lines = views.status(state, views.StatusFacts("/p")).splitlines()
    assert lines[3:7] == [
        "  [x] a  (verified 3m ago, checked in the agent's environment)",
        "  [ ] b  (failing 1h ago: exit code 2)",
        "  [x] c  (claimed 1d ago)",
        "  [ ] d  (check not run yet)",
    ]
    assert lines[7] == "checks 3: verify on stop: on (the default)"  # trust not known: not shown
    state["verifyOnStop"] = False
    lines = views.status(state, views.StatusFacts("/p")).splitlines()
    assert lines[7] == "checks 3: verify on stop: OFF (ralphstate config verify-on-stop false)"


def test_standing_never_looks_better_than_the_status() -> None:
    state = st.new("s", ["a", "b", "c"], [], now="2026-01-01T00:00:00Z")
    state["checks"] = {"a": "x", "b": "y"}
    state["evidence"] = {"a": {"result": "verified"}, "b": {"result": "failing"}}
    # Hand edits: a verified criterion set false, a failing one set true.
    state["criteriaStatus"] = {"a": False, "b": True, "c": False}
    assert [queries.standing(state, c) for c in "abc"] == ["unchecked", "claimed", None]


# -- criteria check and config ----------------------------------------------------------


def test_criteria_check_sets_shows_and_removes(project: Path, rs: Any) -> None:
    make_loop(rs, {"a": None})
    assert rs("criteria", "check", "a").out == "a: no check\n"
    assert rs("criteria", "check", "1", "make test").out == (
        "a: make test  (timeout 600s, default)\n"
    )
    assert rs("criteria", "check", "a", "--timeout", "90").out == "a: make test  (timeout 90s)\n"
    rs("verify")  # `make test` fails or is missing: failing evidence
    assert state_of(project)["evidence"]["a"]["result"] == "failing"
    # A new command drops evidence about the old one.
    rs("criteria", "check", "a", PASS)
    state = state_of(project)
    assert (state["checks"], state["checkTimeouts"], state["evidence"]) == (
        {"a": PASS},
        {"a": 90},
        {},
    )
    assert rs("criteria", "check", "a", "--remove").out == "removed the check of 'a'\n"
    state = state_of(project)
    assert (state["checks"], state["checkTimeouts"]) == ({}, {})
    events = [e["event"] for e in history_of(project)]
    assert events.count("check_set") == 3 and events[-1] == "check_removed"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a", ""], "a check needs a command; to drop one use --remove."),
        (
            ["a", "--timeout", "5"],
            (
                "criterion 'a' has no check to give a timeout to; give the command too:"
                ' ralphstate criteria check NAME "COMMAND".'
            ),
        ),
        (
            ["a", "x", "--timeout", "-1"],
            "a check timeout is a number of seconds above 0 and at most 86400, not -1.",
        ),
        (["a", "x", "--remove"], "--remove takes no command, no --timeout and no --expect-fail."),
        (["zz", "x"], "no criterion 'zz' in this loop (criteria: 'a')."),
    ],
)
def test_criteria_check_user_errors(project: Path, rs: Any, args: list[str], message: str) -> None:
    make_loop(rs, {"a": None})
    before = (project / ".loop" / "state.json").read_bytes()
    done = rs("criteria", "check", *args)
    assert (done.code, done.out, done.err) == (1, "", f"ralphstate: {message}\n")
    assert (project / ".loop" / "state.json").read_bytes() == before


def test_removing_a_criterion_removes_its_check_timeout_and_evidence(
    project: Path, rs: Any
) -> None:
    make_loop(rs, {"a": PASS, "b": PASS})
    rs("criteria", "check", "a", "--timeout", "5")
    rs("verify")
    rs("criteria", "remove", "a")
    state = state_of(project)
    assert (set(state["checks"]), state["checkTimeouts"], set(state["evidence"])) == (
        {"b"},
        {},
        {"b"},
    )


def test_config_verify_on_stop(project: Path, rs: Any) -> None:
    make_loop(rs, {"a": None})
    assert "\nverify-on-stop: default (on)\n" in rs("config").out
    assert rs("config", "verify-on-stop", "yes").out == "verify-on-stop: true\n"
    assert state_of(project)["verifyOnStop"] is True
    assert rs("config", "verify-on-stop").out == "true\n"
    assert history_of(project)[-1]["event"] == "config"
    assert rs("config", "verify-on-stop", "default").out == "verify-on-stop: default (on)\n"
    assert state_of(project)["verifyOnStop"] is None
    done = rs("config", "verify-on-stop", "maybe")
    assert (done.code, done.err) == (
        1,
        "ralphstate: 'maybe' is not true or false (use true/false, yes/no or 1/0).\n",
    )
    done = rs("config", "colour", "red")
    assert (done.code, done.err) == (
        1,
        (
            "ralphstate: no setting 'colour'; the settings are: max-iterations, stall-limit,"
            " marker, continue-message, spec, verify-on-stop, clean-verify, verify-budget,"
            " verify-jobs, max-cost, max-tokens, max-duration, owner-timeout, reviewer.\n"
        ),
    )


def test_init_verify_on_stop(project: Path, rs: Any) -> None:
    assert rs("init", "Build it", "-c", "a", "--verify-on-stop").code == 0
    assert state_of(project)["verifyOnStop"] is True


def test_init_from_a_template_with_checks_shows_them_untrusted(project: Path, rs: Any) -> None:
    template = project / "loop.json"
    template.write_text(
        json.dumps(
            {
                "spec": "Build it",
                "criteria": ["a"],
                "checks": {"a": PASS},
                "checkTimeouts": {"a": 30},
                "verifyOnStop": True,
                "evidence": {"a": {"result": "verified"}},
            }
        )
    )
    done = rs("init", "--from", str(template))
    assert done.out.splitlines()[2:-2] == [  # then the spec's readiness
        f"check (not trusted yet) a: {PASS}",
        "the template's check will not run until you review it, then run `ralphstate trust`",
    ]
    state = state_of(project)
    assert (state["verifyOnStop"], state["checkTimeouts"], state["evidence"]) == (
        True,
        {"a": 30},
        {},
    )
    assert rs("init", "--from", str(template), "--force", "--no-verify-on-stop").code == 0
    assert state_of(project)["verifyOnStop"] is False
    assert rs("verify").code == 1  # not trusted: a template may come with a repository
    assert rs("trust").code == 0
    assert rs("verify").code == 0


def test_init_shows_a_templates_checks_as_they_will_run(project: Path, rs: Any) -> None:
    """A template's checks are shown by `init` for review: a control character in one is
    shown as \\xNN, so the line cannot be redrawn to hide what will run."""
    template = project / "loop.json"
    hidden = "make test\rexit 0 # looks harmless"
    template.write_text(
        json.dumps({"spec": "Build it", "criteria": ["a\x1b[2J"], "checks": {"a\x1b[2J": hidden}})
    )
    done = rs("init", "--from", str(template))
    assert done.out.splitlines()[2:-2] == [  # then the spec's readiness
        "check (not trusted yet) a\\x1b[2J: make test\\x0dexit 0 # looks harmless",
        "the template's check will not run until you review it, then run `ralphstate trust`",
    ]


# -- the schema -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"verifyOnStop": "yes"}, "'verifyOnStop' must be true, false or null, not 'yes'"),
        ({"checkTimeouts": [1]}, "'checkTimeouts' must be an object of criterion: seconds"),
        (
            {"checkTimeouts": {"a": 0}},
            "checkTimeouts['a'] must be a number of seconds above 0 and at most 86400, not 0",
        ),
        (
            {"checkTimeouts": {"a": True}},
            "checkTimeouts['a'] must be a number of seconds above 0 and at most 86400, not True",
        ),
        ({"evidence": ["a"]}, "'evidence' must be an object of criterion: {result, ...}"),
        (
            {"evidence": {"a": {"result": "sure"}}},
            "evidence['a'] must be an object whose 'result' is verified, claimed, failing",
        ),
    ],
)
def test_bad_verification_fields_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(CorruptState) as caught:
        st.normalise({"spec": "s", "criteria": ["a"], **changes})
    assert str(caught.value) == f"state.json: {message}"


def test_verification_fields_default_and_survive_a_rewrite() -> None:
    state = st.normalise({"spec": "s", "criteria": ["a"], "mine": 1})
    assert (state["verifyOnStop"], state["checkTimeouts"], state["evidence"]) == (None, {}, {})
    raw = {
        "spec": "s",
        "criteria": ["a"],
        "verifyOnStop": True,
        "checkTimeouts": {"a": 1.5},
        "evidence": {"a": {"result": "claimed", "at": "x", "extra": [1]}},
        "mine": 1,
    }
    again = st.parse(st.dumps(st.normalise(raw)))
    assert {k: cast(st.Raw, again)[k] for k in raw} == raw
