"""The spec's shape, as the dual-state note (`002_*`) has a loop start: "Score against
rubric; determine shape (tool/colleague)", a colleague being an ambiguous spec that
checks in with the person. Real `ralphstate init` and `run` processes; the rubric is
docs/reference/run.md's, "The spec's shape"."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers import REPO, run_process
from tests.helpers.person import trust

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def init(root: Path, *args: str) -> str:
    done = run_process(["init", *args], cwd=root, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def readiness(root: Path) -> Any:
    return orjson.loads((root / ".loop" / "state.json").read_bytes())["readiness"]


@pytest.fixture
def repo(project: Path) -> Path:
    """A git project with a failing test, as a loop starts on one."""
    (project / "tests").mkdir()
    (project / "tests" / "test_export.py").write_text("def test_export():\n    assert False\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    subprocess.run(["git", "add", "-A"], cwd=project, check=True)
    return project


SPEC = (
    "Add a CSV export to the report page: every row is written, and the export returns exit code 0"
)
CLEAR = (
    SPEC,
    *("--check", "export tests pass", f"{sys.executable} -m pytest -q tests/test_export.py"),
    *("-s", "write the exporter", "-s", "wire the button", "--expect-fail"),
)


def test_a_clear_verifiable_spec_is_a_tool(repo: Path) -> None:
    said = init(repo, *CLEAR)

    assert "readiness" not in said and "to raise it" not in said  # nothing to do
    assert readiness(repo) == {"score": 10, "shape": "tool"}


def test_an_ambiguous_spec_is_a_colleague_and_init_says_what_raises_it(repo: Path) -> None:
    said = init(repo, "make it better", "-c", "the code is nicer")

    line = next(s for s in said.splitlines() if s.startswith("readiness"))
    assert line.startswith("readiness 2/10: colleague-shaped, a point for each thing"), said
    # The score explained in the line, with the rubric's page, which exists.
    assert "8 or more leaves nothing to judgement" in line
    page, anchor = line.rsplit("the rubric: ", 1)[1].rstrip(")").split("#")
    assert f"### {anchor.replace('-', ' ')}" in (
        (REPO / page).read_text(encoding="utf-8").lower().replace("'", "")
    )
    # No mode that would stop the night at each step: the person did not ask for it.
    assert "check-in" not in said and "check in" not in said
    advice = said.split("to raise it: ", 1)[1]
    assert "--check NAME COMMAND" in advice and "-s STEP" in advice and "(it has 3)" in advice
    assert readiness(repo) == {"score": 2, "shape": "colleague"}
    # Deterministic: the same loop scores the same.
    again = init(repo, "--force", "make it better", "-c", "the code is nicer")
    assert [s for s in again.splitlines() if "readiness" in s or "raise" in s] == [
        s for s in said.splitlines() if "readiness" in s or "raise" in s
    ]


def test_each_rubric_item_moves_the_score(repo: Path) -> None:
    """From the clear spec, taking one item away at a time takes its points."""
    scores = {}
    for name, args in {
        "no check": [SPEC, "-c", "export tests pass"],
        "no red before green": list(CLEAR[:-1]),
        "no guards": [*CLEAR, "--no-guard"],
        "a vague criterion": [*CLEAR, "-c", "the page looks nice"],
    }.items():
        init(repo, "--force", *args)
        scores[name] = readiness(repo)["score"]
    assert scores == {
        "no check": 5,  # 2 checks + programs + red before green + steps
        "no red before green": 9,
        "no guards": 9,
        "a vague criterion": 8,  # a criterion without a check (1), and vague (1)
    }


def test_the_plugins_start_command_shows_the_score_and_checks_in(repo: Path) -> None:
    start = (REPO / "commands" / "start.md").read_text(encoding="utf-8")
    (line,) = re.findall(r"^ +(ralphstate init .*)$", start, re.MULTILINE)
    said = init(repo, *shlex.split(line)[2:])
    shape = readiness(repo)["shape"]
    assert ("readiness" in said) == (shape == "colleague"), said
    assert "readiness N/10: colleague-shaped" in start and "check in" in start
    assert 'ralphstate pause --reason "check-in' in start


# -- what a colleague-shaped loop does differently: `run --check-in` -----------------------

AGENT = r"""
import subprocess, sys
from pathlib import Path

count = Path(sys.argv[1])
n = int(count.read_text()) + 1 if count.exists() else 1
count.write_text(str(n))
sys.stdin.read()
rs = [sys.executable, "-m", "ralphstate"]
if n == 1:
    subprocess.run([*rs, "step", "done", "write the exporter"], check=True)
if n == 2:
    subprocess.run([*rs, "step", "done", "wire the button"], check=True)
    Path("export.csv").write_text("a,b\n")
"""


def test_a_run_that_checks_in_pauses_at_each_step_and_before_completing(
    project: Path, tmp_path: Path
) -> None:
    init(
        project,
        "Export the report",
        *("--check", "the export is written", "test -f export.csv"),
        *("-s", "write the exporter", "-s", "wire the button"),
    )
    trust(project)
    script = tmp_path / "agent.py"
    script.write_text(AGENT, encoding="utf-8")
    command = shlex.join([sys.executable, str(script), str(tmp_path / "count")])

    def run() -> dict[str, Any]:
        done = run_process(
            ["run", "--agent", command, "--check-in", "--json", "--max", "5"],
            cwd=project,
            timeout=120,
        )
        assert done.returncode in (0, 3), done.stderr
        result: dict[str, Any] = orjson.loads(done.stdout)
        return result

    first, second, third = run(), run(), run()

    assert (first["reason"], first["iterations"]) == ("check_in", 1)
    assert first["detail"] == (
        'finished "write the exporter"; look at the work, then `ralphstate run`'
    )
    assert (second["reason"], second["iterations"]) == ("check_in", 1)
    assert second["detail"].startswith("every criterion is verified")
    assert (third["outcome"], third["iterations"]) == ("complete", 0)
    assert (tmp_path / "count").read_text() == "2"
