"""Reading how many tests a check ran from its output (ralphstate/verify/strength.py):
pytest and unittest run for real here; cargo's output was captured from cargo 1.95.0;
jest, vitest and go are not on the machine the tests were written on, so their lines
follow each runner's documented output format."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ralphstate.core import limits, proof
from ralphstate.verify import strength

SUITE = """\
import unittest

import pytest


def test_one():
    assert 1


def test_two():
    assert 0


@pytest.mark.skip
def test_three():
    pass


class T(unittest.TestCase):
    def test_u(self):
        pass

    @unittest.skip("later")
    def test_v(self):
        pass
"""
# `cargo test` on a library with a failing-free unit test module (one ignored) and an
# integration test file, cargo 1.95.0: three `test result:` lines, summed.
CARGO = """\
   Compiling strcargo v0.1.0 (/tmp/strcargo)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.69s
     Running unittests src/lib.rs (target/debug/deps/strcargo-93e99c1c08950c6a)

running 3 tests
test tests::adds_more ... ok
test tests::adds ... ok
test tests::later ... ignored

test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/it.rs (target/debug/deps/it-e6ae0f1cc67ca3ed)

running 1 test
test outer ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

   Doc-tests strcargo

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
"""
JEST = """\
PASS src/sum.test.js
FAIL src/mul.test.js
  ● mul > multiplies

Test Suites: 1 failed, 1 passed, 2 total
Tests:       1 failed, 1 skipped, 2 passed, 4 total
Snapshots:   0 total
Time:        0.512 s
Ran all test suites.
"""
VITEST = """\
 ✓ src/sum.test.ts (3 tests | 1 skipped) 2ms

 Test Files  1 passed (1)
      Tests  2 passed | 1 skipped (3)
   Start at  10:12:01
   Duration  210ms (transform 20ms, setup 0ms, collect 12ms, tests 2ms)
"""
GO_V = """\
=== RUN   TestAdd
--- PASS: TestAdd (0.00s)
=== RUN   TestMul
    calc_test.go:12: later
--- SKIP: TestMul (0.00s)
=== RUN   TestTable
=== RUN   TestTable/zero
    --- PASS: TestTable/zero (0.00s)
--- PASS: TestTable (0.00s)
PASS
ok  \texample.com/calc\t0.002s
"""
GO_JSON = """\
{"Time":"2026-01-01T10:00:00Z","Action":"start","Package":"example.com/calc"}
{"Time":"2026-01-01T10:00:00Z","Action":"run","Package":"example.com/calc","Test":"TestAdd"}
{"Action":"output","Package":"example.com/calc","Test":"TestAdd","Output":"ok\\n"}
{"Time":"2026-01-01T10:00:00Z","Action":"pass","Package":"example.com/calc","Test":"TestAdd","Elapsed":0}
{"Time":"2026-01-01T10:00:00Z","Action":"fail","Package":"example.com/calc","Test":"TestMul","Elapsed":0}
{"Time":"2026-01-01T10:00:00Z","Action":"skip","Package":"example.com/calc","Test":"TestDiv","Elapsed":0}
{"Time":"2026-01-01T10:00:00Z","Action":"fail","Package":"example.com/calc","Elapsed":0.01}
"""


def counts(runner: str, ran: int, passed: int, failed: int, skipped: int, collected: int) -> Any:
    return {
        "runner": runner,
        "collected": collected,
        "ran": ran,
        "passed": passed,
        "failed": failed,
        "skipped": skipped,
    }


def run(tmp_path: Path, *args: str) -> str:
    (tmp_path / "test_suite.py").write_text(SUITE)
    done = subprocess.run(
        [sys.executable, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    return done.stdout + done.stderr


def test_real_pytest_counts_passed_failed_skipped(tmp_path: Path) -> None:
    out = run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_suite.py")
    assert strength.parse(out) == counts("pytest", 3, 2, 1, 2, 5)


def test_real_pytest_counts_a_deselected_test_out_of_the_run(tmp_path: Path) -> None:
    out = run(tmp_path, "-m", "pytest", "-p", "no:cacheprovider", "-k", "not two")
    assert "deselected" in out.splitlines()[-1]
    assert strength.parse(out) == counts("pytest", 2, 2, 0, 2, 5)


def test_real_unittest_leaves_the_skipped_out_of_the_run(tmp_path: Path) -> None:
    out = run(tmp_path, "-m", "unittest", "test_suite")
    assert "OK (skipped=1)" in out
    assert strength.parse(out) == counts("unittest", 1, 1, 0, 1, 2)


def test_pytest_with_no_tests_says_none_ran() -> None:
    assert strength.parse("\nno tests ran in 0.01s\n") == counts("pytest", 0, 0, 0, 0, 0)


def test_unittest_failures_and_errors_are_failed() -> None:
    out = "Ran 5 tests in 0.002s\n\nFAILED (failures=1, errors=1, skipped=1)\n"
    assert strength.parse(out) == counts("unittest", 4, 2, 2, 1, 5)


def test_cargo_sums_every_test_result_line() -> None:
    assert strength.parse(CARGO) == counts("cargo", 3, 3, 0, 1, 4)


def test_cargo_filtered_out_tests_did_not_run() -> None:
    line = "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out; in 0s"
    assert strength.parse(line) == counts("cargo", 1, 1, 0, 0, 3)


def test_jest_tests_line() -> None:
    assert strength.parse(JEST) == counts("jest", 3, 2, 1, 1, 4)


def test_vitest_tests_line_not_the_test_files_line() -> None:
    assert strength.parse(VITEST) == counts("vitest", 2, 2, 0, 1, 3)


def test_go_verbose_counts_every_test_and_subtest() -> None:
    assert strength.parse(GO_V) == counts("go", 3, 3, 0, 1, 4)


def test_go_json_counts_the_test_events_not_the_package() -> None:
    assert strength.parse(GO_JSON) == counts("go", 2, 1, 1, 1, 3)


def test_plain_go_test_and_other_commands_are_exit_code_only() -> None:
    assert strength.parse("ok  \texample.com/calc\t0.002s\n") is None
    assert strength.parse("All checks passed!\n") is None
    assert strength.describe(None) == "exit code only"


def test_the_last_pytest_summary_counts_and_two_runners_add_up() -> None:
    out = "1 passed in 0.01s\n3 passed, 1 skipped in 0.02s\n" + CARGO
    found = strength.parse(out)
    assert found is not None
    assert (found["runner"], found["ran"], found["skipped"]) == ("pytest+cargo", 6, 2)


def test_real_pytest_in_colour(tmp_path: Path) -> None:
    out = run(tmp_path, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--color=yes")
    assert "\x1b[" in out.splitlines()[-1]
    assert strength.parse(out) == counts("pytest", 3, 2, 1, 2, 5)


def test_lines_cut_across_chunks_are_read_whole() -> None:
    tally = strength.Tally()
    data = CARGO.encode()
    for i in range(0, len(data), 7):
        tally.take(data[i : i + 7])
    assert tally.counts() == counts("cargo", 3, 3, 0, 1, 4)


def test_a_huge_output_is_read_in_bounded_lines() -> None:
    tally = strength.Tally()
    tally.take(b"x" * 10_000_000)  # one line, no newline: only LINE_BYTES kept
    tally.take(b"\n--- PASS: TestA (0.00s)\n" * 50_000)
    found = tally.counts()
    assert found is not None and found["ran"] == 50_000
    assert len(tally._partial) <= strength.LINE_BYTES + 1


def test_max_count_line_bytes() -> None:
    core = "2 passed in 0.01s"
    within = "=" * (limits.MAX_COUNT_LINE_BYTES - len(core)) + core
    assert len(within) == limits.MAX_COUNT_LINE_BYTES
    assert strength.parse(within + "\n") == counts("pytest", 2, 2, 0, 0, 2)
    past = "=" + within  # one byte more: its last byte, the `s` of `0.01s`, is not read
    assert strength.parse(past + "\n") is None


def test_describe_says_what_ran() -> None:
    said = strength.describe(counts("pytest", 3, 2, 1, 1, 4))
    assert said == "pytest: 3 ran, 2 passed, 1 failed, 1 skipped"


@pytest.mark.parametrize(
    ("baseline", "now", "said"),
    [
        (counts("pytest", 5, 5, 0, 0, 5), counts("pytest", 3, 3, 0, 0, 3), "3 tests ran, 5 at"),
        (counts("pytest", 2, 1, 1, 0, 2), counts("pytest", 2, 2, 0, 1, 3), "1 test skipped, 0 at"),
        (None, counts("pytest", 0, 0, 0, 0, 0), "no tests ran"),
        (counts("pytest", 2, 2, 0, 0, 2), None, "no longer says how many tests ran (2 at"),
        (counts("pytest", 2, 1, 1, 0, 2), counts("pytest", 3, 3, 0, 0, 3), None),
        (None, None, None),
        (None, counts("go", 1, 1, 0, 1, 2), None),
    ],
)
def test_a_weaker_pass_is_named(baseline: Any, now: Any, said: str | None) -> None:
    found = proof.weaker_tests("tests pass", baseline, now, "approval")
    if said is None:
        assert found is None
    else:
        assert found is not None and said in found and "'tests pass' is weakened" in found
