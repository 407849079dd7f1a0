"""The calc project of tests/adversarial, its person, and a home of the test's own
(with a `~/.ssh` the agent must not reach), for runs under `--sandbox`."""

from __future__ import annotations

import shutil
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adversarial.scripted import Person, make_project, person_env
from tests.helpers.gitrepo import use_identity

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"
)


@pytest.fixture
def calc(tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The calc project, its loop trusted, a second criterion without a check, and a
    home of its own with `~/.ssh`."""
    use_identity(monkeypatch, isolated)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA the person's key\n")
    monkeypatch.setenv("HOME", str(home))
    root = tmp_path / "calc project"
    root.mkdir()
    make_project(root)
    Person(root).rs("criteria", "add", "docs written")
    return root


@pytest.fixture
def person(calc: Path) -> Person:
    return Person(calc, env=person_env())


def _serve(listener: socket.socket, words: bytes) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        try:
            conn.sendall(words)
        finally:
            conn.close()


@pytest.fixture
def servers() -> Iterator[tuple[int, str, int]]:
    """A host service on loopback, one on an abstract socket, and the model API's
    stand-in on loopback: (loopback port, abstract name, stand-in port), for the
    network tests of the sandbox."""
    host = socket.create_server(("127.0.0.1", 0))
    abstract = socket.socket(socket.AF_UNIX)
    name = f"ralphstate-test-{uuid.uuid4().hex[:8]}"
    abstract.bind("\0" + name)
    abstract.listen()
    api = socket.create_server(("127.0.0.1", 0))
    for listener, words in ((host, b"host secret"), (abstract, b"abstract secret"), (api, b"api")):
        threading.Thread(target=_serve, args=(listener, words), daemon=True).start()
    try:
        yield host.getsockname()[1], name, api.getsockname()[1]
    finally:
        for listener in (host, abstract, api):
            listener.close()
