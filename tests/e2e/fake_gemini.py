"""A scripted stand-in for the Gemini API, for the Gemini CLI end-to-end tests.

With `GOOGLE_GEMINI_BASE_URL` pointing here, Gemini CLI sends each step of the
conversation as `POST /v1beta/models/MODEL:streamGenerateContent?alt=sse`, answered
with server-sent events (`data: {"candidates": [{"content": {"role": "model",
"parts": [...]}}]}`). It also sends side requests: `:generateContent` asking for JSON
(model routing, the next-speaker check) and `:countTokens`. This server answers the
conversation from a script, the side requests with fixed JSON that sends the turn back
to the user, and records every request.

A script is a list of turns. A turn is a list of parts (`text(...)`, `shell(...)`) or
a callable that receives the request body (parsed JSON) and returns one. Once the
script has run out the answer is a plain `done`. Standard library only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from e2e_support import LoopbackServer

Part = dict[str, Any]
Turn = Sequence[Part] | Callable[[dict[str, Any]], Sequence[Part]]

# What every side request gets: a simple task (routing) and the user's turn next.
SIDE_ANSWER = {
    "complexity_reasoning": "a scripted task",
    "complexity_score": 1,
    "reasoning": "the model has answered; the user speaks next",
    "next_speaker": "user",
}


def text(content: str) -> Part:
    """A text part of a model turn."""
    return {"text": content}


def api_error(status: int, error: dict[str, Any]) -> Part:
    """A turn that is an API error instead of an answer: the server answers the request
    with `status` and the Gemini API's error body `{"error": error}` (429
    `RESOURCE_EXHAUSTED` with its quota details, 503 `UNAVAILABLE`, ...). Like any
    turn it answers one request: a client that retries gets the next turn."""
    return {"apiError": {"status": status, "error": error}}


def shell(command: str) -> Part:
    """A call of Gemini CLI's shell tool running `command`."""
    return {"functionCall": {"name": "run_shell_command", "args": {"command": command}}}


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user part in a request's `contents`, in order."""
    found: list[str] = []
    for content in body.get("contents") or []:
        if content.get("role") == "user":
            found.extend(
                part["text"]
                for part in content.get("parts") or []
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
    return found


def tool_outputs(body: dict[str, Any]) -> list[str]:
    """The response of every function call a request reports back, as JSON, in order."""
    return [
        json.dumps(part["functionResponse"].get("response"))
        for content in body.get("contents") or []
        for part in content.get("parts") or []
        if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)
    ]


class FakeGeminiAPI:
    """A Gemini API server on a free loopback port, answering from `script`."""

    def __init__(self, script: list[Turn] | None = None) -> None:
        self.script: list[Turn] = list(script or [])
        self.requests: list[dict[str, Any]] = []  # bodies of the conversation requests
        self.side: list[str] = []  # every other request, as "METHOD PATH"
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._served = 0
        self._http: LoopbackServer | None = None

    def start(self) -> FakeGeminiAPI:
        api = self

        class Handler(_Handler):
            owner = api

        self._http = LoopbackServer(Handler, "fake-gemini-api")
        return self

    def stop(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    @property
    def base_url(self) -> str:
        assert self._http is not None, "server not started"
        return f"http://127.0.0.1:{self._http.port}"

    def next_parts(self, body: dict[str, Any]) -> list[Part]:
        with self._lock:
            self.requests.append(body)
            turn: Turn | None = None
            if self._served < len(self.script):
                turn = self.script[self._served]
            self._served += 1
        if turn is None:
            return [text("done")]
        if callable(turn):
            try:
                return list(turn(body))
            except BaseException as exc:  # noqa: BLE001 - reported by the test at teardown
                self.errors.append(exc)
                return [text(f"script error: {exc!r}")]
        return list(turn)


def _chunk(parts: list[Part]) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 5,
            "totalTokenCount": 15,
        },
        "modelVersion": "gemini-test",
    }


class _Handler(BaseHTTPRequestHandler):
    owner: FakeGeminiAPI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.owner.side.append(f"GET {self.path}")
        self._reply(404, b'{"error": {"code": 404, "message": "not found"}}', "application/json")

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        path = self.path.split("?")[0]
        if path.endswith(":streamGenerateContent"):
            body = json.loads(raw or b"{}")
            parts = self.owner.next_parts(body)
            if parts and "apiError" in parts[0]:
                failure = parts[0]["apiError"]
                payload = json.dumps({"error": failure["error"]}).encode()
                self._reply(failure["status"], payload, "application/json")
                return
            stream = f"data: {json.dumps(_chunk(parts))}\r\n\r\n".encode()
            self._reply(200, stream, "text/event-stream")
            return
        self.owner.side.append(f"POST {path}")
        if path.endswith(":countTokens"):
            self._reply(200, b'{"totalTokens": 10}', "application/json")
        elif path.endswith(":generateContent"):
            answer = _chunk([text(json.dumps(SIDE_ANSWER))])
            self._reply(200, json.dumps(answer).encode(), "application/json")
        else:
            self._reply(404, b'{"error": {"code": 404}}', "application/json")

    def _reply(self, code: int, payload: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
