"""OpenAI Chat message lists ↔ llmcore history."""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall

from llmcore.adapters.openai_chat import from_history, to_history
from llmcore.errors import RequestFileError, UnsupportedContentError
from llmcore.messages import OMITTED_IMAGE_PLACEHOLDER, Image, Message, Text, ToolCall, ToolResult
from tests.adapters.helpers import check_refused

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 4


def test_parallel_tool_calls_keep_their_argument_bytes_and_error_results():
    history = (
        Message.user("weather?"),
        Message.assistant(
            ToolCall(id="call_1", name="get_weather", arguments=b'{ "city" :"Paris" }'),
            ToolCall(id="call_2", name="get_weather", arguments=b"not json"),
        ),
        Message.tool(
            ToolResult(call_id="call_2", tool_name="get_weather", content=b"no", is_error=True),
            ToolResult(call_id="call_1", tool_name="get_weather", content=b"sunny"),
        ),
    )
    converted = from_history(history, system=("Be brief.",))
    assert converted.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{ "city" :"Paris" }'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "not json"},
                },
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": [{"type": "text", "text": "[tool error]"}, {"type": "text", "text": "no"}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]
    back = to_history(converted.messages)
    assert back.messages == history and back.system == ("Be brief.",)


def test_an_image_is_a_data_url_and_comes_back_as_bytes():
    history = (Message.user("look", Image(data=PNG, mime_type="image/png")),)
    converted = from_history(history)
    url = converted.messages[0]["content"][1]["image_url"]["url"]
    assert url == "data:image/png;base64,iVBORw0KGgoAAAAA"
    assert to_history(converted.messages).messages == history


def test_reasoning_is_dropped_with_a_note():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "reasoning_content": "secret chain"},
    ]
    result = to_history(messages)
    assert result.messages == (Message.user("hi"), Message.assistant("hello"))
    assert result.notes == ("$.messages[1]: dropped reasoning_content (provider-only data, M4)",)


def test_sdk_message_objects_are_read():
    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
            ],
        }
    )
    result = to_history([{"role": "user", "content": "go"}, message])
    assert result.messages[1] == Message.assistant(
        ToolCall(id="c1", name="f", arguments=b'{"a":1}')
    )
    call = ChatCompletionMessageFunctionToolCall.model_validate(
        {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{ }"}}
    )
    mixed = {"role": "assistant", "content": "x", "tool_calls": [call]}
    read = to_history([{"role": "user", "content": "go"}, mixed]).messages[1]
    assert read == Message.assistant("x", ToolCall(id="c2", name="g", arguments=b"{ }"))


def test_what_the_chat_form_cannot_hold_is_noted():
    history = (
        Message.user(Text.omitted_image("image/png")),
        Message.assistant(ToolCall(id="c", name="f", arguments=b"\xff{}"), Text(text="after")),
    )
    converted = from_history(history)
    assert converted.messages[0]["content"] == OMITTED_IMAGE_PLACEHOLDER
    assert converted.messages[1]["content"] == "after"
    assert converted.messages[1]["tool_calls"][0]["function"]["arguments"] == "\ufffd{}"
    assert converted.notes == (
        "messages[0].content[0]: an omitted image (image/png) became its text",
        "messages[1].content[0].arguments: bytes that are not UTF-8 were written as U+FFFD (a str cannot hold them)",
        "messages[1].content[1]: text after a tool call moved before the calls",
    )


def test_consecutive_tool_messages_come_back_as_one():
    call = Message.assistant(
        ToolCall(id="a", name="f", arguments=b"{}"), ToolCall(id="b", name="f", arguments=b"{}")
    )
    ra = ToolResult(call_id="a", tool_name="f", content=b"1")
    rb = ToolResult(call_id="b", tool_name="f", content=b"2")
    history = (Message.user("x"), call, Message.tool(ra), Message.tool(rb))
    back = to_history(from_history(history).messages)
    assert back.messages == (Message.user("x"), call, Message.tool(ra, rb))


@pytest.mark.parametrize(
    ("messages", "error", "location"),
    [
        (
            [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}],
            RequestFileError,
            "$.messages[1].role",
        ),
        (
            [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}],
            UnsupportedContentError,
            "$.messages[0].content[0]",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
                }
            ],
            UnsupportedContentError,
            "$.messages[0].content[0].image_url.url",
        ),
        ([{"role": "user", "content": 3}], RequestFileError, "$.messages[0].content"),
        (["not a message"], RequestFileError, "$.messages[0]"),
        (
            [{"role": "user", "content": "a"}, {"role": "system", "content": "late"}],
            UnsupportedContentError,
            "$.messages[1]",
        ),
    ],
)
def test_bad_input_raises_a_typed_error_naming_the_index_and_key(messages, error, location):
    check_refused(to_history, messages, error, location)


def test_litellm_tool_messages_with_a_name_are_read():
    messages = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "done"},
        {"role": "tool", "tool_call_id": "elsewhere", "name": "g", "content": "x"},
    ]
    results = to_history(messages).messages[2].content
    assert results == (
        ToolResult(call_id="c1", tool_name="f", content=b"done"),
        ToolResult(call_id="elsewhere", tool_name="g", content=b"x"),
    )
    check_refused(to_history, [{**messages[2], "name": 3}], RequestFileError, "$.messages[0].name")
