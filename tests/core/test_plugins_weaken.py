"""A pass whose pytest registered a plugin file of the project no person approved
(verify/probe.py) is weakened (core/proof.py `weaker_tests`)."""

from __future__ import annotations

from ralphstate.core import proof

RAN = {"runner": "pytest", "collected": 2, "ran": 2, "passed": 2, "failed": 0, "skipped": 0}


def test_a_new_plugin_is_named_and_one_the_baseline_named_is_not() -> None:
    now = {**RAN, "plugins": ["tests/forge.py"]}
    said = proof.weaker_tests("t", RAN, now, "its first run")
    assert (
        said == "'t' is weakened: pytest loaded plugins it did not at its first run: tests/forge.py"
    )
    assert proof.weaker_tests("t", None, now, "approval") is not None  # no baseline at all
    assert proof.weaker_tests("t", {**RAN, "plugins": ["tests/forge.py"]}, now, "approval") is None
    assert proof.weaker_tests("t", RAN, {**RAN, "plugins": []}, "approval") is None
    assert proof.weaker_tests("t", RAN, RAN, "approval") is None  # not known: not said
