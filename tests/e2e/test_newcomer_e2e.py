"""A newcomer's first loop, from the README alone: a scratch HOME, this checkout
installed as the README says (not editable), the README's own commands in its order,
and the real Claude Code client against the scripted API.

The commands are read from the README itself (the `sh` block after "Then, in your
project:"), so a README that stops working fails here. A first session replaces the
loop's check with one that always passes: the loop pauses for the person's review at
its first stop (never a stall), and `status` says so first; the person reverts and
resumes. On the plugin path, `/ralphstate:start` under `-p`, whose `init` nobody can
approve there, exits 1 having started nothing. The night's session claims "tests pass"
after its check failed and is then killed (a crash: no SessionEnd). In the morning the
person's `report`, and its HTML file in a real Chromium, show the claim refuted by its
check, not met; the next session takes the loop over at once, since the owner's
process is gone from this machine. The scripted model then does
what a goal-seeking agent does: it claims every criterion and says
it is done; the check catches the false claim and the Stop hook sends it back; it
fixes the code, and the loop completes, proven. The client runs without
`--allowedTools`: the agent's own `ralphstate` commands must run on the allow rules
`ralphstate install` wrote (`--permission-mode acceptEdits` stands in for the person
who approves the fix's edit). The one exception is the session that crashes: its last
command (`touch` and `sleep`, to be killed in) runs under `--allowedTools Bash`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_support import claude_client_env, history, run_client
from fake_api import FEEDBACK, FakeAnthropicAPI, bash, loop_context, text, texts, tool_use

from tests.helpers import browser
from tests.helpers.terminal import at_terminal

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"

BUGGY = 'def rows_to_csv(rows):\n    return "\\n".join(",".join(r) for r in rows)\n'
FIXED = (
    "def rows_to_csv(rows):\n"
    '    return "".join(",".join(str(c) for c in r) + "\\n" for r in rows)\n'
)
# A unittest case, which pytest runs too: the plugin path's check is `python3 -m
# unittest`, for a python3 that has no pytest.
TEST = (
    "import unittest\n\nfrom exporter import rows_to_csv\n\n\n"
    "class ExportTest(unittest.TestCase):\n"
    "    def test_numbers_and_a_final_newline(self):\n"
    '        self.assertEqual(rows_to_csv([["a", 1], ["b", 2]]), "a,1\\nb,2\\n")\n'
)
BUILD_TIMEOUT = 300


def readme_commands(after: str) -> list[str]:
    """The commands of the README's first `sh` block after the line `after`, with
    continuation lines joined and comments left out."""
    text = README.read_text(encoding="utf-8")
    start = text.index(after)
    block = re.search(r"```sh\n(.*?)```", text[start:], re.DOTALL)
    assert block is not None, f"no sh block after {after!r} in the README"
    joined = block.group(1).replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(shlex.join(words))
    return commands


@pytest.fixture
def newcomer(tmp_path: Path, wheelhouse: Path) -> dict[str, Any]:
    """A new environment with this checkout installed by the README's pip line, a
    scratch HOME, and a small git project whose one test fails."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    home = tmp_path / "home"
    home.mkdir()
    path = os.pathsep.join([str(bindir), os.environ.get("PATH", "")])
    offline = {
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }
    shell = {**os.environ, **offline, "HOME": str(home), "PATH": path}
    shell.pop("RALPHSTATE_HOME", None)  # the newcomer's own per-user store, under HOME
    shell.pop("VIRTUAL_ENV", None)
    # The README: "python3 -m pip install .  # into the virtual environment that is active"
    [pip_line] = [c for c in readme_commands("**As a command**") if "pip install" in c]
    installed = subprocess.run(
        pip_line + " --quiet",
        shell=True,
        cwd=REPO,
        env=shell,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert installed.returncode == 0, installed.stderr
    # The project's own test runner, as the newcomer's project would have it.
    subprocess.run(
        [str(bindir / "python"), "-m", "pip", "install", "--quiet", "pytest"],
        env=shell,
        check=True,
        timeout=300,
        capture_output=True,
    )
    project = small_project(tmp_path / "project", shell)
    return {"project": project, "home": home, "env": shell, "path": path}


def small_project(project: Path, env: dict[str, str]) -> Path:
    """A git project whose one test fails: the exporter leaves out the final newline
    and fails on numbers."""
    project.mkdir()
    (project / "exporter.py").write_text(BUGGY)
    (project / "test_exporter.py").write_text(TEST)
    git = ["git", "-c", "user.name=me", "-c", "user.email=me@example.com"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "the exporter"]):
        subprocess.run([*git, *args], cwd=project, check=True, timeout=60, env=env)
    return project


def fix_and_finish(project: Path) -> list[list[dict[str, Any]]]:
    """The model's turns once the Stop hook sent it back with the failing check: it
    fixes the code and proves it."""
    return [
        [tool_use("Read", file_path=str(project / "exporter.py"))],
        [tool_use("Write", file_path=str(project / "exporter.py"), content=FIXED)],
        [bash("ralphstate verify")],
        [text("Fixed the exporter; `ralphstate verify` passes.\n\n<loop-complete>")],
    ]


def crash(argv: list[str], project: Path, env: dict[str, str], api: FakeAnthropicAPI) -> str:
    """A night's session that runs the failing check, claims "tests pass" anyway and is
    killed mid-loop (its whole process group: no SessionEnd hook), as a crashed machine
    or a killed terminal leaves it. Returns the session that still owns the loop."""
    started = project.parent / "crash-started"
    api.add_turns(
        [bash("ralphstate verify")],
        [bash("ralphstate criteria set 'tests pass' true")],
        [bash(f"touch {shlex.quote(str(started))} && sleep 60")],
    )
    client = subprocess.Popen(
        [*argv, "--allowedTools", "Bash"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not started.exists() and client.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the night's session never ran its last command"
    finally:
        os.killpg(client.pid, signal.SIGKILL)
        client.wait(timeout=30)
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert state["criteriaStatus"]["tests pass"] is True, state
    assert state["sessionId"], state  # still the killed session's
    return str(state["sessionId"])


def morning_shows_refuted(person: Any, project: Path, tmp_path: Path) -> None:
    """The person's morning: `report` and its HTML timeline (in Chromium where the
    machine has it) say the claim of "tests pass" was refuted by its check, not met."""
    out = person("report").stdout
    assert "[!] tests pass: claimed, refuted by its check" in out, out
    assert "[x] tests pass" not in out, out
    tmp_path.mkdir(exist_ok=True)
    page = tmp_path / "morning.html"
    person("report", "--html", "-o", str(page))
    found = browser.find()
    if found is None:  # the file as written; the browser test proper needs Chromium
        rendered = page.read_text(encoding="utf-8")
    else:
        dom = browser.run(found, page, tmp_path / "chromium-profile", "--dump-dom")
        assert dom.returncode == 0, dom.stderr[-2000:]
        rendered = dom.stdout.decode()
    lane = re.findall(
        r'<rect class="(\w+)" data-criterion="tests pass".*?<title>(.*?)</title>', rendered
    )
    assert lane and lane[-1][0] == "refuted", lane
    assert "met from" not in lane[-1][1], lane
    assert '<span class="bad">claimed, refuted by its check</span>' in rendered
    assert "\\x0a" not in rendered


def taken_over(api: FakeAnthropicAPI, project: Path, first: int, owner: str) -> None:
    """The session that started after the crash (its first request `first`) took the
    loop at once, not 30 minutes later: the owner's process is gone."""
    said = loop_context(api.conversation()[first])
    assert "belongs to another session" not in said, said
    taken = history(project, "adopted")[-1]
    assert taken["from"] == owner and taken["session"] != owner, taken
    assert taken.get("ownerProcessGone") is True, taken


def installed_from(root: Path, venv: Path, env: dict[str, str], wheelhouse: Path) -> Path:
    """`ralphstate` installed from the plugin's own files into a venv of its own, offline,
    as `pipx install PLUGIN_ROOT` does; the path of the command."""
    # No pip of its own (ensurepip is the slow part on a busy machine): this pip
    # installs into it, as pipx's shared pip does.
    venv_made = [sys.executable, "-m", "venv", "--without-pip", str(venv)]
    subprocess.run(venv_made, check=True, timeout=BUILD_TIMEOUT)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    offline = {**env, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheelhouse)}
    offline.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    offline.pop("VIRTUAL_ENV", None)
    pip = [sys.executable, "-m", "pip", "--python", str(bindir / "python"), "install"]
    pip += ["--quiet", str(root)]
    done = subprocess.run(pip, env=offline, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return bindir / "ralphstate"


def sent_back(api: FakeAnthropicAPI) -> list[str]:
    """Every block reason the Stop hook sent the model."""
    return [
        said.removeprefix(FEEDBACK)
        for body in api.conversation()
        for said in texts(body, "user")[-1:]
        if said.startswith(FEEDBACK)
    ]


def test_the_readme_pip_path_blocks_a_false_claim_and_completes_a_proven_loop(
    newcomer: dict[str, Any], claude_bin: Path, api: FakeAnthropicAPI, tmp_path: Path
) -> None:
    project: Path = newcomer["project"]
    commands = readme_commands("Then, in your project:")
    assert [c.split()[:2] for c in commands] == [
        ["ralphstate", "install"],
        ["ralphstate", "init"],
        ["ralphstate", "verify"],
        ["claude"],
    ], commands
    said = {}
    for command in commands[:-1]:
        if command.split()[1] == "init":  # typed at the person's terminal: asked once
            typed = at_terminal(
                [], cwd=project, env=newcomer["env"], inherit=False, program=["sh", "-c", command]
            )
            assert typed.asked, typed.screen
            said["init"] = subprocess.CompletedProcess(command, typed.code, typed.screen, "")
            continue
        done = subprocess.run(
            command,
            shell=True,
            cwd=project,
            env=newcomer["env"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        said[command.split()[1]] = done
    assert said["install"].returncode == 0, said["install"].stderr
    assert said["init"].returncode == 0, said["init"].stderr
    # Before any work the check fails: the claim "tests pass" would be sent back.
    assert said["verify"].returncode != 0 and "FAIL" in said["verify"].stdout, said["verify"]
    state = json.loads((project / ".loop" / "state.json").read_text())
    criteria, steps = state["criteria"], state["steps"]
    env = claude_client_env(
        newcomer["path"], newcomer["home"], tmp_path / "client-tmp", api.base_url
    )
    (tmp_path / "client-tmp").mkdir()

    def person(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["ralphstate", *args],
            cwd=project,
            env=newcomer["env"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    # A first session that replaces the check with one that always passes: nothing the
    # agent may run proves "tests pass" now, so the first stop pauses for the person's
    # review, the reason the loop stopped and the first thing `status` says.
    api.add_turns(
        [bash("ralphstate criteria check 'tests pass' true")],
        [text("The check was too strict, so I relaxed it.")],
    )
    argv = [str(claude_bin), "-p", "Add CSV export to the report page", "--output-format"]
    argv += ["json", "--permission-mode", "acceptEdits"]
    assert run_client(argv, project, env, timeout=180).returncode == 0
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert (state["status"], state["pauseReason"]) == ("paused", "review"), state
    assert sent_back(api) == []  # never sent to a `verify` that refuses the check
    headline = person("status").stdout.splitlines()[0]
    assert "review" in headline.lower(), headline
    # Reverting restores what the person approved: asked at their terminal.
    program = [str(Path(newcomer["path"].split(os.pathsep)[0]) / "ralphstate"), "review"]
    typed = at_terminal(
        [], cwd=project, program=[*program, "--revert"], env=newcomer["env"], inherit=False
    )
    assert typed.code == 0, typed.screen
    person("resume")

    # The night: a session claims what its check refutes, and crashes. The morning: the
    # report and its HTML say refuted; the next session takes the loop over at once.
    owner = crash(argv, project, env, api)
    morning_shows_refuted(person, project, tmp_path)
    first = len(api.conversation())

    # `claude`, as a night would run it: the model claims everything and says it is done.
    claims = [bash(f"ralphstate criteria set {shlex.quote(c)} true") for c in criteria]
    done_steps = [bash(f"ralphstate step done {shlex.quote(s)}") for s in steps]
    api.add_turns(
        *[[call] for call in claims + done_steps],
        [text("The CSV export is done and the tests pass.\n\n<loop-complete>")],
        *fix_and_finish(project),
    )
    ran = run_client(argv, project, env, timeout=180)
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result.get("permission_denials") == [], result.get("permission_denials")
    taken_over(api, project, first, owner)

    backs = sent_back(api)
    assert any(
        "ralphstate ran the checks and 1 failed" in said and "tests pass" in said for said in backs
    ), backs
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert state["status"] == "complete", state
    assert state["evidence"]["tests pass"]["result"] == "verified"
    assert (project / "exporter.py").read_text() == FIXED


def test_the_readme_plugin_path_blocks_a_false_claim_and_completes_a_proven_loop(
    tmp_path: Path,
    claude_bin: Path,
    api: FakeAnthropicAPI,
    home: Path,
    plugin_env: dict[str, str],
    wheelhouse: Path,
) -> None:
    """The README's plugin path: its two commands typed in the checkout (as it is,
    `.venv` and all), the first session that builds the plugin's environment,
    `/ralphstate:allow` once in the project, then `/ralphstate:start`: the model starts
    the loop with a check (the person approves `init`, here `--allowedTools`) and,
    blocked on what only the person may do, pauses; the person trusts the check and
    resumes from a terminal, and the next session's false claim is caught by the
    check before the loop completes, proven."""

    def claude(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        done = run_client([str(claude_bin), *args], cwd, plugin_env, timeout)
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    # The fixture's `python3` is a script that starts the interpreter it was made from;
    # a confined check sees only its PATH's toolchain, so that interpreter's `bin` goes
    # last on the PATH, as a person's own would be (verify/confinemounts.py).
    plugin_env["PATH"] = os.pathsep.join([plugin_env["PATH"], str(Path(sys.base_prefix) / "bin")])
    readme = README.read_text(encoding="utf-8")
    block = re.search(r"```sh\n(claude plugin marketplace add.*?)```", readme, re.DOTALL)
    assert block is not None, "the README's plugin commands"
    for line in block.group(1).splitlines():
        words = shlex.split(line.replace('"$PWD"', shlex.quote(str(REPO))), comments=True)
        assert words[0] == "claude", line
        claude(*words[1:], cwd=REPO)
    copy = home / ".claude" / "plugins" / "cache" / "ralphstate" / "ralphstate"
    [version_dir] = list(copy.iterdir())
    person_bin = version_dir / "bin" / "ralphstate"

    project = small_project(tmp_path / "project", plugin_env)
    # First use: the plugin builds its environment while the session goes on.
    api.add_turns([text("Hello.")])
    claude("-p", "hello", "--output-format", "json", cwd=project)
    data = home / ".claude" / "plugins" / "data" / "ralphstate-ralphstate"
    venv = data / f"env-{version_dir.name}" / "venv"
    deadline = time.monotonic() + BUILD_TIMEOUT
    while not (venv / "ralphstate-plugin-version").exists():
        assert time.monotonic() < deadline, "the plugin's environment was not built in time"
        time.sleep(0.5)

    api.add_turns([text("Allowed.")])
    claude("-p", "/ralphstate:allow", "--output-format", "json", cwd=project)

    init = (
        'ralphstate init "Add CSV export to the report page"'
        ' --check "tests pass" "python3 -m unittest -q"'
        ' -c "export button downloads a CSV" -s "write the exporter"'
    )
    # `claude -p "/ralphstate:start ..."` as typed first: nobody can approve its `init`
    # in print mode, so the session stops there and the client exits 1, not 0.
    api.add_turns([bash("ralphstate status")], [bash(init)])
    start = ["-p", "/ralphstate:start Add CSV export to the report page"]
    start += ["--output-format", "json"]
    refused = run_client([str(claude_bin), *start], project, plugin_env, 180)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert json.loads(refused.stdout)["is_error"] is True
    assert not (project / ".loop").exists() and api.unused_turns() == 0

    api.add_turns(
        [bash("ralphstate status")],
        [bash(init)],
        [bash("ralphstate trust")],  # only a person may: refused here, nobody can answer
        # Blocked on what only the person can do, as /ralphstate:start says.
        [bash('ralphstate pause --reason "trust the check: ralphstate trust"')],
        [text("The loop is set up; please trust its check with `ralphstate trust`.")],
    )
    claude(*start, "--allowedTools", "Bash(ralphstate init:*)", cwd=project, timeout=180)
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert state["checks"] == {"tests pass": "python3 -m unittest -q"}, state
    assert state["status"] == "paused", state
    # The person reads the check, trusts it and lets the loop go on, in a terminal.
    trust = [str(person_bin), "trust"]
    typed = at_terminal(
        [], cwd=project, program=trust, env=plugin_env, timeout=BUILD_TIMEOUT, inherit=False
    )
    assert typed.code == 0, typed.screen
    done = run_client([str(person_bin), "resume"], project, plugin_env, BUILD_TIMEOUT)
    assert done.returncode == 0, done.stdout + done.stderr

    # The night: a session claims what its check refutes, and crashes. The morning, on
    # both paths: the plugin alone (its own `bin/ralphstate`), and the plugin with the
    # command installed from the plugin's files, as the plugin says at first use
    # (`pipx install PLUGIN_ROOT`; pip into a venv of its own is what pipx does). Both
    # say the claim was refuted, in the report and in its HTML.
    carry = ["-p", "Carry on with the loop.", "--output-format", "json"]
    carry += ["--permission-mode", "acceptEdits"]
    owner = crash([str(claude_bin), *carry], project, plugin_env, api)

    def morning(program: Path) -> Any:
        def person(*args: str) -> subprocess.CompletedProcess[str]:
            done = run_client([str(program), *args], project, plugin_env, BUILD_TIMEOUT)
            assert done.returncode == 0, done.stdout + done.stderr
            return done

        return person

    morning_shows_refuted(morning(person_bin), project, tmp_path / "plugin-alone")
    command = installed_from(version_dir, tmp_path / "pipx-venv", plugin_env, wheelhouse)
    morning_shows_refuted(morning(command), project, tmp_path / "with-command")
    first = len(api.conversation())

    # The next session takes the loop at once; the model claims everything at once.
    api.add_turns(
        [bash("ralphstate criteria set 'tests pass' true")],
        [bash("ralphstate criteria set 'export button downloads a CSV' true")],
        [bash("ralphstate step done 'write the exporter'")],
        [text("The CSV export is done.\n\n<loop-complete>")],
        *fix_and_finish(project),
    )
    ran = claude(*carry, cwd=project, timeout=180)
    assert json.loads(ran.stdout).get("permission_denials") == [], ran.stdout
    taken_over(api, project, first, owner)
    backs = sent_back(api)
    assert any("ralphstate ran the checks and 1 failed" in said for said in backs), backs
    state = json.loads((project / ".loop" / "state.json").read_text())
    assert state["status"] == "complete", state
    assert state["evidence"]["tests pass"]["result"] == "verified"
