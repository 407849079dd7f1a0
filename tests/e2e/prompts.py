"""Where a person answers Claude Code's permission prompts, stood in for by a test: the
terminal's own prompt, and an IDE's.

The terminal (POSIX only): `Terminal(argv, cwd, env)` starts the program on a 160x50
pseudo-terminal; `type` sends keys; `wait_for(words)` reads its output until the words
appear on the screen (spaces and line breaks aside: the client draws some words with
cursor moves instead of spaces); `screen()` is what it drew so far, escape sequences
removed. Leaving the `with` block kills the program. `skip_first_run` writes the
client's own record of a finished first run (onboarding, the folder trusted, the API
key approved), so the session opens on its prompt.

An IDE: `ide_session(...)` runs the client as the VS Code extension does (stream-json
both ways, permission prompts over stdio as `can_use_tool` control requests, entry point
`claude-vscode`, so the client tells its hooks a person attends) and answers every
prompt as the person would, allow or deny.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

_FORWARD = re.compile(r"\x1b\[(\d*)C")
_ESCAPES = re.compile(
    r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()=>][0-9A-B]?"
)


def skip_first_run(home: Path, project: Path, api_key: str) -> None:
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "theme": "dark",
                "customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []},
                "projects": {str(project): {"hasTrustDialogAccepted": True}},
            }
        )
    )
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    # bypassPermissions without its one-time warning screen
    settings.write_text(json.dumps({"skipDangerousModePermissionPrompt": True}))


class Terminal:
    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        import fcntl
        import pty
        import struct
        import termios

        pid, fd = pty.fork()
        if pid == 0:  # the child: the program on the terminal
            try:
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        self._drawn = ""

    def __enter__(self) -> Terminal:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.fd)

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def _read(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.2))
            if not ready:
                continue
            try:
                data = os.read(self.fd, 65536)
            except OSError:  # the program ended
                return
            if not data:
                return
            self._drawn += data.decode("utf-8", "replace")

    def screen(self, squeeze: bool = False) -> str:
        shown = _FORWARD.sub(lambda m: " " * int(m.group(1) or 1), self._drawn)
        shown = _ESCAPES.sub("", shown)
        return "".join(shown.split()) if squeeze else shown

    def wait_for(self, words: str, seconds: float = 30) -> bool:
        wanted = "".join(words.split())
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self._read(0.3)
            if wanted in self.screen(squeeze=True):
                return True
        return False


class _Host:
    """The IDE's end of one client process: what it sends, and the prompts it answers."""

    def __init__(self, client: subprocess.Popen[str], answer: str) -> None:
        self.client, self.answer = client, answer
        self.asked: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        assert self.client.stdin is not None
        self.client.stdin.write(json.dumps(message) + "\n")
        self.client.stdin.flush()

    def start(self, prompt: str) -> None:
        self.send(
            {"type": "control_request", "request_id": "0", "request": {"subtype": "initialize"}}
        )
        user = {"role": "user", "content": prompt}
        self.send({"type": "user", "message": user, "parent_tool_use_id": None, "session_id": ""})

    def reply(self, message: dict[str, Any]) -> None:
        """Answer a permission prompt as the person would."""
        request = message["request"]
        self.asked.append(request)
        said: dict[str, Any] = {"behavior": "allow", "updatedInput": request["input"]}
        if self.answer != "allow":
            said = {"behavior": "deny", "message": "The person said no."}
        response = {"subtype": "success", "request_id": message["request_id"], "response": said}
        self.send({"type": "control_response", "response": response})

    def result(self) -> dict[str, Any]:
        """Every prompt answered up to the session's result, which is returned."""
        assert self.client.stdout is not None
        for line in self.client.stdout:
            message = json.loads(line)
            kind = message.get("type")
            if kind == "control_request" and message["request"].get("subtype") == "can_use_tool":
                self.reply(message)
            elif kind == "result":
                return dict(message)
        return {}

    def close(self) -> None:
        for stream in (self.client.stdin, self.client.stdout, self.client.stderr):
            if stream is not None:
                stream.close()
        try:
            self.client.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.client.kill()
            self.client.wait()


def ide_session(
    claude: Path, project: Path, env: dict[str, str], api_key: str, answer: str, *args: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One prompt to the client run as an IDE runs it, every permission prompt answered
    with `answer` ("allow" or "deny"): the prompts shown and the session's result."""
    (Path(env["HOME"]) / ".claude.json").write_text(  # the IDE's sessions take the key
        json.dumps({"customApiKeyResponses": {"approved": [api_key[-20:]], "rejected": []}})
    )
    command = [str(claude), "-p", "--input-format", "stream-json", "--output-format"]
    command += ["stream-json", "--verbose", "--permission-prompt-tool", "stdio", *args]
    host = _Host(
        subprocess.Popen(
            command,
            cwd=project,
            env={**env, "CLAUDE_CODE_ENTRYPOINT": "claude-vscode"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ),
        answer,
    )
    try:
        host.start("Trust the checks")
        return host.asked, host.result()
    finally:
        host.close()
