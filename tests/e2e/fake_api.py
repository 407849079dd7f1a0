"""A scripted stand-in for the Anthropic Messages API, for end-to-end tests.

Claude Code talks to whatever ``ANTHROPIC_BASE_URL`` names. This server answers it
from a script instead of a model, so a test decides exactly what "the model" says and
can read back every request the client sent.

A script is a list of turns. A turn is a list of blocks (``text(...)``,
``bash(...)``, ``tool_use(...)``, or one ``api_error(...)`` for an error answer) or a
callable that receives the request body (parsed JSON) and returns such a list, so a
turn can react to what the client sent. Each request that carries ``tools`` is a step
of the conversation and gets the next turn; when the script has run out, the answer
is a plain ``done``. A compaction request (``/compact``; it carries
the tools too) gets a plausible summary, and any other request without tools (titles,
summaries) a short canned text. Every request is recorded for the test to read.

Standard library only.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from e2e_support import ScriptedAPI, ScriptedHandler

Block = dict[str, Any]
Turn = Sequence[Block] | Callable[[dict[str, Any]], Sequence[Block]]

MODEL = "claude-sonnet-4-5"
USAGE = {"input_tokens": 100, "output_tokens": 20}
COMPACT_SUMMARY = (
    "<summary>\n"
    "1. Primary Request and Intent: the user asked for the scripted task.\n"
    "2. Current Work: the task was being worked on; nothing is left half-done.\n"
    "3. Next Step: continue with the task.\n"
    "</summary>"
)


def text(content: str) -> Block:
    """A text block of an assistant turn."""
    return {"type": "text", "text": content}


def api_error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Block:
    """A turn that is an API error instead of a message: the server answers the request
    with `status`, the Messages API's error body (429 `rate_limit_error`, 529
    `overloaded_error`, ...) and `headers` (`retry-after`, ...)."""
    error = {"type": kind, "message": message}
    return {"type": "api_error", "status": status, "error": error, "headers": headers or {}}


def bash(command: str, description: str = "Run a command", tool: str = "Bash") -> Block:
    """A Bash tool call of an assistant turn (Copilot CLI and opencode name their tool
    `bash`)."""
    return {
        "type": "tool_use",
        "name": tool,
        "input": {"command": command, "description": description},
    }


def tool_use(name: str, **tool_input: Any) -> Block:
    """A call of any tool by name (`TaskCreate`, `TaskUpdate`, `TodoWrite`, ...)."""
    return {"type": "tool_use", "name": name, "input": tool_input}


def task_create(subject: str, description: str, active_form: str | None = None) -> Block:
    """A TaskCreate call (the task tools are on with CLAUDE_CODE_ENABLE_TODO_TOOLS=1)."""
    extra = {} if active_form is None else {"activeForm": active_form}
    return tool_use("TaskCreate", subject=subject, description=description, **extra)


def task_update(task_id: str, status: str) -> Block:
    """A TaskUpdate call setting a task's status (`in_progress`, `completed`)."""
    return tool_use("TaskUpdate", taskId=task_id, status=status)


def todo(content: str, status: str) -> dict[str, str]:
    """One item of a TodoWrite call's `todos`."""
    return {"content": content, "status": status, "activeForm": content}


@dataclass
class Request:
    """One HTTP request the client made."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def is_conversation(body: Any) -> bool:
    """A request of the main conversation: it offers the model tools."""
    return isinstance(body, dict) and bool(body.get("tools")) and not is_compaction(body)


COMPACTION_PROMPT = "create a detailed summary of the conversation so far"


def is_compaction(body: Any) -> bool:
    """The client asking for a summary of the conversation so far (`/compact`).

    It is sent with the conversation's tools; the instruction ends the last user
    message.
    """
    if not isinstance(body, dict) or not body.get("messages"):
        return False
    last = body["messages"][-1]
    return last.get("role") == "user" and any(
        COMPACTION_PROMPT in part for part in _texts(last.get("content"))
    )


def texts(body: dict[str, Any], role: str) -> list[str]:
    """Every text the request carries in messages of `role`, in order."""
    found: list[str] = []
    for message in body.get("messages", []):
        if message.get("role") == role:
            found.extend(_texts(message.get("content")))
    return found


# Where Claude Code puts a Stop hook's block reason (the next user message) and a
# SessionStart hook's context (a system message), after these words.
FEEDBACK = "Stop hook feedback:\n"
CONTEXT = "SessionStart hook additional context: "


def feedback(body: dict[str, Any]) -> str:
    """The block reason the model was sent in this request."""
    last = texts(body, "user")[-1]
    assert last.startswith(FEEDBACK), last
    return last.removeprefix(FEEDBACK)


def loop_context(body: dict[str, Any]) -> str:
    """What SessionStart hooks told the model in this request ("" for nothing).

    The client puts each hook's context in a system-role message, after the text
    `SessionStart hook additional context: `, sometimes ahead of other text.
    """
    found = [t.split(CONTEXT, 1)[1] for t in texts(body, "system") if CONTEXT in t]
    return "\n".join(found)


def tool_results(body: dict[str, Any]) -> list[str]:
    """The output of every tool call the request reports back, in order."""
    found: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") != "user" or not isinstance(content, list):
            continue
        found.extend(
            "\n".join(_texts(part.get("content")))
            for part in content
            if isinstance(part, dict) and part.get("type") == "tool_result"
        )
    return found


def tool_result(body: dict[str, Any], name: str) -> dict[str, Any]:
    """The last `tool_result` block the request reports for a call of tool `name`
    (its `content`, and `is_error` when the client sets it)."""
    calls = {
        part["id"]: part["name"]
        for message in body["messages"]
        if message["role"] == "assistant" and isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "tool_use"
    }
    results = [
        part
        for message in body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "tool_result" and calls.get(part["tool_use_id"]) == name
    ]
    last: dict[str, Any] = results[-1]
    return last


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        ]
    return []


class _Handler(ScriptedHandler):
    owner: FakeAnthropicAPI

    def _read_body(self) -> Any:
        raw = self.read_raw()
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body: Any) -> None:
        self.owner._record(
            Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )

    def _send_json(self, status: int, obj: Any) -> None:
        self.reply(status, json.dumps(obj).encode(), "application/json")

    def do_HEAD(self) -> None:
        self._record(None)
        self.reply(200, b"", "text/plain")

    def do_GET(self) -> None:
        self._record(None)
        self._send_json(200, {})

    def do_POST(self) -> None:
        body = self._read_body()
        self._record(body)
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": 100})
        elif path == "/v1/messages" and isinstance(body, dict):
            blocks = self.owner.answer(body)
            if blocks and blocks[0]["type"] == "api_error":
                error = {"type": "error", "error": blocks[0]["error"]}
                payload = json.dumps(error).encode()
                headers = blocks[0].get("headers")
                self.reply(blocks[0]["status"], payload, "application/json", headers)
            elif body.get("stream"):
                self.reply(200, self._stream(body, blocks), "text/event-stream")
            else:
                self._send_json(200, self._message(body, blocks))
        else:
            error = {"type": "not_found_error", "message": f"no route {self.path}"}
            self._send_json(404, {"type": "error", "error": error})

    # -- message encoding ----------------------------------------------------------

    def _finish(self, blocks: list[Block]) -> list[Block]:
        done = []
        for block in blocks:
            if block["type"] == "tool_use":
                block = {"id": self.owner.new_id("toolu"), **block}
            done.append(block)
        return done

    @staticmethod
    def _stop_reason(blocks: list[Block]) -> str:
        return "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"

    def _message(self, body: dict[str, Any], blocks: list[Block]) -> dict[str, Any]:
        return {
            "id": self.owner.new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model", MODEL),
            "content": self._finish(blocks),
            "stop_reason": self._stop_reason(blocks),
            "stop_sequence": None,
            "usage": dict(self.owner.usage),
        }

    def _stream(self, body: dict[str, Any], blocks: list[Block]) -> bytes:
        message = self._message(body, blocks)
        opening = {**message, "content": [], "stop_reason": None}
        # As the Messages API streams it: the input and cache counts open the message,
        # the output count closes it.
        opening["usage"] = {**self.owner.usage, "output_tokens": 1}
        events = [_sse("message_start", message=opening)]
        for index, block in enumerate(message["content"]):
            if block["type"] == "tool_use":
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            else:
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            events.append(_sse("content_block_start", index=index, content_block=start))
            events.append(_sse("content_block_delta", index=index, delta=delta))
            events.append(_sse("content_block_stop", index=index))
        stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        events.append(
            _sse(
                "message_delta",
                delta=stop,
                usage={"output_tokens": self.owner.usage["output_tokens"]},
            )
        )
        events.append(_sse("message_stop"))
        return b"".join(events)


def _sse(kind: str, **fields: Any) -> bytes:
    """One server-sent event of the Messages API stream."""
    data = json.dumps({"type": kind, **fields})
    return f"event: {kind}\ndata: {data}\n\n".encode()


class FakeAnthropicAPI(ScriptedAPI):
    """A Messages API server on a free loopback port, answering from ``script``."""

    handler = _Handler
    thread_name = "fake-anthropic-api"

    def __init__(self, script: list[Turn] | None = None) -> None:
        super().__init__(script)
        self.requests: list[Request] = []
        # The token counts every answer reports (`usage`): input, cache and output tokens.
        self.usage: dict[str, int] = dict(USAGE)
        self._ids = itertools.count(1)

    def said(self, content: str) -> list[Block]:
        return [text(content)]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- what the client sent ----------------------------------------------------

    def messages(self) -> list[dict[str, Any]]:
        """Bodies of every ``POST /v1/messages``, in order."""
        with self._lock:
            return [
                r.body
                for r in self.requests
                if r.method == "POST" and r.path.split("?")[0] == "/v1/messages"
            ]

    def conversation(self) -> list[dict[str, Any]]:
        """Bodies of the conversation requests (those that carry tools)."""
        return [b for b in self.messages() if is_conversation(b)]

    def compactions(self) -> list[dict[str, Any]]:
        """Bodies of the requests for a summary of the conversation (`/compact`)."""
        return [b for b in self.messages() if is_compaction(b)]

    def side_requests(self) -> list[dict[str, Any]]:
        """Bodies of the other message requests (titles, summaries)."""
        return [b for b in self.messages() if not is_conversation(b) and not is_compaction(b)]

    # -- answering ---------------------------------------------------------------

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def answer(self, body: dict[str, Any]) -> list[Block]:
        """The content blocks that answer one ``/v1/messages`` request."""
        if is_compaction(body):
            return [text(COMPACT_SUMMARY)]
        if is_conversation(body):
            return self.next_turn(body)
        return [text("Scripted task")]

    def new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):024d}"
