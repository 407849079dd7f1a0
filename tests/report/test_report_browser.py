"""`ralphstate report` on a loop made by real `ralphstate run` processes in a real
repository, and its HTML file in a real headless browser (Chromium): it loads with no
network, its timeline has one bar per iteration, and its screenshot is not blank."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from ralphstate.run import spawn
from ralphstate.verify import confine
from tests.helpers import browser, run_process
from tests.helpers.gitrepo import git, init_repo, use_identity

# How a sealed pass is said here: confined where bubblewrap starts.
LEVEL = "sealed and confined" if confine.bubblewrap() else "sealed"

AGENT = r"""
import subprocess, sys
from pathlib import Path

prompt = sys.stdin.read()
n = len(list(Path(".").glob("work-*.txt"))) + 1
Path(f"work-{n}.txt").write_text(f"work {n}\n")
if n == 4:  # the check proves "tests pass" after iteration 3; the docs come last
    subprocess.run(
        [sys.executable, "-m", "ralphstate", "criteria", "set", "docs written", "true"], check=True
    )
"""
# What Chromium itself asks for in the background (updates, its clock, accounts),
# whatever the page: not the page's doing.
OWN = re.compile(
    rb"^[A-Z]+ (https?://)?[a-z0-9.-]*\.(google\.com|googleapis\.com|gstatic\.com)[:/ ]"
)
BLUE = (0x3B, 0x7D, 0xD8)  # an iteration that went on
GREEN = (0x2E, 0x9E, 0x4F)  # the one that completed the loop, and criteria met


@pytest.fixture(scope="module")
def chromium() -> str:
    found = browser.find()
    if found is None:
        pytest.skip(
            "no Chromium on this machine: install Debian's `chromium` package"
            " (`.ci/run` does where it can) to test the HTML report in a browser"
        )
    return found


@pytest.fixture
def loop(project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rs: Any) -> Path:
    """A loop that took 4 iterations of `ralphstate run --commit`, over two runs."""
    use_identity(monkeypatch, tmp_path)
    init_repo(project)
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    agent = spawn.join_command([sys.executable, str(script)])
    assert rs("init", "Add a CSV export", "-c", "tests pass", "-c", "docs written").code == 0
    check = f'"{sys.executable}" -c "import os; assert os.path.exists(\'work-3.txt\')"'
    assert rs("criteria", "check", "tests pass", check).code == 0
    first = run_process(["run", "--agent", agent, "--commit", "--max", "1"], cwd=project)
    assert first.returncode == 3, first.stderr  # paused: its one iteration was used
    second = run_process(["run", "--agent", agent, "--commit", "--max", "5"], cwd=project)
    assert second.returncode == 0, second.stderr
    return project


def iterations(root: Path) -> int:
    lines = (root / ".loop" / "history.jsonl").read_bytes().splitlines()
    return sum(1 for e in map(orjson.loads, lines) if e["event"] == "run_iteration")


def test_the_report_as_text_and_markdown(loop: Path) -> None:
    text = run_process(["report"], cwd=loop)
    assert text.returncode == 0, text.stderr
    out = text.stdout.decode()
    assert "status: complete · iteration 4/20 · 2/2 criteria" in out  # --max: that run only
    # The evidence names the runner's commit that holds the code the check ran on.
    work = git(loop, "log", "--format=%H", "--grep", "iteration 4", "-1")[:10]
    assert f"[x] tests pass: verified on {work} · {LEVEL} · exit code 0" in out
    assert len(re.findall(r"^  #\d +run ", out, re.MULTILINE)) == iterations(loop) == 4
    assert "  #1    " in out and "run_max · run" in out  # the first run's pause
    markdown = run_process(["report", "--markdown"], cwd=loop).stdout.decode()
    assert markdown.startswith("## Add a CSV export\n")
    assert markdown.count("| run |") == 4
    assert "### Commits\n" in markdown


def test_the_html_report_in_a_headless_browser(loop: Path, chromium: str, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    made = run_process(["report", "--html", "-o", str(page)], cwd=loop)
    assert made.returncode == 0, made.stderr
    html = page.read_text("utf-8")
    # Self-contained: nothing in it names anything to fetch.
    assert not re.search(r"(?i)\b(src|href)\s*=|url\(|@import|https?://|<script", html), html
    assert "default-src 'none'" in html

    with browser.counting_proxy() as (port, seen):
        dom = browser.run(chromium, page, tmp_path / "p1", "--dump-dom", proxy=port)
        shot = tmp_path / "report.png"
        taken = browser.run(chromium, page, tmp_path / "p2", f"--screenshot={shot}", proxy=port)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert taken.returncode == 0, taken.stderr[-2000:]
    asked = [line for line in seen if not OWN.search(line)]
    assert asked == [], f"the report asked the network for {asked}"

    rendered = dom.stdout.decode()
    bars = re.findall(r'<rect class="bar" data-iteration="(\d+)"', rendered)
    assert bars == ["1", "2", "3", "4"]  # one bar per iteration, in order
    # The check proved "tests pass": green; "docs written" stands on the agent's word.
    assert re.findall(r'<rect class="green" data-criterion="([^"]*)"', rendered) == ["tests pass"]
    assert re.findall(r'<rect class="claimed" data-criterion="([^"]*)"', rendered) == [
        "docs written"
    ]

    width, height, rgb = browser.pixels(shot.read_bytes())
    assert (width, height) == (1000, 700)
    colours = {p for p in rgb}
    assert len(colours) > 20, "the screenshot is blank"
    blue = sum(1 for p in rgb if _near(p, BLUE))
    green = sum(1 for p in rgb if _near(p, GREEN))
    assert blue > 1000 and green > 1000, (blue, green)  # the bars and lanes are drawn


def test_the_proxy_sees_what_a_page_fetches(chromium: str, tmp_path: Path) -> None:
    """The check above can fail: a page that loads an image over the network is seen."""
    page = tmp_path / "fetching.html"
    page.write_text('<html><body><img src="http://report.invalid/x.png"></body></html>')
    with browser.counting_proxy() as (port, seen):
        done = browser.run(chromium, page, tmp_path / "p", "--dump-dom", proxy=port)
    assert done.returncode == 0
    assert any(b"report.invalid" in line for line in seen), seen


def _near(pixel: tuple[int, int, int], colour: tuple[int, int, int]) -> bool:
    return all(abs(a - b) <= 6 for a, b in zip(pixel, colour, strict=True))


def test_no_browser_needed_for_markdown_to_stdout(loop: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ralphstate", "report", "--markdown", "-o", "-"],
        cwd=loop,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith(b"## Add a CSV export")


def test_a_refuted_claim_is_refuted_in_the_text_and_in_the_browser(
    project: Path, chromium: str, tmp_path: Path, rs: Any
) -> None:
    """Its check fails, then the agent claims the criterion anyway: the morning's report
    says the check refutes it, the timeline draws it red (not green, "met"), and its
    output shows as lines, not as `\\x0a`."""
    init_repo(project)
    failing = (
        f"\"{sys.executable}\" -c \"print('line one'); print('line two'); raise SystemExit(1)\""
    )
    assert rs("init", "Make the tests pass", "--check", "tests pass", failing).code == 0
    assert rs("verify").code != 0
    assert rs("criteria", "set", "tests pass", "true").code == 0

    out = run_process(["report"], cwd=project).stdout.decode()
    assert "  [!] tests pass: claimed, refuted by its check · its check: exit code 1" in out
    assert "      | line one\n      | line two\n" in out
    markdown = run_process(["report", "--markdown", "-o", "-"], cwd=project).stdout.decode()
    assert "- [ ] **tests pass**: claimed, refuted by its check" in markdown

    page = tmp_path / "report.html"
    assert run_process(["report", "--html", "-o", str(page)], cwd=project).returncode == 0
    dom = browser.run(chromium, page, tmp_path / "p", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = dom.stdout.decode()
    lane = re.findall(
        r'<rect class="(\w+)" data-criterion="tests pass".*?<title>(.*?)</title>', rendered
    )
    assert lane and all(kind == "refuted" for kind, _ in lane), lane
    assert all("met from" not in title for _, title in lane), lane
    assert '<span class="bad">claimed, refuted by its check</span>' in rendered
    assert "<pre>line one\nline two" in rendered and "\\x0a" not in rendered
