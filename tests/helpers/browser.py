"""A real headless browser for the HTML report's tests: Chromium from the system's
packages (`.ci/run` installs Debian's `chromium` where it is missing), driven through
its command line, and a small PNG reader to look at its screenshots."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def find() -> str | None:
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def run(
    browser: str, page: Path, profile: Path, *args: str, proxy: int | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Chromium headless on `page` with `args` (`--dump-dom`, `--screenshot=...`), its own
    profile, and no network of its own: with `proxy`, every request goes to that port."""
    argv = [
        browser,
        "--headless",
        "--disable-gpu",
        "--hide-scrollbars",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-default-apps",
        "--disable-sync",
        "--disable-extensions",
        "--metrics-recording-only",
        f"--user-data-dir={profile}",
        "--window-size=1000,700",
        *args,
    ]
    # Chromium's sandbox needs what a container or root often lacks; the page is a file
    # this test wrote, and the profile and the network are its own.
    argv.insert(1, "--no-sandbox")
    if proxy is not None:
        argv += [f"--proxy-server=http://127.0.0.1:{proxy}", "--proxy-bypass-list=<-loopback>"]
    argv.append(page.as_uri())
    return subprocess.run(argv, capture_output=True, timeout=120, check=False)


@contextmanager
def counting_proxy() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on 127.0.0.1 that records the first line of every request made to
    it and answers 404: point the browser's proxy at it to see what it fetches."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    seen: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    data = conn.recv(4096)
                    seen.append(data.split(b"\r\n", 1)[0])
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], seen
    finally:
        stop.set()
        thread.join(5)
        server.close()


def pixels(png: bytes) -> tuple[int, int, list[tuple[int, int, int]]]:
    """(width, height, RGB pixels) of an 8-bit RGB or RGBA PNG, non-interlaced."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, data = 8, b""
    width = height = colour = 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind, body = png[pos + 4 : pos + 8], png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, "an unexpected PNG"
        elif kind == b"IDAT":
            data += body
    raw = zlib.decompress(data)
    step = 4 if colour == 6 else 3
    stride = width * step
    rows: list[bytearray] = []
    prior = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        method, line = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up = prior[i]
            corner = prior[i - step] if i >= step else 0
            if method == 1:
                line[i] = (line[i] + left) & 0xFF
            elif method == 2:
                line[i] = (line[i] + up) & 0xFF
            elif method == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif method == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                best = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + best) & 0xFF
        rows.append(line)
        prior = line
    out = [(row[i], row[i + 1], row[i + 2]) for row in rows for i in range(0, stride, step)]
    return width, height, out
