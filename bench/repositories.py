"""The benchmark's rows in git repositories (`hook_latency.py`): the clean room's, and
the evidence snapshot's beside a big untracked file."""

from __future__ import annotations

import subprocess
from pathlib import Path

from person import TRUSTS, trust
from processes import BIG, GIT_WHO, Proc, hook_input, run

# In the verifying Stop's block: its check ran, and failed (not a loop paused untrusted).
FAILED = "tests pass: `exit 1` exit code 1"


def clean_rooms(
    base: Path, rs: list[str], env: dict[str, str], owned: dict[str, str], stop: list[str]
) -> list[tuple[str, float, Proc, Proc]]:
    """The clean room's rows: `verify --clean` / `verify`, and a verifying Stop hook
    whose block names its failed check. None where the person cannot trust the checks
    (person.py)."""
    if not TRUSTS:
        return []

    def tracked(name: str, files: int, check: str, clean: str = "on") -> Path:
        root = base / name  # a repository whose one commit holds `files` files, then a loop
        for i in range(files):
            (root / "src" / f"d{i % 40}").mkdir(parents=True, exist_ok=True)
            (root / "src" / f"d{i % 40}" / f"m{i}.py").write_text(f"VALUE = {i}\n")
        for args in (["init", "-q"], ["add", "-A"], [*GIT_WHO, "commit", "-q", "-m", "bench"]):
            subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
        run([*rs, "init", "Benchmark loop", "-c", "tests pass", *BIG], owned, root)
        run([*rs, "criteria", "check", "tests pass", check], env, root)
        run([*rs, "config", "clean-verify", clean], env, root)
        trust(rs, env, root)
        return root

    rows: list[tuple[str, float, Proc, Proc]] = []
    for files, name, goal in ((3, "", 2.0), (2000, ", 2,000", 4.0)):
        root = tracked(f"git-{files}", files, "exit 0")
        passed = "the one check passed"
        clean, plain = (Proc([*rs, "verify", *a], root, expect=passed) for a in (["--clean"], []))
        rows.append((f"verify clean / in place{name}", goal, clean, plain))
    for files, name in ((3, ""), (2000, ", 2,000")):
        claims = []
        for setting in ("on", "off"):  # each stop claims again: its failing check unclaims
            root = tracked(f"claim-{setting}-{files}", files, "exit 1", setting)

            def claiming(i: int, root: Path = root) -> list[str]:
                run([*rs, "criteria", "set", "tests pass", "true"], env, root)  # not timed
                return stop

            data = hook_input(root, "Stop", last_assistant_message="Done. <loop-complete>")
            claims.append(Proc(claiming, root, data, FAILED))
        rows.append((f"Stop verifying, clean / not{name}", 2.0, claims[0], claims[1]))
    return rows


def big_untracked(
    base: Path, rs: list[str], env: dict[str, str]
) -> list[tuple[str, float, Proc, Proc]]:
    """The snapshot's row: `verify` beside a big untracked file that changes, against
    the same project without it. None where the person cannot trust the check."""
    if not TRUSTS:
        return []
    root = base / "git-20000"
    for i in range(20_000):  # 200 MB in 200 directories
        (root / "src" / f"d{i % 200}").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"d{i % 200}" / f"m{i}.txt").write_bytes(b"%09d\n" % i * 1024)
    for args in (["init", "-q"], ["add", "-A"], [*GIT_WHO, "commit", "-q", "-m", "bench"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    run([*rs, "init", "Benchmark loop", "-c", "tests pass", *BIG], env, root)
    run([*rs, "criteria", "check", "tests pass", "exit 0"], env, root)
    run([*rs, "config", "clean-verify", "off"], env, root)
    trust(rs, env, root)
    big = root / "disk.img"
    verify = [*rs, "verify"]

    def growing(i: int) -> list[str]:
        with big.open("ab") as handle:
            handle.truncate((2 << 30) + i)  # a hole: no disk, no time to write
        return verify

    def without(i: int) -> list[str]:
        big.unlink(missing_ok=True)
        return verify

    passed = "the one check passed"
    case, none = Proc(growing, root, expect=passed), Proc(without, root, expect=passed)
    return [("verify, 2 GiB untracked / none", 1.2, case, none)]
