"""Checks run confined (verify/confine.py, verify/confinemounts.py): real checks, run by
`run_one` as every caller runs them, inside bubblewrap; and the macOS profile's text."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from ralphstate.storage.peruser import home
from ralphstate.verify import confine, confinemounts
from ralphstate.verify.onecheck import run_one
from tests.helpers.checks import wait_for

needs_confinement = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not confine.bubblewrap(),
    reason="bubblewrap cannot start here",
)
PY = f'"{sys.executable}"'


@pytest.fixture
def room(tmp_path: Path) -> Path:
    made = tmp_path / "room" / "project"
    made.mkdir(parents=True)
    return made


def check(command: str, room: Path) -> tuple[bool, str, bool]:
    result = run_one("c", command, str(room), timeout=60)
    return result.passed, result.output_tail, result.confined


@needs_confinement
def test_a_confined_check_writes_its_room_and_nothing_else(
    room: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    person = tmp_path / "person"
    person.mkdir()
    monkeypatch.setenv("HOME", str(person))
    store = home.state_dir()
    store.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "outside"
    targets = [person / "pwned", store / "pwned", outside, Path("/var/tmp/ralphstate-pwned")]
    writes = f"{PY} -c \"open('made', 'w').write('ok')\""
    for target in targets:
        attempt = f"""{PY} -c "open({str(target)!r}, 'w').write('x')" """
        _, out, confined = check(attempt, room)  # fails, or writes a private tmpfs
        assert confined, out
        assert not target.exists(), target
    passed, out, confined = check(writes, room)
    assert passed and confined, out
    assert (room / "made").read_text() == "ok"


@needs_confinement
def test_a_confined_check_sees_an_empty_home_and_no_store(
    room: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    person = tmp_path / "person"
    (person / ".ssh").mkdir(parents=True)
    (person / ".ssh" / "id_ed25519").write_text("secret\n")
    monkeypatch.setenv("HOME", str(person))
    store = home.state_dir()
    store.mkdir(parents=True, exist_ok=True)
    (store / "trust.json").write_text("{}")
    look = f'ls -A "{person}"; ls -A "{store}"; cat "{person}/.ssh/id_ed25519"; echo "$TMPDIR"'
    _, out, confined = check(look, room)
    assert confined
    assert "secret" not in out and "trust.json" not in out, out
    assert "No such file" in out  # the key is not there to read
    assert out.strip().splitlines()[-1] == "/tmp"


@needs_confinement
def test_nothing_above_the_room_is_read(room: Path) -> None:
    (room.parent / "pytest.ini").write_text("[pytest]\naddopts = -p no:everything\n")
    (room.parent / "conftest.py").write_text("raise SystemExit(0)\n")
    passed, out, confined = check(
        "ls -A ..; test ! -e ../pytest.ini && test ! -e ../conftest.py", room
    )
    assert passed and confined, out


@needs_confinement
def test_a_confined_check_reaches_no_server_of_the_host(room: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(5)
    port = server.getsockname()[1]
    got: list[bytes] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            got.append(conn.recv(100))

    waiter = threading.Thread(target=serve)
    waiter.start()
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), 3).sendall(b'hi')"
    passed, out, confined = check(f'{PY} -c "{connect}"', room)
    server.close()
    waiter.join()
    assert confined and not passed, out
    assert got == []
    assert "refused" in out or "unreachable" in out, out


@needs_confinement
@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="as root")
def test_as_root_a_confined_check_has_no_capability(room: Path) -> None:
    passed, out, confined = check(
        "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status;"
        " mount -t tmpfs none /mnt 2>/dev/null && echo MOUNTED;"
        ' umount "$HOME" 2>/dev/null && echo UNMOUNTED;'
        " mount -o remount,rw / 2>/dev/null && echo REMOUNTED; true",
        room,
    )
    assert passed and confined, out
    lines = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    for cap in ("CapEff", "CapPrm", "CapBnd"):
        assert int(lines[cap].strip(), 16) == 0, out
    assert lines["NoNewPrivs"].strip() == "1"
    assert "MOUNTED" not in out and "UNMOUNTED" not in out and "REMOUNTED" not in out


@needs_confinement
def test_a_toolchain_in_the_room_is_read_only(room: Path) -> None:
    (room / ".venv" / "bin").mkdir(parents=True)
    (room / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    env = dict(os.environ, PATH=f"{room / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    wrapped = confine.wrap("touch .venv/bin/pytest; touch other", room, room, env)
    assert wrapped.confined
    done = subprocess.run(wrapped.args, env=wrapped.env, cwd=room, capture_output=True)
    assert b"Read-only file system" in done.stderr
    assert not (room / ".venv" / "bin" / "pytest").exists()
    assert (room / "other").exists()


def test_a_bwrap_that_is_not_the_systems_is_never_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text('#!/bin/sh\nshift 999\nexec sh -c "$@"\n')
    fake.chmod(0o755)
    home.state_dir().mkdir(parents=True, exist_ok=True)
    kept = home.state_dir() / confine.PROBE_FILE
    kept.write_text(f'{{"program": "{fake}", "userns": true, "identity": []}}')
    assert confine._kept() == ()


def test_the_macos_profile_confines_like_bubblewrap(tmp_path: Path) -> None:
    room = tmp_path / "room"
    scratch = tmp_path / "scratch"
    room.mkdir()
    scratch.mkdir()
    person = Path("/Users/person")
    env = {"HOME": str(person), "PATH": "/usr/bin"}
    store = [person / "Library" / "Application Support" / "ralphstate"]
    text = confinemounts.profile(room, scratch, env, store, '"/usr/bin/python3" -m pytest')
    lines = text.splitlines()
    real = Path(os.path.realpath(room))
    assert lines[:4] == ["(version 1)", "(allow default)", "(deny network*)", "(deny file-write*)"]
    assert '(deny file-read* (subpath "/Users"))' in lines
    assert f'(allow file-read* file-write* (subpath "{real}"))' in lines
    assert f'(deny file-write* (subpath "{real / ".loop"}"))' in lines
    deny_store = f'(deny file-read* file-write* (subpath "{store[0]}"))'
    assert lines[-1] == deny_store  # the last rule wins: the store is never reached


def test_the_room_s_parents_are_masked_from_the_first_that_is_not_the_systems() -> None:
    assert confinemounts.above(Path("/work/wt/project")) == Path("/work")
    assert confinemounts.above(Path("/opt/work/project")) == Path("/opt/work")
    assert confinemounts.above(Path("/home/me/code/p")) == Path("/home")
    assert confinemounts.above(Path("/work")) is None
    assert confinemounts.above(Path("/opt/project")) is None


def test_the_person_s_switch_runs_checks_unconfined_and_says_so(
    room: Path, unconfined_checks: None
) -> None:
    outside = room.parent / "outside"
    result = run_one("c", f"{PY} -c \"open({str(outside)!r}, 'w')\"", str(room), timeout=60)
    assert result.passed and not result.confined
    assert outside.exists()  # with the caller's reach, as before
    assert result.evidence("now")["confined"] is False
    assert confine.wrap("true", room, room).why == confine.OFF


@needs_confinement
@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root to become a regular user (setpriv)",
)
def test_as_a_regular_user_a_confined_check_has_no_capability_and_writes_its_room() -> None:
    made = Path(tempfile.mkdtemp(prefix="ralphstate-user-room-"))
    try:
        made.chmod(0o777)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "LANG": "C"}
        command = (
            "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; touch made;"
            " mount -t tmpfs none /mnt 2>/dev/null && echo MOUNTED; id -u"
        )
        wrapped = confine.wrap(command, made, made, env)
        assert wrapped.confined and isinstance(wrapped.args, list)
        user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
        done = subprocess.run(
            [*user, *wrapped.args], env=wrapped.env, cwd=made, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        lines = dict(line.split(":", 1) for line in done.stdout.splitlines() if ":" in line)
        assert int(lines["CapEff"].strip(), 16) == 0 and lines["NoNewPrivs"].strip() == "1"
        assert "MOUNTED" not in done.stdout
        assert done.stdout.splitlines()[-1] == "65534"
        assert (made / "made").stat().st_uid == 65534
    finally:
        shutil.rmtree(made, ignore_errors=True)


@needs_confinement
def test_a_confined_check_past_its_timeout_leaves_nothing_running(room: Path) -> None:
    mark = f"ralphstate-straggler-{os.getpid()}"
    sleep = f'{PY} -c "import time; time.sleep(60)" {mark}'
    result = run_one("c", f"{sleep} & {sleep}", str(room), timeout=1)
    assert result.timed_out and result.confined and result.duration_ms < 15_000

    def running() -> list[str]:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                line = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if mark.encode() in line:
                found.append(entry.name)
        return found

    wait_for(lambda: not running(), "the confined check's processes to be gone", limit=10)


@needs_confinement
def test_a_start_that_worked_is_kept_for_the_boot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confine, "_found", None)
    found = confine.bubblewrap()  # tried here: nothing kept yet in this test's home
    assert found and (home.state_dir() / confine.PROBE_FILE).is_file()

    def never() -> None:
        raise AssertionError("tried again though a start that worked was kept")

    monkeypatch.setattr(confine, "_found", None)
    monkeypatch.setattr(confine, "_probe", never)
    assert confine.bubblewrap() == found


@needs_confinement
def test_a_version_managers_shim_runs_confined_and_the_home_stays_hidden(
    room: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shim on PATH (pyenv's, nvm's) starts its manager's own program and reads its
    versions: the manager's directory comes back, read-only; the rest of the home does
    not. (A check whose `python3` was a pyenv shim failed confined before.)"""
    person = tmp_path / "person"
    manager = person / ".manager"
    (manager / "shims").mkdir(parents=True)
    (manager / "libexec").mkdir()
    (manager / "libexec" / "manager").write_text("#!/bin/sh\necho managed-tool-ran\n")
    (manager / "shims" / "tool").write_text(f'#!/bin/sh\nexec "{manager}/libexec/manager"\n')
    for script in (manager / "libexec" / "manager", manager / "shims" / "tool"):
        script.chmod(0o755)
    (person / ".ssh").mkdir()
    (person / ".ssh" / "id_ed25519").write_text("secret\n")
    monkeypatch.setenv("HOME", str(person))
    monkeypatch.setenv("PATH", f"{manager / 'shims'}{os.pathsep}{os.environ['PATH']}")

    passed, out, confined = check(
        f'tool; touch "{manager}/x" || echo read-only; ls -A "{person}"', room
    )

    assert confined and passed, out
    assert "managed-tool-ran" in out and "read-only" in out
    assert ".ssh" not in out and "secret" not in out
