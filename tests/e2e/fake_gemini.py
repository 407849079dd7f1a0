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
from collections.abc import Callable, Sequence
from typing import Any

from e2e_support import ScriptedAPI, ScriptedHandler

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


class _Handler(ScriptedHandler):
    owner: FakeGeminiAPI

    def do_GET(self) -> None:
        self.owner.side.append(f"GET {self.path}")
        self.reply(404, b'{"error": {"code": 404, "message": "not found"}}', "application/json")

    def do_POST(self) -> None:
        raw = self.read_raw()
        path = self.path.split("?")[0]
        if path.endswith(":streamGenerateContent"):
            body = json.loads(raw or b"{}")
            parts = self.owner.next_parts(body)
            if parts and "apiError" in parts[0]:
                failure = parts[0]["apiError"]
                payload = json.dumps({"error": failure["error"]}).encode()
                self.reply(failure["status"], payload, "application/json")
                return
            stream = f"data: {json.dumps(_chunk(parts))}\r\n\r\n".encode()
            self.reply(200, stream, "text/event-stream")
            return
        self.owner.side.append(f"POST {path}")
        if path.endswith(":countTokens"):
            self.reply(200, b'{"totalTokens": 10}', "application/json")
        elif path.endswith(":generateContent"):
            answer = _chunk([text(json.dumps(SIDE_ANSWER))])
            self.reply(200, json.dumps(answer).encode(), "application/json")
        else:
            self.reply(404, b'{"error": {"code": 404}}', "application/json")


class FakeGeminiAPI(ScriptedAPI):
    """A Gemini API server on a free loopback port, answering from `script`."""

    handler = _Handler
    thread_name = "fake-gemini-api"

    def __init__(self, script: list[Turn] | None = None) -> None:
        super().__init__(script)
        self.requests: list[dict[str, Any]] = []  # bodies of the conversation requests
        self.side: list[str] = []  # every other request, as "METHOD PATH"

    def said(self, content: str) -> list[Part]:
        return [text(content)]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def next_parts(self, body: dict[str, Any]) -> list[Part]:
        with self._lock:
            self.requests.append(body)
        return self.next_turn(body)
