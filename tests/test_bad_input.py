"""Bad input through the Python API: typed errors that say what and where, never a traceback.

Each test uses the exact input a tester broke llmcore with (the tester's report items are named).
"""

from __future__ import annotations

import json
import math

import pytest

from llmcore import jsonbytes
from llmcore.blocks import decode_message
from llmcore.errors import (
    EncodingError,
    InvalidMessageError,
    InvalidRequestError,
    RequestFileError,
    UnknownProviderError,
)
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import get_provider
from llmcore.request import Params, Request, Tool, ToolChoiceName
from llmcore.requestfile import load_request_file, parse_request, read_json_file

PROVIDERS = ("anthropic", "openai-chat", "openai-responses", "openrouter")
SURROGATE_ARGS = b'{"a":"\xed\xa0\x80"}'  # the CESU-8 form of U+D800: not UTF-8


def _nest(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def _history(arguments: bytes) -> tuple[Message, ...]:
    return (
        Message.user("q"),
        Message.assistant(ToolCall(id="t1", name="f", arguments=arguments)),
        Message.tool(ToolResult(call_id="t1", tool_name="f", content=b"r")),
    )


# --- (1)/(18) strict UTF-8 ---------------------------------------------------------------------


def test_is_json_object_refuses_bytes_that_are_not_strict_utf8():
    assert jsonbytes.is_json_object(SURROGATE_ARGS) is False
    assert jsonbytes.is_json_object(b'{"a":"\\ud800"}') is True  # an escape is valid UTF-8 text
    assert jsonbytes.is_json_object('{"a":1}'.encode("utf-16")) is False


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"model":"m\xff"}', "not valid UTF-8 at byte 11"),
        ('{"model":"m"}'.encode("utf-16"), "not valid UTF-8 at byte 0"),
        (b'\xef\xbb\xbf{"model":"m"}', "byte order mark"),
    ],
)
def test_loads_decodes_bytes_as_strict_utf8(data, message):
    with pytest.raises(ValueError, match=message):
        jsonbytes.loads(data)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_non_utf8_tool_arguments_take_the_raw_arguments_path(provider):
    body = get_provider(provider).build_body(Request(model="m", messages=_history(SURROGATE_ARGS)))
    text = json.loads(body)
    dumped = json.dumps(text, ensure_ascii=False)
    assert "\ufffd\ufffd\ufffd" in dumped  # the three invalid bytes, each U+FFFD
    if provider == "anthropic":
        assert text["messages"][1]["content"][0]["input"] == {
            "raw_arguments": '{"a":"\ufffd\ufffd\ufffd"}'
        }


def test_request_file_arguments_with_a_lone_surrogate_escape_build(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(
        '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"q"}]},'
        '{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"f",'
        '"arguments":"{\\"a\\":\\"\\ud800\\"}"}]},{"role":"tool","content":[{"type":"toolResult",'
        '"callID":"t1","toolName":"f","content":"r"}]}]}'
    )
    request = load_request_file(path)
    assert request.messages[1].content[0].arguments == '{"a":"\ufffd"}'.encode()
    for provider in PROVIDERS:
        assert "\ufffd" in get_provider(provider).build_body(request).decode("utf-8")


def test_archive_arguments_base64_with_surrogate_bytes_build():
    block = {"type": "toolCall", "id": "t1", "name": "f", "argumentsBase64": "eyJhIjoi7aCAIn0="}
    message = decode_message({"role": "assistant", "content": [block]}, "$.history[1]")
    assert message.content[0].arguments == SURROGATE_ARGS
    history = (Message.user("q"), message, _history(b"{}")[2])
    body = json.loads(get_provider("openai-chat").build_body(Request(model="m", messages=history)))
    args = json.loads(body["messages"][1]["tool_calls"][0]["function"]["arguments"])
    assert args == {"raw_arguments": '{"a":"\ufffd\ufffd\ufffd"}'}


def test_a_block_with_both_string_and_base64_forms_is_refused():
    block = {
        "type": "toolCall",
        "id": "t",
        "name": "f",
        "arguments": "{}",
        "argumentsBase64": "e30=",
    }
    with pytest.raises(RequestFileError) as err:
        decode_message({"role": "assistant", "content": [block]}, "$.messages[0]")
    assert err.value.location == "$.messages[0].content[0].argumentsBase64"


# --- (2) lone surrogates: one treatment (U+FFFD) -----------------------------------------------


def test_lone_surrogates_in_request_fields_become_replacement_characters():
    request = parse_request(
        json.loads(
            '{"model":"m\\ud800","params":{"stopSequences":["\\ud800"],"extra":{"k":"\\ud800"},'
            '"toolChoice":{"name":"f\\ud800"}},"tools":[{"name":"f\\ud800",'
            '"inputSchema":{"d":"\\ud800"}}]}'
        )
    )
    assert request.model == "m\ufffd"
    assert request.params.stop_sequences == ("\ufffd",)
    assert request.params.extra == (("k", '"\ufffd"'),)
    assert request.params.tool_choice == ToolChoiceName(name="f\ufffd")
    assert request.tools[0].input_schema == '{"d":"\ufffd"}'
    body = get_provider("anthropic").build_body(request).decode("utf-8")
    assert '"stop_sequences":["\ufffd"]' in body


def test_import_turns_lone_surrogates_into_replacement_characters():
    anthropic = {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"a": "\ud800"}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t",
                        "content": [{"type": "text", "text": "\ud800"}],
                    },
                    {"type": "text", "text": "x\udc00"},
                ],
            },
        ],
    }
    request = get_provider("anthropic").import_body(anthropic).request
    assert request.messages[1].content[0].arguments == '{"a":"\ufffd"}'.encode()
    assert request.messages[2].content[0].content == "\ufffd".encode()
    assert request.messages[3].content[0].text == "x\ufffd"
    responses = {
        "model": "m",
        "input": [
            {"role": "user", "content": "q"},
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": '{"a":"\ud800"}'},
            {"type": "function_call_output", "call_id": "c", "output": "\ud800"},
        ],
    }
    request = get_provider("openai-responses").import_body(responses).request
    assert request.messages[1].content[0].arguments == '{"a":"\ufffd"}'.encode()
    assert request.messages[2].content[0].content == "\ufffd".encode()


# --- (3) deep nesting ---------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [500, 990])
def test_deep_extra_and_schema_in_request_files_are_refused_with_the_path(tmp_path, levels):
    path = tmp_path / "r.json"
    path.write_text('{"model":"m","params":{"extra":{"x":' + _nest(levels) + "}}}")
    with pytest.raises(RequestFileError, match="nests more than 256 levels deep") as err:
        load_request_file(path)
    assert err.value.location.startswith(str(path))
    path.write_text(
        '{"model":"m","tools":[{"name":"f","inputSchema":{"a":' + _nest(levels) + "}}]}"
    )
    with pytest.raises(RequestFileError, match="nests more than 256 levels deep"):
        load_request_file(path)


def test_nesting_at_the_limit_is_read(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"model":"m","params":{"extra":{"x":' + _nest(253) + "}}}")
    assert load_request_file(path).params.extra[0][1] == _nest(253)
    assert jsonbytes.too_deep(json.loads(_nest(256))) is None
    assert jsonbytes.too_deep(json.loads(_nest(257))) == "$[0][0][0]"


def test_writer_turns_deep_nesting_into_an_encoding_error():
    value: list[object] = []
    for _ in range(5000):
        value = [value]
    with pytest.raises(EncodingError, match="nested too deeply"):
        jsonbytes.dumps(value)
    with pytest.raises(EncodingError, match="nested too deeply"):
        Tool.from_schema("f", "", {"a": value})


def _deep() -> list[object]:
    value: list[object] = []
    for _ in range(3000):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("provider", "make", "where"),
    [
        (
            "anthropic",
            lambda d: {"model": "m", "max_tokens": 5, "messages": [], "metadata": d},
            "$.metadata",
        ),
        (
            "anthropic",
            lambda d: {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "q"}],
                "tools": [{"name": "f", "input_schema": {"a": d}}],
            },
            "$.tools[0]",
        ),
        (
            "openai-chat",
            lambda d: {
                "model": "m",
                "messages": [],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {"a": d}}}],
            },
            "$.tools[0]",
        ),
        ("openai-responses", lambda d: {"model": "m", "input": [], "text": d}, "$.text"),
    ],
)
def test_import_of_deep_values_names_the_path(provider, make, where):
    with pytest.raises(RequestFileError, match="nested too deeply") as err:
        get_provider(provider).import_body(make(_deep()))
    assert err.value.location.startswith(where)


# --- (4) wrong types in a request file ----------------------------------------------------------


@pytest.mark.parametrize("role", [["user"], {"r": "user"}, 3])
def test_a_role_that_is_not_a_string_is_named(role):
    value = {"model": "m", "messages": [{"role": role, "content": [{"type": "text", "text": "q"}]}]}
    with pytest.raises(RequestFileError) as err:
        parse_request(value)
    assert err.value.location == "$.messages[0].role"


def test_message_with_unhashable_role_raises_invalid_message_error():
    with pytest.raises(InvalidMessageError, match="unknown role"):
        Message(role=["user"], content=(Text(text="q"),))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("params", "where"),
    [
        ({"extra": None}, "$.params.extra"),
        ({"maxTokens": None}, "$.params.maxTokens"),
        ({"toolChoice": "bogus"}, "$.params.toolChoice"),
        ({"toolChoice": None}, "$.params.toolChoice"),
        ({"cacheTtl": "2h"}, "$.params.cacheTtl"),
        ({"cacheTtl": 5}, "$.params.cacheTtl"),
        ({"cacheMode": "x"}, "$.params.cacheMode"),
        ({"maxTokens": -5}, "$.params.maxTokens"),
        ({"maxTokens": 0}, "$.params.maxTokens"),
        ({"maxTokens": 1e23}, "$.params.maxTokens"),
    ],
)
def test_bad_params_name_their_key(params, where):
    with pytest.raises(RequestFileError) as err:
        parse_request({"model": "m", "params": params})
    assert err.value.location == where
    key = where.rsplit(".", 1)[1]
    assert key in err.value.message or key == "maxTokens"


# --- (5) non-finite numbers ---------------------------------------------------------------------


def test_temperature_1e999_is_refused_when_the_file_is_read(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"model":"m","params":{"temperature":1e999}}')
    with pytest.raises(RequestFileError, match="1e999"):
        load_request_file(path)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_params_refuse_non_finite_numbers(value):
    with pytest.raises(InvalidRequestError) as err:
        Params(temperature=value)
    assert err.value.location == "params.temperature"
    with pytest.raises(InvalidRequestError) as err:
        Params(top_p=value)
    assert err.value.location == "params.topP"


# --- (6) Python API types -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"temperature": "hot"}, "params.temperature"),
        ({"temperature": True}, "params.temperature"),
        ({"max_tokens": "10"}, "params.maxTokens"),
        ({"max_tokens": True}, "params.maxTokens"),
        ({"max_tokens": -5}, "params.maxTokens"),
        ({"max_tokens": 0}, "params.maxTokens"),
        ({"stop_sequences": "END"}, "params.stopSequences"),
        ({"stop_sequences": ("END", 3)}, "params.stopSequences[1]"),
        ({"tool_choice": "some"}, "params.toolChoice"),
        ({"stream": "yes"}, "params.stream"),
        ({"extra": (("user", "not json"),)}, "params.extra.user"),
        ({"extra": (("user", "1e999"),)}, "params.extra.user"),
        ({"extra": (("user", 5),)}, "params.extra.user"),
        ({"extra": (("a", "1"), ("a", "2"))}, "params.extra"),
    ],
)
def test_params_check_types(kwargs, where):
    with pytest.raises(InvalidRequestError) as err:
        Params(**kwargs)
    assert err.value.location == where


@pytest.mark.parametrize(
    ("kwargs", "where"),
    [
        ({"input_schema": "{not json"}, "input_schema"),
        ({"input_schema": "[1]"}, "input_schema"),
        ({"input_schema": None}, "input_schema"),
        ({"input_schema": {"type": "object"}}, "input_schema"),
        ({"name": 5}, "name"),
        ({"name": ""}, "name"),
        ({"description": None}, "description"),
        ({"strict": "yes"}, "strict"),
    ],
)
def test_tool_checks_types_and_json(kwargs, where):
    fields = {"name": "f", "description": "", "input_schema": "{}", **kwargs}
    with pytest.raises(InvalidRequestError) as err:
        Tool(**fields)
    assert err.value.location == where


def test_valid_extra_and_schema_are_kept_byte_for_byte():
    params = Params(extra=(("metadata", ' {"user_id": "u"} '),))
    assert params.extra == (("metadata", ' {"user_id": "u"} '),)
    tool = Tool(name="f", description="", input_schema='{"type": "object"}')
    assert tool.input_schema == '{"type": "object"}'


@pytest.mark.parametrize(
    "make",
    [
        lambda: Text(text=None),
        lambda: Text(text="x", omitted_image_mime_type=3),
        lambda: ToolCall(id=5, name="f", arguments=b"{}"),
        lambda: ToolCall(id="t", name=None, arguments=b"{}"),
        lambda: ToolResult(call_id=1, tool_name="f", content=b""),
        lambda: ToolResult(call_id="t", tool_name="f", content=b"", is_error="no"),
        lambda: Image(data=b"", mime_type=None),
        lambda: Message(role="user", content=5),
        lambda: Message(role="user", content="text"),
    ],
)
def test_message_values_raise_invalid_message_error(make):
    with pytest.raises(InvalidMessageError):
        make()


def test_request_checks_its_parts():
    with pytest.raises(InvalidRequestError) as err:
        Request(model=5)  # type: ignore[arg-type]
    assert err.value.location == "model"
    with pytest.raises(InvalidRequestError) as err:
        Request(model="m", messages=("hi",))  # type: ignore[arg-type]
    assert err.value.location == "messages[0]"
    with pytest.raises(InvalidRequestError) as err:
        Request(model="m", system="sys")  # type: ignore[arg-type]
    assert err.value.location == "system"


# --- (7) import refusals ------------------------------------------------------------------------


def test_import_refuses_an_empty_model():
    body = {"model": "", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]}
    with pytest.raises(RequestFileError) as err:
        get_provider("anthropic").import_body(body)
    assert err.value.location == "$.model"


@pytest.mark.parametrize(
    ("provider", "body", "key"),
    [
        (
            "openai-responses",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "q"}]},
            "input",
        ),
        ("openai-chat", {"model": "m", "input": "q"}, "messages"),
        ("anthropic", {"model": "m", "max_tokens": 5, "input": "q"}, "messages"),
    ],
)
def test_import_refuses_a_body_without_its_history_key(provider, body, key):
    with pytest.raises(RequestFileError, match=f"missing key '{key}'") as err:
        get_provider(provider).import_body(body)
    assert err.value.location == f"$.{key}"


# --- (8) grammar --------------------------------------------------------------------------------


def test_an_assistant_message_cannot_hold_an_image():
    with pytest.raises(
        InvalidMessageError, match="^content\\[0\\]: an assistant message cannot hold Image$"
    ):
        Message(role="assistant", content=(Image(data=b"x", mime_type="image/png"),))


# --- (9) duplicate tool names, tool choice naming no tool ---------------------------------------


def test_two_tools_with_one_name_are_refused():
    tool = Tool.from_schema("f", "", {"type": "object"})
    with pytest.raises(InvalidRequestError) as err:
        Request(model="m", tools=(tool, tool))
    assert err.value.location == "tools[1].name"
    with pytest.raises(RequestFileError) as err:
        parse_request({"model": "m", "tools": [{"name": "f"}, {"name": "f"}]})
    assert err.value.location == "$.tools[1].name"


def test_tool_choice_naming_a_missing_tool_is_refused():
    tool = Tool.from_schema("f", "", {"type": "object"})
    with pytest.raises(InvalidRequestError) as err:
        Request(model="m", tools=(tool,), params=Params(tool_choice=ToolChoiceName(name="g")))
    assert err.value.location == "params.toolChoice.name"
    with pytest.raises(RequestFileError) as err:
        parse_request(
            {"model": "m", "tools": [{"name": "f"}], "params": {"toolChoice": {"name": "g"}}}
        )
    assert err.value.location == "$.params.toolChoice.name"


def test_import_with_duplicate_tool_names_is_a_request_file_error():
    body = {
        "model": "m",
        "max_tokens": 5,
        "tools": [{"name": "f", "input_schema": {}}, {"name": "f", "input_schema": {}}],
        "messages": [{"role": "user", "content": "q"}],
    }
    with pytest.raises(RequestFileError, match="tools\\[1\\].name: a second tool is named 'f'"):
        get_provider("anthropic").import_body(body)


# --- files --------------------------------------------------------------------------------------


def test_read_json_file_refuses_a_directory_and_bad_paths(tmp_path):
    with pytest.raises(RequestFileError, match="it is a folder, not a regular file"):
        read_json_file(tmp_path)
    with pytest.raises(RequestFileError, match="expected a path"):
        load_request_file(None)  # type: ignore[arg-type]
    with pytest.raises(RequestFileError, match="cannot read the file"):
        read_json_file("a\x00b")


def test_get_provider_with_a_non_string_is_an_unknown_provider():
    with pytest.raises(UnknownProviderError, match="unknown provider \\[\\]"):
        get_provider([])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            {"type": "object"},
            "input_schema: expected the schema as JSON text (a str), not dict; "
            "Tool.from_schema(name, description, schema) takes a dict",
        ),
        (3, "input_schema: expected the schema as JSON text (a str), not int"),
        ("[1]", "input_schema: expected the JSON text of an object"),
    ],
)
def test_a_bad_tool_schema_from_python_names_the_python_argument(schema, message):
    with pytest.raises(InvalidRequestError) as err:
        Tool(name="f", description="", input_schema=schema)
    assert str(err.value) == message


def test_a_bad_tool_schema_in_a_request_file_names_the_file_key(tmp_path):
    from llmcore.errors import RequestFileError
    from llmcore.requestfile import load_request_file

    path = tmp_path / "request.json"
    path.write_text('{"model": "m", "tools": [{"name": "f", "inputSchema": [1]}]}')
    with pytest.raises(RequestFileError) as err:
        load_request_file(path)
    assert err.value.location == f"{path}: $.tools[0].inputSchema"
