"""Response shapes: JSON bodies and SSE streams of the three APIs, checked by event sequence,
by exact argument bytes, and against the official SDK types (SPEC P7, PROVIDER-RULES §1.5, §2.2)."""

from __future__ import annotations

import json
from typing import Any

import anthropic.types
import openai.types.chat
import openai.types.responses

from llmcore import jsonbytes
from llmcore.emulator import Emulator, ManualClock, Reply, Script, ScriptedCall
from tests.emulator.helpers import (
    ANTHROPIC_HEADERS,
    ANTHROPIC_TOOLS,
    CHAT_TOOLS,
    RESPONSES_TOOLS,
    SONNET,
)

ARGS = '{ "path" : "naïve/ü.txt",\n "n": 1.50 }'
SCRIPT = Script(
    replies=(
        Reply(
            text="Reading the file now — one moment, please.",
            tool_calls=(ScriptedCall(name="read_file", arguments=ARGS),),
        ),
        Reply(text="Done."),
    )
)


def sse(raw: bytes) -> list[tuple[str | None, Any]]:
    events: list[tuple[str | None, Any]] = []
    for chunk in raw.decode("utf-8").split("\n\n"):
        if not chunk.strip():
            continue
        name = None
        data = None
        for line in chunk.split("\n"):
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = line[6:] if line[6:] == "[DONE]" else json.loads(line[6:])
        events.append((name, data))
    return events


def run(path: str, body: dict[str, Any]) -> bytes:
    import httpx

    with Emulator(clock=ManualClock(), script=SCRIPT) as emu:
        response = httpx.post(
            emu.base_url + path, content=jsonbytes.dumps(body), headers=ANTHROPIC_HEADERS
        )
        assert response.status_code == 200, response.text
        return response.content


ANTHROPIC = {
    "model": SONNET,
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "read it"}],
    "tools": ANTHROPIC_TOOLS,
}


def test_anthropic_json_splices_the_exact_argument_bytes() -> None:
    raw = run("/v1/messages", ANTHROPIC)
    assert b'"input":' + ARGS.encode() + b"}" in raw
    message = anthropic.types.Message.model_validate_json(raw)
    assert message.stop_reason == "tool_use"
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.usage.cache_creation is not None


def test_anthropic_stream_event_sequence() -> None:
    events = sse(run("/v1/messages", {**ANTHROPIC, "stream": True}))
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    body = names[2:-2]
    assert body[0] == "content_block_start" and body[-1] == "content_block_stop"
    assert body.count("content_block_start") == 2 == body.count("content_block_stop")
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    text = "".join(d["text"] for d in deltas if d["type"] == "text_delta")
    arguments = "".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta")
    assert text == SCRIPT.replies[0].text
    assert arguments == ARGS
    start = events[0][1]["message"]
    assert set(start["usage"]) >= {
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation",
    }
    final = events[-2][1]
    assert final["delta"]["stop_reason"] == "tool_use"
    assert final["usage"]["output_tokens"] == SCRIPT.replies[0].output_tokens
    for name, data in events:
        assert data["type"] == name


CHAT = {
    "model": "gpt-4o",
    "messages": [{"role": "user", "content": "read it"}],
    "tools": CHAT_TOOLS,
}


def test_chat_json_parses_with_the_sdk() -> None:
    completion = openai.types.chat.ChatCompletion.model_validate_json(
        run("/v1/chat/completions", CHAT)
    )
    call = completion.choices[0].message.tool_calls[0]
    assert call.function.arguments == ARGS
    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.usage.prompt_tokens_details.cached_tokens == 0


def test_chat_stream_chunks_end_with_done_and_carry_usage() -> None:
    body = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
    events = sse(run("/v1/chat/completions", body))
    assert events[-1] == (None, "[DONE]")
    chunks = [openai.types.chat.ChatCompletionChunk.model_validate(d) for _, d in events[:-1]]
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    arguments = "".join(
        call.function.arguments or ""
        for c in chunks
        if c.choices
        for call in c.choices[0].delta.tool_calls or ()
    )
    assert text == SCRIPT.replies[0].text
    assert arguments == ARGS
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


RESPONSES = {"model": "gpt-4o", "input": "read it", "tools": RESPONSES_TOOLS}


def test_responses_json_parses_with_the_sdk() -> None:
    response = openai.types.responses.Response.model_validate_json(run("/v1/responses", RESPONSES))
    assert [item.type for item in response.output] == ["message", "function_call"]
    assert response.output[1].arguments == ARGS
    assert response.usage.input_tokens_details.cached_tokens == 0


def test_responses_stream_event_sequence() -> None:
    events = sse(run("/v1/responses", {**RESPONSES, "stream": True}))
    names = [name for name, _ in events]
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 2,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * 2,
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    arguments = "".join(
        d["delta"] for n, d in events if n == "response.function_call_arguments.delta"
    )
    assert arguments == ARGS
    for _, data in events:
        assert data["type"] in names
    completed = openai.types.responses.Response.model_validate(events[-1][1]["response"])
    assert completed.status == "completed"
