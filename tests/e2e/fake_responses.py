"""A scripted stand-in for the OpenAI Responses API, for the Codex CLI end-to-end test.

Codex CLI talks to the model provider its config names; with `wire_api = "responses"`
and `base_url` pointing here, every model call is `POST /v1/responses` answered with
server-sent events. This server answers from a script instead of a model, so a test
decides exactly what "the model" says and can read back every request the client sent.

A script is a list of turns. A turn is a list of output items (`message(...)`,
`shell(...)`) or a callable that receives the request body (parsed JSON) and returns
such a list, so a turn can react to what the client sent. Each request gets the next
turn; once the script has run out the answer is a plain `done`. Every request is
recorded. Standard library only.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

from e2e_support import ScriptedAPI, ScriptedHandler

Item = dict[str, Any]
Turn = Sequence[Item] | Callable[[dict[str, Any]], Sequence[Item]]


def message(text: str) -> Item:
    """An assistant message item."""
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def api_error(status: int, error: dict[str, Any], headers: dict[str, str] | None = None) -> Item:
    """A turn that is an HTTP error instead of a response: the server answers with
    `status`, the body `{"error": error}` and `headers` (429 `rate_limit_exceeded`,
    503, ...). Like any turn it answers one request: a client that retries gets the
    next turn."""
    return {"type": "api_error", "status": status, "error": error, "headers": headers or {}}


def response_failed(error: dict[str, Any]) -> Item:
    """A turn whose response starts streaming and then fails: `response.created`, then
    `response.failed` carrying `error` (`{"code": "server_is_overloaded", ...}`)."""
    return {"type": "response_failed", "error": error}


def shell(command: str, tool: str = "exec_command", arg: str = "cmd") -> Item:
    """A function call of the client's shell tool running `command`: Codex CLI's
    `exec_command` takes `cmd`, Copilot CLI's `bash` takes `command`."""
    return {
        "type": "function_call",
        "name": tool,
        "arguments": json.dumps({arg: command}),
    }


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message in a request's `input`, in order."""
    return texts(body, "user")


def texts(body: dict[str, Any], role: str) -> list[str]:
    """The text of every `role` message (user, developer, assistant) in `input`."""
    found: list[str] = []
    for item in body.get("input") or []:
        if item.get("type") == "message" and item.get("role") == role:
            found.extend(
                part["text"]
                for part in item.get("content") or []
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
    return found


def tool_outputs(body: dict[str, Any]) -> list[str]:
    """The output of every function call in a request's `input`, in order."""
    outputs: list[str] = []
    for item in body.get("input") or []:
        if item.get("type") == "function_call_output":
            output = item.get("output")
            outputs.append(output if isinstance(output, str) else json.dumps(output))
    return outputs


class _Handler(ScriptedHandler):
    owner: FakeResponsesAPI

    def do_GET(self) -> None:
        self.owner.other.append(f"GET {self.path}")
        self.reply(404, b'{"error": "not found"}', "application/json")

    def do_POST(self) -> None:
        raw = self.read_raw()
        if not self.path.rstrip("/").endswith("/responses"):
            self.owner.other.append(f"POST {self.path}")
            self.reply(404, b'{"error": "not found"}', "application/json")
            return
        body = json.loads(raw or b"{}")
        items = self.owner.next_items(body)
        if items and items[0]["type"] == "api_error":
            failure = items[0]
            payload = json.dumps({"error": failure["error"]}).encode()
            self.reply(failure["status"], payload, "application/json", failure["headers"])
            return
        if items and items[0]["type"] == "response_failed":
            failed = {"id": "resp_failed", "status": "failed", "error": items[0]["error"]}
            events = [
                {"type": kind, "response": failed}
                for kind in ("response.created", "response.failed")
            ]
            stream = b"".join(
                f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events
            )
            self.reply(200, stream, "text/event-stream")
            return
        stream = b"".join(
            f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode()
            for e in self.owner.events(items)
        )
        self.reply(200, stream, "text/event-stream")


class FakeResponsesAPI(ScriptedAPI):
    """A Responses API server on a free loopback port, answering from `script`."""

    handler = _Handler
    thread_name = "fake-responses-api"

    def __init__(self, script: list[Turn] | None = None) -> None:
        super().__init__(script)
        self.requests: list[dict[str, Any]] = []  # bodies of POST /v1/responses
        self.other: list[str] = []  # any other request, as "METHOD PATH"
        self._ids = itertools.count(1)

    def said(self, content: str) -> list[Item]:
        return [message(content)]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def next_items(self, body: dict[str, Any]) -> list[Item]:
        with self._lock:
            self.requests.append(body)
        return self.next_turn(body)

    def events(self, items: list[Item]) -> list[dict[str, Any]]:
        """The server-sent events of one response carrying `items`."""
        with self._lock:
            rid = f"resp_{next(self._ids)}"
            ids = [next(self._ids) for _ in items]
        out: list[dict[str, Any]] = [
            {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}
        ]
        done: list[Item] = []
        for index, (item, n) in enumerate(zip(items, ids, strict=True)):
            full = dict(item)
            if full["type"] == "message":
                full.update(id=f"msg_{n}", status="completed")
            else:
                full.update(id=f"fc_{n}", call_id=f"call_{n}", status="completed")
            out.append({"type": "response.output_item.added", "output_index": index, "item": full})
            if full["type"] == "message":
                out.append(
                    {
                        "type": "response.output_text.delta",
                        "item_id": full["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": full["content"][0]["text"],
                    }
                )
            out.append({"type": "response.output_item.done", "output_index": index, "item": full})
            done.append(full)
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        out.append(
            {
                "type": "response.completed",
                "response": {"id": rid, "status": "completed", "output": done, "usage": usage},
            }
        )
        return out
