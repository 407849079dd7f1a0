"""The scripted API on its own, spoken to over HTTP; no client binary needed."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from fake_api import COMPACT_SUMMARY, FakeAnthropicAPI, bash, text

TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


@pytest.fixture
def server() -> Iterator[FakeAnthropicAPI]:
    with FakeAnthropicAPI() as api:
        yield api


def post(api: FakeAnthropicAPI, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        f"{api.base_url}/v1/messages?beta=true",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["content-type"], response.read()


def events(stream: bytes) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for chunk in stream.decode().strip().split("\n\n"):
        name_line, data_line = chunk.split("\n")
        name = name_line.removeprefix("event: ")
        data = json.loads(data_line.removeprefix("data: "))
        assert data["type"] == name
        found.append((name, data))
    return found


def conversation(prompt: str = "go", *, stream: bool = True) -> dict[str, Any]:
    return {
        "model": "m",
        "stream": stream,
        "tools": TOOLS,
        "messages": [{"role": "user", "content": prompt}],
    }


def test_a_tool_turn_streams_as_the_messages_api_does(server: FakeAnthropicAPI) -> None:
    server.add_turns([text("Running."), bash("ls -a")])

    kind, body = post(server, conversation())

    assert kind == "text/event-stream"
    sent = events(body)
    assert [name for name, _ in sent] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert sent[2][1]["delta"] == {"type": "text_delta", "text": "Running."}
    tool = sent[4][1]["content_block"]
    assert (tool["type"], tool["name"], tool["input"]) == ("tool_use", "Bash", {})
    assert tool["id"].startswith("toolu_")
    partial = sent[5][1]["delta"]
    assert partial["type"] == "input_json_delta"
    assert json.loads(partial["partial_json"])["command"] == "ls -a"
    assert sent[7][1]["delta"]["stop_reason"] == "tool_use"


def test_turns_follow_the_script_then_say_done(server: FakeAnthropicAPI) -> None:
    seen: list[str] = []

    def react(request: dict[str, Any]) -> list[dict[str, Any]]:
        seen.append(request["messages"][-1]["content"])
        return [text("Reacted.")]

    server.add_turns([text("First.")], react)

    answers = []
    for prompt in ("one", "two", "three"):
        _, body = post(server, conversation(prompt, stream=False))
        answers.append(json.loads(body))

    assert [a["content"][0]["text"] for a in answers] == ["First.", "Reacted.", "done"]
    assert [a["stop_reason"] for a in answers] == ["end_turn"] * 3
    assert seen == ["two"]
    assert [b["messages"][-1]["content"] for b in server.conversation()] == [
        "one",
        "two",
        "three",
    ]


def test_side_requests_and_compaction_do_not_use_up_the_script(
    server: FakeAnthropicAPI,
) -> None:
    server.add_turns([text("Scripted.")])
    compact = conversation("Your task is to create a detailed summary of the conversation so far")

    _, title = post(server, {"model": "m", "messages": [{"role": "user", "content": "t"}]})
    _, summary = post(server, {**compact, "stream": False})
    _, turn = post(server, conversation(stream=False))

    assert json.loads(title)["content"][0]["text"] == "Scripted task"
    assert json.loads(summary)["content"][0]["text"] == COMPACT_SUMMARY
    assert json.loads(turn)["content"][0]["text"] == "Scripted."
    assert len(server.side_requests()) == 1
    assert len(server.compactions()) == 1
    assert len(server.conversation()) == 1


def test_other_probes_get_an_answer(server: FakeAnthropicAPI) -> None:
    head = urllib.request.Request(f"{server.base_url}/api/hello", method="HEAD")
    with urllib.request.urlopen(head, timeout=10) as response:
        assert response.status == 200
    count = urllib.request.Request(
        f"{server.base_url}/v1/messages/count_tokens",
        data=json.dumps(conversation()).encode(),
    )
    with urllib.request.urlopen(count, timeout=10) as response:
        assert json.loads(response.read()) == {"input_tokens": 100}
    assert [(r.method, r.path) for r in server.requests] == [
        ("HEAD", "/api/hello"),
        ("POST", "/v1/messages/count_tokens"),
    ]


def test_a_turn_that_raises_is_recorded_and_answered(server: FakeAnthropicAPI) -> None:
    def broken(request: dict[str, Any]) -> list[dict[str, Any]]:
        raise KeyError("missing")

    server.add_turns(broken)

    _, body = post(server, conversation(stream=False))

    assert json.loads(body)["content"][0]["text"] == "script error: KeyError('missing')"
    assert [repr(e) for e in server.errors] == ["KeyError('missing')"]
    assert server.unused_turns() == 0
