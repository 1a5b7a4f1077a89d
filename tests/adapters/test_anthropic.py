"""Anthropic MessageParam lists ↔ llmcore history."""

from __future__ import annotations

import copy

import pytest
from anthropic.types import TextBlock, ToolUseBlock

from llmcore.adapters.anthropic import ToolInput, from_history, to_history
from llmcore.errors import RequestFileError, UnsupportedContentError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from tests.adapters.helpers import check_refused

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 4


def test_parallel_tool_calls_error_results_and_images():
    history = (
        Message.user("see", Image(data=PNG, mime_type="image/png")),
        Message.assistant(
            Text(text="Checking."),
            ToolCall(id="toolu_1", name="get_weather", arguments=b'{ "city" : "Paris" }'),
            ToolCall(id="toolu_2", name="get_weather", arguments=b""),
        ),
        Message.tool(
            ToolResult(call_id="toolu_1", tool_name="get_weather", content=b"sunny"),
            ToolResult(
                call_id="toolu_2", tool_name="get_weather", content=b"no city", is_error=True
            ),
        ),
    )
    converted = from_history(history, system=("Be brief.",))
    assert converted.system == [{"type": "text", "text": "Be brief."}]
    assert converted.messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {
                    "type": "image",
                    "source": {
                        "type": "base64",
                        "media_type": "image/png",
                        "data": "iVBORw0KGgoAAAAA",
                    },
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {"city": "Paris"},
                },
                {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": "no city",
                    "is_error": True,
                },
            ],
        },
    ]
    back = to_history(converted.messages, system=converted.system)
    assert back.messages == history
    assert back.messages[1].content[1].arguments == b'{ "city" : "Paris" }'


def test_tool_input_keeps_bytes_that_are_not_an_object():
    value = ToolInput(b"\xff not json")
    assert value == {"raw_arguments": "\ufffd not json"} and value.raw == b"\xff not json"


def test_a_plain_or_changed_input_becomes_compact_json():
    changed = ToolInput(b'{"a": 1}')
    changed["b"] = "é"
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "f", "input": {"x": [1, 2.5], "y": "ü"}},
                {"type": "tool_use", "id": "t2", "name": "f", "input": changed},
            ],
        },
    ]
    calls = to_history(messages).messages[1].content
    assert calls[0] == ToolCall(id="t1", name="f", arguments='{"x":[1,2.5],"y":"ü"}'.encode())
    assert calls[1] == ToolCall(id="t2", name="f", arguments='{"a":1,"b":"é"}'.encode())


def test_thinking_and_signatures_are_dropped_with_a_note():
    messages = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
                {"type": "redacted_thinking", "data": "abc"},
                {"type": "text", "text": "hello"},
            ],
        },
    ]
    result = to_history(messages, system="Be kind.")
    assert result.system == ("Be kind.",)
    assert result.messages == (Message.user("hi"), Message.assistant("hello"))
    assert result.notes == (
        "$.messages[1].content[0]: dropped a thinking block (provider-only data, M4)",
        "$.messages[1].content[1]: dropped a redacted_thinking block (provider-only data, M4)",
    )


def test_sdk_response_blocks_are_read():
    blocks = [
        TextBlock(type="text", text="ok", citations=None),
        ToolUseBlock(type="tool_use", id="toolu_9", name="f", input={"q": "x"}),
    ]
    result = to_history(
        [{"role": "user", "content": "go"}, {"role": "assistant", "content": blocks}]
    )
    assert result.messages[1] == Message.assistant(
        "ok", ToolCall(id="toolu_9", name="f", arguments=b'{"q":"x"}')
    )


def test_a_tool_result_after_user_text_in_one_message_is_split():
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [{"type": "text", "text": "r"}],
                },
                {"type": "text", "text": "and then?"},
            ],
        },
    ]
    history = to_history(messages).messages
    assert history[2:] == (
        Message.tool(ToolResult(call_id="t", tool_name="f", content=b"r")),
        Message.user("and then?"),
    )


@pytest.mark.parametrize(
    ("messages", "error", "location"),
    [
        (
            [{"role": "user", "content": [{"type": "document", "source": {}}]}],
            UnsupportedContentError,
            "$.messages[0].content[0]",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {"role": "robot", "content": [{"type": "text", "text": "b"}]},
            ],
            RequestFileError,
            "$.messages[1].role",
        ),
        ([{"role": "system", "content": "x"}], UnsupportedContentError, "$.messages[0].role"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image", "source": {"type": "url", "url": "https://x"}}],
                }
            ],
            UnsupportedContentError,
            "$.messages[0].content[0].source",
        ),
        ([{"role": "user"}], RequestFileError, "$.messages[0].content"),
        (
            [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "f", "input": [1]}],
                }
            ],
            RequestFileError,
            "$.messages[0].content[0].input",
        ),
    ],
)
def test_bad_input_raises_a_typed_error_naming_the_index_and_key(messages, error, location):
    check_refused(to_history, messages, error, location)


def test_a_copied_tool_input_keeps_its_bytes():
    copied = copy.deepcopy(ToolInput(b'{ "a" : [1, 2.50] }'))
    assert isinstance(copied, ToolInput) and copied.raw == b'{ "a" : [1, 2.50] }'
    assert copied.unchanged()
