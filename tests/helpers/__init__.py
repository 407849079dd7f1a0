"""What the tests share: the repository's places, the result of a command run
in-process, and a real `python -m ralphstate` process. Imported by the tests and by
conftest.py, never from conftest.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures"


class Result:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def __repr__(self) -> str:
        return f"Result(code={self.code}, out={self.out!r}, err={self.err!r})"


def run_process(
    args: list[str],
    *,
    cwd: Path,
    input: bytes | str = b"",
    env: dict[str, str] | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[bytes]:
    """Run `python -m ralphstate ARGS...` as a real process with this test's environment."""
    data = input.encode() if isinstance(input, str) else input
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ralphstate", *args],
        cwd=cwd,
        input=data,
        capture_output=True,
        env=full_env,
        timeout=timeout,
    )


def colleague(score: int, advice: str) -> str:
    """What `init` says of a colleague-shaped spec (loop/readiness.py): its score, what
    the score means and where the rubric is, and `advice`, what would raise the score."""
    return (
        f"readiness {score}/10: colleague-shaped, a point for each thing that lets checks,"
        " not judgement, tell the work is done (8 or more leaves nothing to judgement;"
        " the rubric: docs/reference/run.md#the-specs-shape)"
        f"\n  to raise it: {advice}\n"
    )
