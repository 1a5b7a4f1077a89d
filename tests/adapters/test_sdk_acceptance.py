"""The framework forms the adapters write are what the official SDKs send and the APIs accept.

Each form goes through the SDK to llmcore's emulator on loopback, which rejects what the real
APIs reject; the body the SDK sent is read back into history and must equal what was written
(Anthropic ``input`` aside, which the SDK writes as compact JSON).
"""

from __future__ import annotations

import copy
import json

import anthropic as anthropic_sdk
import httpx2
import openai as openai_sdk
import pytest

from llmcore.adapters import anthropic, openai_chat
from llmcore.emulator import Emulator, ManualClock
from llmcore.messages import Image, Message, ToolCall, ToolResult

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
HISTORY = (
    Message.user("Weather in Paris and Oslo?", Image(data=PNG, mime_type="image/png")),
    Message.assistant(
        "Checking.",
        ToolCall(id="toolu_1", name="get_weather", arguments=b'{"city": "Paris"}'),
        ToolCall(id="toolu_2", name="get_weather", arguments=b'{"city":"Oslo"}'),
    ),
    Message.tool(
        ToolResult(call_id="toolu_1", tool_name="get_weather", content=b"sunny"),
        ToolResult(
            call_id="toolu_2", tool_name="get_weather", content=b"no station", is_error=True
        ),
    ),
)
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


@pytest.fixture(scope="module")
def emulator():
    with Emulator(clock=ManualClock()) as emu:
        yield emu


def _client(sent: list[bytes]) -> httpx2.Client:
    def capture(request: httpx2.Request) -> None:
        sent.append(request.read())

    return httpx2.Client(event_hooks={"request": [capture]})


def test_anthropic_message_params_are_sent_by_the_sdk_and_accepted(emulator):
    converted = anthropic.from_history(HISTORY, system=("Be brief.",))
    sent: list[bytes] = []
    with _client(sent) as http:
        client = anthropic_sdk.Anthropic(
            api_key="test", base_url=emulator.base_url, http_client=http, max_retries=0
        )
        reply = client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=100,
            system=converted.system,
            messages=copy.deepcopy(converted.messages),
            tools=[{"name": "get_weather", "input_schema": SCHEMA}],
        )
    assert reply.content
    body = json.loads(sent[0])
    back = anthropic.to_history(body["messages"], system=body["system"])
    # The SDK writes ``input`` as compact JSON: read from the wire, a spaced object is compact
    # (in memory, the ToolInput the adapter wrote still holds the exact bytes).
    compact = ToolCall(id="toolu_1", name="get_weather", arguments=b'{"city":"Paris"}')
    assistant = Message.assistant("Checking.", compact, HISTORY[1].content[2])
    assert back.messages == (HISTORY[0], assistant, HISTORY[2])
    assert back.system == ("Be brief.",)
    assert anthropic.to_history(converted.messages).messages == HISTORY


def test_openai_chat_messages_are_sent_by_the_sdk_and_accepted(emulator):
    converted = openai_chat.from_history(HISTORY, system=("Be brief.",))
    sent: list[bytes] = []
    with _client(sent) as http:
        client = openai_sdk.OpenAI(
            api_key="test", base_url=emulator.openai_base_url, http_client=http, max_retries=0
        )
        reply = client.chat.completions.create(
            model="gpt-5.4-mini",
            messages=converted.messages,
            tools=[{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}],
        )
    assert reply.choices
    back = openai_chat.to_history(json.loads(sent[0])["messages"])
    assert back.messages == HISTORY and back.system == ("Be brief.",)
