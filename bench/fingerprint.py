"""The benchmark's rows for the toolchain fingerprint (`hook_latency.py`): what the checks
resolve to, on a project (with a pytest configuration) whose check runs pytest with the
python of a virtualenv of 200 distributions, each with an `entry_points.txt`
(storage/peruser/toolchain.py).

    python bench/fingerprint.py     # these rows alone, with this interpreter

The first fingerprint hashes every file and asks the interpreter and pytest (its cache
removed before each run); the cached one stats the files and asks nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from processes import Proc

PACKAGES = 200
FINGERPRINT = (
    "import os, sys; from pathlib import Path;"
    " from ralphstate.storage.peruser import checkenv, toolchain;"
    " found = toolchain.fingerprint([sys.argv[1]], Path.cwd(), checkenv.capture(()));"
    " print(len(found), 'fingerprinted')"
)


def venv_of_200(base: Path, python: str) -> Path:
    """A virtualenv (no pip) with `PACKAGES` distributions in its site-packages, which
    sees the benchmark's python's packages (pytest among them); its python."""
    where = base / "fingerprint-venv"
    subprocess.run([python, "-m", "venv", "--without-pip", str(where)], check=True)
    bin_dir = where / ("Scripts" if sys.platform == "win32" else "bin")
    venv_python = bin_dir / ("python.exe" if sys.platform == "win32" else "python")
    ask = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(
        subprocess.run(
            [str(venv_python), "-c", ask], capture_output=True, text=True, check=True
        ).stdout.strip()
    )
    host = subprocess.run([python, "-c", ask], capture_output=True, text=True, check=True)
    (site / "host.pth").write_text(host.stdout)  # pytest, from the benchmark's python
    for i in range(PACKAGES):
        info = site / f"package{i}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: package{i}\nVersion: 1.0\n")
        (info / "RECORD").write_text("")
        (info / "entry_points.txt").write_text(f"[console_scripts]\npackage{i} = package{i}:main\n")
    return venv_python


def fingerprint_rows(
    base: Path, python: str, env: dict[str, str]
) -> list[tuple[str, float | None, Proc, Proc | None]]:
    """The fingerprint's rows, first (no cache) and cached, against `python -c pass`."""
    venv_python = venv_of_200(base, python)
    root = base / "fingerprint-project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    check = f'"{venv_python}" -m pytest -q'
    command = [python, "-c", FINGERPRINT, check]
    cache = Path(env.get("RALPHSTATE_HOME") or Path(env.get("XDG_DATA_HOME", "")))

    def cold(i: int) -> list[str]:
        for found in cache.rglob("toolchain-cache.json"):
            found.unlink()
        return command

    first = Proc(cold, root, expect="fingerprinted")
    cached = Proc(command, root, expect="fingerprinted")
    return [
        ("fingerprint, 200 packages, first", None, first, None),
        ("fingerprint, 200 packages, cached", 6.0, cached, None),
    ]


if __name__ == "__main__":
    import os
    import statistics
    import tempfile
    import time

    with tempfile.TemporaryDirectory(prefix="ralphstate-fingerprint-") as tmp:
        base = Path(tmp)
        env = dict(os.environ, RALPHSTATE_HOME=str(base / "home"))
        for name, _goal, proc, _base in fingerprint_rows(base, sys.executable, env):
            times = []
            for i in range(11):
                start = time.perf_counter()
                done = subprocess.run(
                    proc.command(i), cwd=proc.cwd, env=env, capture_output=True, text=True
                )
                times.append(time.perf_counter() - start)
                assert proc.expect in done.stdout, done.stderr
            bare = []
            for _ in range(11):
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                bare.append(time.perf_counter() - start)
            took, floor = statistics.median(times[1:]), statistics.median(bare)
            print(f"{name}: {took * 1000:.0f} ms (python -c pass: {floor * 1000:.0f} ms)")
