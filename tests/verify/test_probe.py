"""ralphstate's pytest probe (verify/probe.py), with a real pytest process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ralphstate.verify import probe


def test_the_probe_names_the_plugin_a_test_module_names(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")
    (tmp_path / "tests" / "forge.py").write_text(
        "def pytest_collection_modifyitems(items):\n    pass\n"
    )
    (tmp_path / "tests" / "test_a.py").write_text(
        'pytest_plugins = ["tests.forge"]\n\n\ndef test_a():\n    pass\n'
    )
    command = f'"{sys.executable}" -m pytest -q -p no:cacheprovider'
    env = probe.arm(tmp_path, "tests pass", {**os.environ, "PYTEST_PLUGINS": ""}, command)
    assert env["PYTEST_PLUGINS"] == probe.MODULE
    done = subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True)
    assert done.returncode == 0, done.stdout
    assert probe.read(tmp_path, "tests pass") == ["tests/forge.py"]
    strength = {"runner": "pytest", "ran": 1}
    probe.attach(strength, ["tests/forge.py", "conftest.py"], {"conftest.py"})
    assert strength["plugins"] == ["tests/forge.py"]  # an approved one is the person's


def test_a_python_started_isolated_is_not_armed(tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"]}
    assert probe.arm(tmp_path, "c", env, "python -I -m pytest") == env
    assert probe.read(tmp_path, "c") is None  # no pytest session wrote


def test_the_probe_names_a_test_that_raised_and_not_a_skip_or_an_expected_failure(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_a.py").write_text(
        "import pytest\n\n\n"
        "def test_raises():\n    assert 1 == 2\n\n\n"
        "def test_skips():\n    pytest.skip('later')\n\n\n"
        "@pytest.mark.xfail\ndef test_expected():\n    assert 1 == 2\n\n\n"
        "def test_passes():\n    pass\n"
    )
    command = f'"{sys.executable}" -m pytest -q -p no:cacheprovider'
    env = probe.arm(tmp_path, "tests pass", {**os.environ, "PYTEST_PLUGINS": ""}, command)
    subprocess.run(command, shell=True, cwd=tmp_path, env=env, capture_output=True)
    assert probe.raised(tmp_path, "tests pass") == ["test_a.py::test_raises"]
