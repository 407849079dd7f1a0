"""How many tests a check ran, read from its output (docs/explanation/proof.md, "Test
strength"). Pure: no I/O.

    tally = strength.Tally()
    tally.take(chunk)            # every chunk of the check's output, as it comes
    counts = tally.counts()      # {"runner", "collected", "ran", "passed", "failed",
                                 #  "skipped"}, or None: no runner's summary was seen

The runners and the lines read (each line at most `limits.MAX_COUNT_LINE_BYTES`, so the
reading is linear and bounded whatever the check prints; nothing but the counters is
kept):

- pytest: its last line, `1 failed, 2 passed, 1 skipped, 1 deselected in 0.12s` (with
  or without `=`); `no tests ran in 0.01s`;
- unittest: `Ran 4 tests in 0.001s`, then `OK`, `OK (skipped=1)` or `FAILED (failures=1,
  errors=1, skipped=1)`;
- jest: `Tests:       1 failed, 1 skipped, 2 passed, 4 total`;
- vitest: `Tests  1 failed | 2 passed | 1 skipped (4)`;
- go test: `--- PASS: TestX`, `--- FAIL:`, `--- SKIP:` (`-v`), or the `-json` events of a
  test (`"Action":"pass"` with a `"Test"`); plain `go test` prints only `ok  pkg`, which
  says no count;
- cargo test: every `test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured;
  2 filtered out` line, summed (one per test binary).

pytest, unittest, jest and vitest print one summary per run: the last one seen counts.
go's and cargo's lines are summed. Two runners in one check (`pytest && go test -v`)
add up. A test's own output can print lines like these: the counts catch tests skipped,
deleted or deselected, not a suite that forges its runner's summary (SECURITY.md).
"""

from __future__ import annotations

import re
from typing import Any

from ralphstate.core import limits, proof

Counts = dict[str, Any]

# The most of one line that is read; the rest of a longer line is passed over.
LINE_BYTES = limits.MAX_COUNT_LINE_BYTES
# The fields of a count, in the order they are shown.
FIELDS = ("collected", "ran", "passed", "failed", "skipped")

_PYTEST = re.compile(r"^=* ?((?:\d+ [a-z]+(?:, )?)+|no tests ran) in [\d.]+s\b.*$")
_PYTEST_PART = re.compile(r"(\d+) ([a-z]+)")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s$")
_UNITTEST_END = re.compile(r"^(OK|FAILED)(?: \(([a-z_]+=\d+(?:, [a-z_]+=\d+)*)\))?$")
_JEST = re.compile(r"^Tests:\s+((?:\d+ [a-z]+, )*\d+ total)$")
_VITEST = re.compile(r"^Tests\s+((?:\d+ [a-z]+(?: \| )?)+)\s*\((\d+)\)$")
_GO_V = re.compile(r"^\s*--- (PASS|FAIL|SKIP): ")
_GO_JSON = re.compile(r'^\{.*"Action": ?"(pass|fail|skip)".*"Test": ?"')
# The lines that may say a count, by how they start (found by one scan of each chunk).
_CANDIDATE = re.compile(
    rb"^[ \t]*(?:\x1b|=|\d|no tests ran|Ran |OK|FAILED|Tests|--- |\{|test result)[^\n]*",
    re.MULTILINE,
)
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
_CARGO = re.compile(
    r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored;"
    r" \d+ measured; (\d+) filtered out"
)


def _count(runner: str, passed: int, failed: int, skipped: int, left_out: int = 0) -> Counts:
    ran = passed + failed
    return {
        "runner": runner,
        "collected": ran + skipped + left_out,
        "ran": ran,
        "passed": passed,
        "failed": failed,
        "skipped": skipped,
    }


def _parts(text: str, pattern: re.Pattern[str] = _PYTEST_PART) -> dict[str, int]:
    found: dict[str, int] = {}
    for number, word in pattern.findall(text):
        found[word] = found.get(word, 0) + int(number)
    return found


def _pytest(line: str) -> Counts | None:
    match = _PYTEST.match(line.strip(" ="))
    if not match:
        return None
    n = _parts(match.group(1))
    failed = n.get("failed", 0) + n.get("error", 0) + n.get("errors", 0)
    passed = n.get("passed", 0) + n.get("xfailed", 0) + n.get("xpassed", 0)
    return _count("pytest", passed, failed, n.get("skipped", 0), n.get("deselected", 0))


def _jest(line: str) -> Counts | None:
    match = _JEST.match(line)
    if not match:
        return None
    n = _parts(match.group(1))
    skipped = n.get("skipped", 0) + n.get("todo", 0)
    return _count("jest", n.get("passed", 0), n.get("failed", 0), skipped)


def _vitest(line: str) -> Counts | None:
    match = _VITEST.match(line)
    if not match:
        return None
    n = _parts(match.group(1))
    skipped = n.get("skipped", 0) + n.get("todo", 0)
    return _count("vitest", n.get("passed", 0), n.get("failed", 0), skipped)


class Tally:
    """The counts of one check's output, fed as it comes (`take`), read once it ended
    (`counts`)."""

    def __init__(self) -> None:
        self._partial = b""
        self._last: dict[str, Counts] = {}  # pytest, unittest, jest, vitest: the last one
        self._go = [0, 0, 0]  # passed, failed, skipped
        self._cargo = [0, 0, 0, 0]  # passed, failed, ignored, filtered out
        self._seen: set[str] = set()
        self._unittest_ran: int | None = None

    def take(self, chunk: bytes) -> None:
        """Read `chunk`, the next bytes of the output."""
        data = self._partial + chunk
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:][: LINE_BYTES + 1]
        for found in _CANDIDATE.finditer(data, 0, cut):
            self._line(found.group()[:LINE_BYTES])

    def counts(self) -> Counts | None:
        """The tests the output said ran; None when no runner's summary was seen."""
        if self._partial:
            self._line(self._partial[:LINE_BYTES])
            self._partial = b""
        found = list(self._last.values())
        if "go" in self._seen:
            found.append(_count("go", *self._go))
        if "cargo" in self._seen:
            passed, failed, ignored, left_out = self._cargo
            found.append(_count("cargo", passed, failed, ignored, left_out))
        if not found:
            return None
        total: Counts = {"runner": "+".join(c["runner"] for c in found)}
        for name in FIELDS:
            total[name] = sum(c[name] for c in found)
        return total

    def _line(self, raw: bytes) -> None:
        line = raw.decode("utf-8", "replace")
        if "\x1b" in line:
            line = _COLOUR.sub("", line)  # `--color=yes`, FORCE_COLOR
        line = line.strip()
        if line.startswith("Tests"):
            self._one("jest", _jest(line)) or self._one("vitest", _vitest(line))
        elif line.startswith(("--- ", "{")):
            go = _GO_V.match(line) or _GO_JSON.match(line)
            if go:
                self._seen.add("go")
                self._go[("PASS", "FAIL", "SKIP").index(go.group(1).upper())] += 1
        elif line.startswith("test result"):
            cargo = _CARGO.match(line)
            if cargo:
                self._seen.add("cargo")
                for i, number in enumerate(cargo.groups()):
                    self._cargo[i] += int(number)
        elif line.startswith(("Ran ", "OK", "FAILED")):
            self._unittest(line)
        else:
            self._one("pytest", _pytest(line))

    def _one(self, runner: str, found: Counts | None) -> bool:
        """Keep `found`, the last summary of `runner` so far, when there is one."""
        if found is not None:
            self._last[runner] = found
        return found is not None

    def _unittest(self, line: str) -> None:
        ran = _UNITTEST_RAN.match(line)
        if ran:
            self._unittest_ran = int(ran.group(1))
            return
        end = _UNITTEST_END.match(line)
        if end and self._unittest_ran is not None:
            pairs = (part.split("=") for part in (end.group(2) or "").split(", ") if part)
            n = {key: int(value) for key, value in pairs}
            skipped = n.get("skipped", 0)
            failed = n.get("failures", 0) + n.get("errors", 0) + n.get("unexpected_successes", 0)
            passed = max(0, self._unittest_ran - skipped - failed)
            self._last["unittest"] = _count("unittest", passed, failed, skipped)
            self._unittest_ran = None


def parse(text: str) -> Counts | None:
    """The counts of a whole output at once (`Tally` over `text`)."""
    tally = Tally()
    tally.take(text.encode("utf-8", "replace"))
    return tally.counts()


def describe(counts: Counts | None) -> str:
    """The counts as a person reads them: `pytest: 3 ran, 2 passed, 1 failed, 1
    skipped`; `exit code only` when there are none (core/proof.py `tests_said`)."""
    return proof.tests_said(counts)
