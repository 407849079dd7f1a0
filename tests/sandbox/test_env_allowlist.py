"""A confined agent gets an allowlist of the person's environment: the basics, git's
identity, ralphstate's and its client's variables, and what the person names with
`--env`; never their other tokens and keys. It sees none of the host's socket files."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from ralphstate.run.spawn import join_command
from tests.adversarial.scripted import Person, person_env
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap

DUMP = (
    "import json, os, sys; sys.stdin.read();"
    " sockets = sorted(os.listdir('/run')) if os.path.isdir('/run') else [];"
    " open('seen.json', 'w').write(json.dumps({'env': dict(os.environ), 'run': sockets}))"
)


def test_the_confined_agent_gets_only_the_allowlist_and_what_the_person_names(
    calc: Path, tmp_path: Path
) -> None:
    env = person_env()
    env.update(
        AWS_SECRET_ACCESS_KEY="the cloud key",
        DATABASE_PASSWORD="the password",
        MY_TOOL_TOKEN="named by the person",
        LC_ALL="C.UTF-8",
    )
    command = join_command([sys.executable, "-c", DUMP])
    done = Person(calc, env).rs(
        "run",
        "--sandbox",
        "bwrap",
        "--env",
        "MY_TOOL_TOKEN",
        "--agent",
        command,
        "--max",
        "1",
        "--json",
        ok=False,
    )
    assert orjson.loads(done.stdout)["runs"][0]["exit"] == 0, done.stderr
    seen = orjson.loads((calc / "seen.json").read_bytes())
    got = seen["env"]
    assert "AWS_SECRET_ACCESS_KEY" not in got and "DATABASE_PASSWORD" not in got, got
    assert got["MY_TOOL_TOKEN"] == "named by the person"
    assert got["LC_ALL"] == "C.UTF-8" and got["PATH"] == env["PATH"]
    assert got["RALPHSTATE_RUNNER"] == "1" and got["RALPHSTATE_SANDBOX"] == "bwrap"
    assert seen["run"] == [], seen["run"]  # /run, with the host's sockets, is empty
