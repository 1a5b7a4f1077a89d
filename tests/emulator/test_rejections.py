"""Requests the real APIs refuse, refused with their error shapes (PROVIDER-RULES §1.7, §1.10, §2.3)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.emulator.helpers import SONNET, Api

USE = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}


def anthropic(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": SONNET, "max_tokens": 64, "messages": messages, **extra}


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def anthropic_error(response: httpx.Response) -> str:
    assert response.status_code == 400
    data = response.json()
    assert list(data) == ["type", "error", "request_id"]
    assert data["type"] == "error"
    assert data["error"]["type"] == "invalid_request_error"
    assert data["request_id"] == response.headers["request-id"]
    message: str = data["error"]["message"]
    return message


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            anthropic([user(text("hi"))], foo=1),
            "foo: Extra inputs are not permitted",
        ),
        ({"model": SONNET, "messages": [user(text("hi"))]}, "max_tokens: Field required"),
        (anthropic([user(text(""))]), "messages: text content blocks must be non-empty"),
        (
            anthropic([user(text("hi"))], system=[text("")]),
            "system: text content blocks must be non-empty",
        ),
        (
            anthropic([user(text(" \n"))]),
            "messages: text content blocks must contain non-whitespace text",
        ),
        (
            anthropic([user(text("hi")), assistant(USE), user(text("next"))]),
            "messages.1: `tool_use` ids were found without `tool_result` blocks immediately "
            "after: toolu_1. Each `tool_use` block must have a corresponding `tool_result` "
            "block in the next message.",
        ),
        (
            anthropic([user(text("hi")), assistant(text("ok")), user(RESULT)]),
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
            "toolu_1. Each `tool_result` block must have a corresponding `tool_use` block in "
            "the previous message.",
        ),
        (
            anthropic([{"role": "user", "content": []}]),
            "messages.0: all messages must have non-empty content except for the optional "
            "final assistant message",
        ),
        (
            anthropic([{"role": "system", "content": "x"}]),
            "messages.0.role: Input should be 'user' or 'assistant'",
        ),
        (anthropic([]), "messages: at least one message is required"),
        (
            anthropic([user({"type": "text", "text": "hi", "cache_control": {"type": "x"}})]),
            "messages.0.content.0.cache_control.type: Input should be 'ephemeral'",
        ),
    ],
)
def test_anthropic_rejections(api: Api, body: dict[str, Any], message: str) -> None:
    assert anthropic_error(api.messages(body)) == message


def test_anthropic_tool_pairing_accepted_when_answered(api: Api) -> None:
    body = anthropic([user(text("hi")), assistant(USE), user(RESULT, text("go on"))])
    assert api.messages(body).status_code == 200


def test_anthropic_requires_the_version_header(api: Api) -> None:
    response = api.client.post(
        api.emu.base_url + "/v1/messages", json=anthropic([user(text("hi"))])
    )
    assert anthropic_error(response) == "anthropic-version: header is required"


def test_anthropic_invalid_json(api: Api) -> None:
    response = api.client.post(
        api.emu.base_url + "/v1/messages",
        content=b'{"model":',
        headers={"anthropic-version": "2023-06-01"},
    )
    assert anthropic_error(response) == "There was an error parsing the body"


def openai_error(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 400
    data = response.json()
    assert list(data) == ["error"]
    assert list(data["error"]) == ["message", "type", "param", "code"]
    assert data["error"]["type"] == "invalid_request_error"
    assert response.headers["x-request-id"].startswith("req_")
    error: dict[str, Any] = data["error"]
    return error


CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "foo": 1},
            {"message": "Unrecognized request argument supplied: foo", "param": None, "code": None},
        ),
        (
            {"messages": [{"role": "user", "content": "hi"}]},
            {"message": "you must provide a model parameter", "param": None, "code": None},
        ),
        (
            {
                "model": "gpt-4o",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": None, "tool_calls": [CALL]},
                    {"role": "user", "content": "next"},
                ],
            },
            {
                "message": "An assistant message with 'tool_calls' must be followed by tool "
                "messages responding to each 'tool_call_id'. The following tool_call_ids did "
                "not have response messages: call_1",
                "param": "messages.[1].role",
                "code": None,
            },
        ),
        (
            {
                "model": "gpt-4o",
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "tool", "tool_call_id": "call_9", "content": "x"},
                ],
            },
            {
                "message": "Invalid parameter: messages with role 'tool' must be a response to "
                "a preceeding message with 'tool_calls'.",
                "param": "messages.[1].role",
                "code": None,
            },
        ),
        (
            {"model": "gpt-4o", "messages": []},
            {
                "message": "Invalid 'messages': empty array. Expected an array with minimum "
                "length 1, but got an empty array instead.",
                "param": "messages",
                "code": "empty_array",
            },
        ),
    ],
)
def test_chat_rejections(api: Api, body: dict[str, Any], expected: dict[str, Any]) -> None:
    error = openai_error(api.chat(body))
    assert {key: error[key] for key in expected} == expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"model": "gpt-4o", "input": "hi", "foo": 1},
            {"message": "Unknown parameter: 'foo'.", "param": "foo", "code": "unknown_parameter"},
        ),
        (
            {
                "model": "gpt-4o",
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
                ],
            },
            {"message": "No tool output found for function call call_1.", "param": "input"},
        ),
        (
            {
                "model": "gpt-4o",
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "function_call_output", "call_id": "call_2", "output": "x"},
                ],
            },
            {
                "message": "No tool call found for function call output with call_id call_2.",
                "param": "input",
            },
        ),
        (
            {
                "model": "gpt-4o",
                "input": [
                    {"role": "user", "content": "hi"},
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                ],
            },
            {
                "message": "Item 'rs_1' of type 'reasoning' was provided without its required "
                "following item.",
                "param": "input",
            },
        ),
    ],
)
def test_responses_rejections(api: Api, body: dict[str, Any], expected: dict[str, Any]) -> None:
    error = openai_error(api.responses(body))
    assert {key: error[key] for key in expected} == expected
