"""The person trusts a loop, in the test's own process.

A `ralphstate init --check` run as a real process with no terminal (a subprocess of
the test) leaves its checks waiting for `ralphstate trust`, as it does for a script:
nobody was there to confirm them (loop/begin.py). The test is the person: `trust`
here runs `ralphstate trust` in this process, where `tests/conftest.py` answers the
terminal's question yes. Nothing in the environment or on disk stands in for the
person in the real processes the test starts after it; a test about that boundary
trusts at a real pty instead (`tests/helpers/terminal.py`, `at_terminal`).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path


def trust(root: Path, *extra: str) -> str:
    """`ralphstate trust` (with `extra`, as `--env NAME`) for the loop in `root`, as the
    person, in this process; what it printed. AssertionError when it did not trust."""
    from ralphstate.__main__ import main
    from ralphstate.core import actor
    from ralphstate.loop import person

    confirmed = list(person._confirmed)
    out, err = io.StringIO(), io.StringIO()
    here = Path.cwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["trust", *extra])
    finally:
        os.chdir(here)
        actor.reset()  # the next command in this process is not confirmed by this one
        person._confirmed[:] = confirmed
    assert code == 0, f"ralphstate trust failed in {root}: {out.getvalue()}{err.getvalue()}"
    return out.getvalue()


def init_trusted(
    root: Path,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`ralphstate init ARGS` as a real process in `root` (with `env`, else this
    process's), then its checks trusted by the person here (`trust`)."""
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", "init", *args],
        cwd=root,
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    trust(root)
    return done


def at_terminal_proof() -> dict[str, object]:
    """The proof a trust record carries when the person confirmed it at their terminal:
    for a test that writes the record itself (`truststore.record(..., proof=...)`), as
    the person it stands for."""
    from ralphstate.core import actor
    from ralphstate.loop import person

    return {"by": {**actor.PERSON, "present": person.AT_TERMINAL}}
