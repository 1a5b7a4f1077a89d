"""Bad input the emulator must answer in the provider's error shape (4xx), never crash on.

Each case is a tester's input that once gave HTTP 500 or a traceback: a JSON ``type`` that is a
list (a nullable field in a tool schema), lone surrogate escapes, deep nesting, scripts holding
either, and out-of-range ports.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from llmcore.cli.emulate import emulate_command
from llmcore.emulator import Rejection, ScriptError, parse_script
from llmcore.emulator.engine import Engine
from llmcore.emulator.script import MAX_ARGUMENT_DEPTH
from tests.emulator.helpers import ANTHROPIC_HEADERS, OPENAI_HEADERS, SONNET, Api

NULLABLE = {"type": "object", "properties": {"note": {"type": ["string", "null"]}}}


def _anthropic(**extra: Any) -> dict[str, Any]:
    return {
        "model": SONNET,
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "hi"}],
        **extra,
    }


def test_nullable_type_in_an_anthropic_tool_schema_is_answered(api: Api) -> None:
    tool = {"name": "note", "description": "d", "input_schema": NULLABLE}
    response = api.messages(_anthropic(tools=[tool]))
    assert response.status_code == 200, response.text
    assert response.json()["type"] == "message"


def test_nullable_type_in_a_chat_tool_schema_is_answered(api: Api) -> None:
    tool = {"type": "function", "function": {"name": "note", "parameters": NULLABLE}}
    body = {"model": "gpt-4o", "tools": [tool], "messages": [{"role": "user", "content": "hi"}]}
    response = api.chat(body)
    assert response.status_code == 200, response.text
    assert response.json()["object"] == "chat.completion"


def test_nullable_type_in_a_responses_tool_schema_is_answered(api: Api) -> None:
    tool = {"type": "function", "name": "note", "parameters": NULLABLE}
    response = api.responses({"model": "gpt-4o", "tools": [tool], "input": "hi"})
    assert response.status_code == 200, response.text
    assert response.json()["object"] == "response"


def test_a_list_valued_block_type_is_a_400_not_a_500(api: Api) -> None:
    body = _anthropic(messages=[{"role": "user", "content": [{"type": ["image"], "text": "x"}]}])
    response = api.messages(body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def _post(api: Api, path: str, raw: bytes, headers: dict[str, str]) -> httpx.Response:
    return api.client.post(api.emu.base_url + path, content=raw, headers=headers)


def test_a_lone_surrogate_in_message_text_is_a_400_naming_the_path(api: Api) -> None:
    raw = (
        b'{"model":"claude-sonnet-4-5","max_tokens":10,'
        b'"messages":[{"role":"user","content":"a\\ud800b"}]}'
    )
    response = _post(api, "/v1/messages", raw, ANTHROPIC_HEADERS)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"] == (
        "There was an error parsing the body: messages.0.content: "
        "lone surrogate \\ud800 is not valid Unicode"
    )


def test_a_lone_surrogate_in_openai_requests_is_a_400_with_param(api: Api) -> None:
    chat = b'{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"text","text":"\\udc00"}]}]}'
    response = _post(api, "/v1/chat/completions", chat, OPENAI_HEADERS)
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages[0].content[0].text"
    responses = b'{"model":"gpt-4o","input":"x\\ud83d"}'
    response = _post(api, "/v1/responses", responses, OPENAI_HEADERS)
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "Invalid 'input': lone surrogate \\ud83d is not valid Unicode.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


def test_paired_surrogates_and_escaped_backslashes_are_accepted(api: Api) -> None:
    raw = b'{"model":"gpt-4o","input":"\\ud83d\\ude00 and \\\\ud800 as text"}'
    response = _post(api, "/v1/responses", raw, OPENAI_HEADERS)
    assert response.status_code == 200, response.text


DEEP = b"[" * 700 + b"]" * 700


@pytest.mark.parametrize(
    ("path", "raw", "headers"),
    [
        (
            "/v1/messages",
            b'{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user",'
            b'"content":[{"type":"tool_use","id":"t","name":"n","input":{"a":' + DEEP + b"}}]}]}",
            ANTHROPIC_HEADERS,
        ),
        (
            "/v1/chat/completions",
            b'{"model":"gpt-4o","messages":[{"role":"user","content":"x","z":' + DEEP + b"}]}",
            OPENAI_HEADERS,
        ),
        (
            "/v1/responses",
            b'{"model":"gpt-4o","input":[{"role":"user","content":"x","z":' + DEEP + b"}]}",
            OPENAI_HEADERS,
        ),
        (
            "/v1/chat/completions",
            b'{"model":"gpt-4o","messages":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            OPENAI_HEADERS,
        ),
    ],
)
def test_deeply_nested_requests_are_a_400(
    api: Api, path: str, raw: bytes, headers: dict[str, str]
) -> None:
    response = _post(api, path, raw, headers)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].endswith("(the JSON is nested too deeply)")


def test_engine_refuses_deep_nesting_without_committing() -> None:
    engine = Engine()
    raw = b'{"model":"gpt-4o","input":[{"role":"user","content":"x","z":' + DEEP + b"}]}"
    with pytest.raises(Rejection) as info:
        engine.responses(raw, "org")
    assert info.value.status == 400
    assert info.value.message == (
        "We could not parse the JSON body of your request. (the JSON is nested too deeply)"
    )
    assert engine.responses(b'{"model":"gpt-4o","input":"hi"}', "org").body.startswith(b"{")


@pytest.mark.parametrize(
    ("script", "location", "message"),
    [
        ('[{"text": "\\ud800"}]', "s.json: $[0].text", "lone surrogate \\ud800 at character 0"),
        (
            '[{"tool_calls": [{"name": "t", "arguments": "{\\"a\\": \\"\\\\ud800\\"}"}]}]',
            "s.json: $[0].tool_calls[0].arguments",
            "lone surrogate",
        ),
        (
            '{"conversations": [{"match": "\\udfff", "replies": []}]}',
            "s.json: $.conversations[0].match",
            "lone surrogate \\udfff",
        ),
        ("[" * 100_000 + "]" * 100_000, "s.json", "nested too deeply"),
        (
            '[{"tool_calls": [{"name": "t", "arguments": {"a": ' + "[" * 700 + "]" * 700 + "}}]}]",
            "s.json: $[0].tool_calls[0].arguments",
            f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels",
        ),
        (
            '[{"tool_calls": [{"name": "t", "arguments": "{\\"a\\": '
            + "[" * 700
            + "]" * 700
            + '}"}]}]',
            "s.json: $[0].tool_calls[0].arguments",
            f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels",
        ),
    ],
)
def test_bad_scripts_are_refused_with_their_path(script: str, location: str, message: str) -> None:
    with pytest.raises(ScriptError) as info:
        parse_script(script.encode("utf-8"), "s.json")
    assert info.value.location == location
    assert message in info.value.message


def test_a_script_escape_that_is_not_a_surrogate_is_fine() -> None:
    script = parse_script(b'[{"text": "\\\\ud800 is how you write it"}]', "s.json")
    assert script.replies[0].text == "\\ud800 is how you write it"


@pytest.mark.parametrize("port", [-1, 70000])
def test_emulate_refuses_an_out_of_range_port_in_one_line(
    port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert emulate_command(port) == 2
    err = capsys.readouterr().err
    assert err == f"llmcore: --port {port} is out of range (0 to 65535; 0 picks a free port)\n"


def test_emulate_reports_a_bad_script_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "s.json"
    bad.write_bytes(b'[{"text": "\\ud800"}]')
    assert emulate_command(0, bad) == 2
    err = capsys.readouterr().err
    assert err == (
        f"llmcore: {bad}: $[0].text: lone surrogate \\ud800 at character 0 is not valid Unicode\n"
    )
