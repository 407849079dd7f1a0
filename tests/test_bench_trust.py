"""The benchmark's loops are trusted as the person trusts them (bench/person.py): a
`ralphstate trust` answered at a pty the benchmark opens, and every other benchmark
process started with no controlling terminal, so nothing asks at the person's own and
a row that should run a check runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO
from tests.helpers.terminal import at_terminal

BENCH = REPO / "bench"
pytestmark = pytest.mark.skipif(os.name != "posix", reason="a pty: Linux and macOS")


def _bench(name: str):  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCH))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(BENCH))


def test_the_bench_trusts_at_its_own_pty_and_the_check_then_runs(tmp_path: Path) -> None:
    person, processes = _bench("person"), _bench("processes")
    rs = [sys.executable, "-m", "ralphstate"]
    env = dict(os.environ)
    processes.run([*rs, "init", "Bench", "-c", "tests pass"], env, tmp_path)
    processes.run([*rs, "criteria", "check", "tests pass", "exit 0"], env, tmp_path)
    untrusted = subprocess.run(
        [*rs, "verify"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert untrusted.returncode != 0 and "not trusted" in untrusted.stderr

    shown = person.trust(rs, env, tmp_path)

    assert "Type yes to approve" in shown and "trusted this check" in shown
    _, out = processes.run([*rs, "verify"], env, tmp_path)
    assert "the one check passed" in out


def test_a_bench_process_has_no_terminal_to_ask_at(tmp_path: Path) -> None:
    """Run from the person's terminal (a pty here), the processes the benchmark starts
    cannot open it: a setup's `criteria check` never asks there."""
    probe = (
        "import os\ntry:\n    os.open('/dev/tty', os.O_RDWR)\n    print('tty')\n"
        "except OSError:\n    print('none')\n"
    )
    code = (
        f"import os, sys; sys.path.insert(0, {str(BENCH)!r}); from pathlib import Path;"
        f" from processes import run;"
        f" print('child:', run([sys.executable, '-c', {probe!r}], dict(os.environ), Path.cwd())[1])"
    )
    typed = at_terminal([], cwd=tmp_path, program=[sys.executable, "-c", code])

    assert typed.code == 0, typed.screen
    assert "child: none" in typed.screen
