from __future__ import annotations

from typing import Any

from tests.helpers import Result


def test_demo_plays_the_whole_loop_through_the_real_hook(rs: Any) -> None:
    result: Result = rs("demo")
    assert result.code == 0, result.err
    out = result.out
    assert out.count("[stop hook] blocks; the model reads:") == 3
    assert "ralphstate loop, iteration 1 of 10: 2 of 2 criteria not verified yet:" in out
    assert (
        "ralphstate loop, iteration 3 of 10: all 2 criteria are recorded as met (2 claimed)."
    ) in out
    done = (
        "ralphstate: loop complete after 3 iterations; claimed, without a check: tests pass,"
        " README documents --json."
    )
    assert f"[the person sees] {done}" in out
    assert out.rstrip().splitlines()[-1].split()[2] == "complete"
