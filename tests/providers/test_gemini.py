"""Gemini ``generateContent``: golden bodies, encoding rules, import, response and stream parsing."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from llmcore import jsonbytes
from llmcore.errors import (
    APIStatusError,
    FieldsNotSentWarning,
    ResponseParseError,
    UnsupportedContentError,
    UserError,
)
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import get_provider
from llmcore.providers._sse import iter_events
from llmcore.providers.base import EncodeCache
from llmcore.providers.gemini import (
    cached_content_body,
    create_cached_content,
    synthetic_id,
    vertex_base_url,
)
from llmcore.request import Params, Request, Tool, ToolChoiceName
from llmcore.transport import HTTPTransport, MissingAPIKeyError
from tests.golden import check_golden

P = get_provider("gemini")
GOLDEN = Path(__file__).parent / "golden" / "gemini"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
TOOL = Tool.from_schema("f", "Do f.", {"type": "object", "properties": {"x": {"type": "integer"}}})


def tool_loop(**params: object) -> Request:
    return Request(
        model="gemini-2.5-flash",
        system=("You are terse.", "", "Use tools."),
        tools=(TOOL, Tool.from_schema("g", "", {"type": "object"})),
        messages=(
            Message.user("run f and g", Image(data=PNG, mime_type="image/png")),
            Message.assistant(
                "Running both.",
                ToolCall(id="call_1", name="f", arguments=b'{"x": 1,  "k":"\xc3\xa9"}'),
                ToolCall(id=synthetic_id(1), name="g", arguments=b""),
            ),
            Message.tool(
                ToolResult(call_id="call_1", tool_name="f", content=b'{"value": 1}'),
                ToolResult(call_id=synthetic_id(1), tool_name="", content=b"boom", is_error=True),
            ),
            Message.assistant("f gave one; g failed."),
            Message.user("thanks \u00e9\u6f22"),
        ),
        params=Params(**params),  # type: ignore[arg-type]
    )


GOLDEN_CASES = {
    "tool-loop": lambda: tool_loop(
        max_tokens=256, temperature=0.2, top_p=0.9, stop_sequences=("END",)
    ),
    "tool-choice-name-extra": lambda: tool_loop(
        tool_choice=ToolChoiceName(name="f"),
        extra=(
            (
                "safetySettings",
                '[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]',
            ),
        ),
    ),
    "cached-content": lambda: tool_loop(
        tool_choice="none", extra=(("cachedContent", '"cachedContents/abc123"'),)
    ),
}


NOT_SENT = (
    "params.extra.cachedContent: the request names a cache, so the body leaves out its system"
    " prompt (systemInstruction), tools (tools) and tool choice (toolConfig) (the cache holds"
    " them; Gemini refuses them beside a cachedContent)"
)


def _build_naming_a_cache(request: Request) -> bytes:
    with pytest.warns(FieldsNotSentWarning) as caught:
        raw = P.build_body(request)
    assert [str(w.message) for w in caught] == [NOT_SENT]
    return raw


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_bodies(name: str) -> None:
    request = GOLDEN_CASES[name]()
    raw = _build_naming_a_cache(request) if name == "cached-content" else P.build_body(request)
    check_golden(GOLDEN / f"{name}.json", raw)
    assert b"null" not in raw


def test_naming_a_cache_warns_once_per_conversation() -> None:
    request = GOLDEN_CASES["cached-content"]()
    cache = EncodeCache()
    with pytest.warns(FieldsNotSentWarning) as caught:
        first = P.build_body(request, cache=cache)
        longer = (*request.messages, Message.assistant("ok"), Message.user("again"))
        second = P.build_body(dataclasses.replace(request, messages=longer), cache=cache)
    assert [str(w.message) for w in caught] == [NOT_SENT]  # the second request says nothing
    assert caught[0].filename == __file__  # it points at the caller of build_body
    assert b"systemInstruction" not in first + second
    with pytest.warns(FieldsNotSentWarning) as caught:
        P.build_body(request, cache=copy.copy(cache))  # a copy remembers it was said: nothing
        P.build_body(request, cache=EncodeCache())  # another conversation is told
        P.build_body(request)  # without a cache, every build says it
        P.build_body(request)
    assert [str(w.message) for w in caught] == [NOT_SENT] * 3


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"system": ()}, "its tools (tools) and tool choice (toolConfig)"),
        ({"system": (), "tools": ()}, "its tool choice (toolConfig)"),
    ],
)
def test_the_warning_names_what_is_left_out(changes: dict[str, object], said: str) -> None:
    request = dataclasses.replace(GOLDEN_CASES["cached-content"](), **changes)
    if not request.tools:
        request = dataclasses.replace(request, messages=(Message.user("q"),))
    with pytest.warns(FieldsNotSentWarning, match=rf"leaves out {re.escape(said)} \(the cache"):
        P.build_body(request)


def test_naming_a_cache_with_nothing_to_leave_out_says_nothing() -> None:
    extra = (("cachedContent", '"cachedContents/abc123"'),)
    request = Request(model="gemini-2.5-flash", messages=(Message.user("q"),))
    raw = P.build_body(dataclasses.replace(request, params=Params(extra=extra)))
    assert json.loads(raw) == {
        "contents": [{"role": "user", "parts": [{"text": "q"}]}],
        "cachedContent": "cachedContents/abc123",
    }


def test_body_shape_and_documented_mappings() -> None:
    raw = P.build_body(GOLDEN_CASES["tool-loop"]())
    body = json.loads(raw)
    assert list(body) == ["contents", "systemInstruction", "tools", "generationConfig"]
    assert body["systemInstruction"] == {
        "parts": [{"text": "You are terse."}, {"text": "Use tools."}]
    }
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user", "model", "user"]
    assert body["contents"][0]["parts"][1] == {
        "inlineData": {
            "mimeType": "image/png",
            "data": "iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        }
    }
    calls = body["contents"][1]["parts"]
    assert calls[1] == {"functionCall": {"id": "call_1", "name": "f", "args": {"x": 1, "k": "é"}}}
    assert calls[2] == {"functionCall": {"name": "g", "args": {}}}  # a made-up id is not sent
    results = body["contents"][2]["parts"]
    assert results[0] == {
        "functionResponse": {"id": "call_1", "name": "f", "response": {"value": 1}}
    }
    assert results[1] == {"functionResponse": {"name": "g", "response": {"error": "boom"}}}
    assert body["generationConfig"] == {
        "temperature": 0.2,
        "topP": 0.9,
        "maxOutputTokens": 256,
        "stopSequences": ["END"],
    }
    assert b'"args":{"x": 1,  "k":"\xc3\xa9"}' in raw  # the stored bytes, spliced (P2)


def test_a_request_naming_a_cache_sends_no_system_tools_or_tool_config() -> None:
    body = json.loads(_build_naming_a_cache(GOLDEN_CASES["cached-content"]()))
    assert list(body) == ["contents", "cachedContent"]
    assert body["cachedContent"] == "cachedContents/abc123"


def test_output_object_results_are_wrapped_so_import_reads_them_back() -> None:
    request = dataclasses.replace(
        tool_loop(),
        messages=(
            Message.user("x"),
            Message.assistant(ToolCall(id="a", name="f", arguments=b"{}")),
            Message.tool(ToolResult(call_id="a", tool_name="f", content=b'{"output":"hi"}')),
        ),
    )
    raw = P.build_body(request)
    assert b'{"output":"{\\"output\\":\\"hi\\"}"}' in raw
    back = P.import_body({"model": "gemini-2.5-flash", **json.loads(raw)}, raw=raw).request
    assert back.messages[2].content[0].content == b'{"output":"hi"}'


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_import_rebuilds_every_golden_byte_for_byte(name: str) -> None:
    raw = (GOLDEN / f"{name}.json").read_bytes()
    result = P.import_body({"model": "models/gemini-2.5-flash", **json.loads(raw)}, raw=raw)
    assert result.request.model == "gemini-2.5-flash"
    assert P.build_body(result.request) == raw


def test_import_pairs_id_less_responses_by_name_and_drops_thoughts() -> None:
    body = {
        "model": "gemini-2.5-pro",
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "plan", "thought": True},
                    {"functionCall": {"name": "f", "args": {"x": 2}}, "thoughtSignature": "c2ln"},
                ],
            },
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "f", "response": {"output": "2"}}}],
            },
        ],
    }
    result = P.import_body(body)
    call = result.request.messages[1].content[0]
    assert call == ToolCall(id=synthetic_id(0), name="f", arguments=b'{"x":2}')
    assert result.request.messages[2].content[0] == ToolResult(
        call_id=synthetic_id(0), tool_name="f", content=b"2"
    )
    assert len(result.notes) == 2 and all("M4" in n for n in result.notes)


def test_import_refuses_parts_outside_the_four_cases() -> None:
    body = {"model": "m", "contents": [{"role": "user", "parts": [{"fileData": {"fileUri": "x"}}]}]}
    with pytest.raises(UnsupportedContentError, match="fileData"):
        P.import_body(body)


RESPONSE = (
    b'{"candidates":[{"content":{"role":"model","parts":[{"text":"Hi "},{"text":"there"},'
    b'{"functionCall":{"name":"f","args":{"x" : 1}},"thoughtSignature":"c2ln"}]},'
    b'"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":100,'
    b'"cachedContentTokenCount":40,"candidatesTokenCount":5,"thoughtsTokenCount":7,'
    b'"totalTokenCount":112},"modelVersion":"gemini-2.5-flash","responseId":"r1"}'
)


def test_response_parsing_usage_and_carry() -> None:
    parsed = P.parse_response(RESPONSE)
    assert parsed.content == (
        Text(text="Hi there"),
        ToolCall(id=synthetic_id(0), name="f", arguments=b'{"x" : 1}'),
    )
    assert parsed.stop_reason == "tool_use" and parsed.raw_stop_reason == "STOP"
    assert (parsed.usage.input, parsed.usage.cache_read, parsed.usage.output) == (60, 40, 12)
    assert parsed.carry == (
        '{"text":"Hi "}',
        '{"text":"there"}',
        '{"functionCall":{"name":"f","args":{"x" : 1}},"thoughtSignature":"c2ln"}',
    )
    assert (parsed.model, parsed.response_id) == ("gemini-2.5-flash", "r1")


def test_carry_replaces_the_message_parts_within_the_turn() -> None:
    parsed = P.parse_response(RESPONSE)
    request = Request(
        model="gemini-2.5-flash",
        messages=(
            Message.user("x"),
            Message.assistant(*parsed.content),
            Message.tool(ToolResult(call_id=synthetic_id(0), tool_name="f", content=b"1")),
        ),
    )
    with_carry = P.build_body(request, carry={1: parsed.carry})
    assert b'"thoughtSignature":"c2ln"' in with_carry
    assert b"thoughtSignature" not in P.build_body(request)


def test_stream_parsing() -> None:
    stream = (
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}]}\r\n\r\n'
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"lo"},'
        b'{"functionCall":{"id":"c9","name":"f","args":{"a":[1, 2]}}}]},"finishReason":"STOP"}],'
        b'"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":3}}\r\n\r\n'
    )
    parser = P.stream_parser()
    for event in iter_events([stream], "gemini"):
        parser.feed(event)
    parsed = parser.finish()
    assert parsed.content == (
        Text(text="Hello"),
        ToolCall(id="c9", name="f", arguments=b'{"a":[1, 2]}'),
    )
    assert (parsed.usage.input, parsed.usage.output) == (9, 3)
    truncated = P.stream_parser()
    for event in iter_events([stream.split(b"\r\n\r\n")[0] + b"\r\n\r\n"], "gemini"):
        truncated.feed(event)
    with pytest.raises(ResponseParseError, match="truncated"):
        truncated.finish()


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("MAX_TOKENS", "max_tokens"),
        ("SAFETY", "refusal"),
        ("RECITATION", "refusal"),
        ("OTHER", "other"),
    ],
)
def test_finish_reasons(reason: str, stop: str) -> None:
    body = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]}
    assert P.parse_response(jsonbytes.dumps(body)).stop_reason == stop


def test_errors_in_gemini_shape() -> None:
    body = b'{"error":{"code":400,"message":"Bad role","status":"INVALID_ARGUMENT"}}'
    error = P.parse_error(400, body, {"x-request-id": "q"})
    assert (error.status, error.error_type) == (400, "INVALID_ARGUMENT")
    assert error.message == "gemini answered HTTP 400 INVALID_ARGUMENT: Bad role (request id q)"
    with pytest.raises(APIStatusError) as raised:
        P.parse_response(b'{"error":{"code":429,"message":"slow","status":"RESOURCE_EXHAUSTED"}}')
    assert raised.value.status == 429
    assert P.parse_error(500, b"not json", {}).status == 500


def _recording_client(seen: list[httpx.Request], answer: bytes) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=answer, headers={"content-type": "application/json"})

    return httpx.Client(transport=httpx.MockTransport(handler))


def test_transport_urls_keys_and_vertex_bearer() -> None:
    seen: list[httpx.Request] = []
    request = tool_loop()
    body = P.build_body(request)
    with _recording_client(seen, RESPONSE) as client:
        studio = HTTPTransport(client=client, environ={"GOOGLE_API_KEY": "g-key"})
        studio.send(P, body, model=request.model)
        studio.send(P, body, model=request.model, stream=True)
        vertex = HTTPTransport(
            client=client,
            base_urls={"gemini": vertex_base_url("proj", "us-central1")},
            environ={"GOOGLE_OAUTH_ACCESS_TOKEN": "ya29.token"},
        )
        vertex.send(P, body, model="gemini-2.5-pro")
        with pytest.raises(UserError, match="model"):
            studio.send(P, body)
    assert str(seen[0].url) == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert seen[0].headers["x-goog-api-key"] == "g-key" and seen[0].content == body
    assert str(seen[1].url).endswith("/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
    assert str(seen[2].url) == (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1"
        "/publishers/google/models/gemini-2.5-pro:generateContent"
    )
    assert seen[2].headers["authorization"] == "Bearer ya29.token"
    assert "x-goog-api-key" not in seen[2].headers
    with pytest.raises(MissingAPIKeyError):
        HTTPTransport(environ={}).send(P, body, model="gemini-2.5-flash")


def test_cached_content_body_and_create_call() -> None:
    request = tool_loop(tool_choice="auto")
    body = json.loads(cached_content_body(request, ttl_seconds=600))
    assert list(body) == ["model", "systemInstruction", "tools", "toolConfig", "ttl"]
    assert body["model"] == "models/gemini-2.5-flash" and body["ttl"] == "600s"
    seen: list[httpx.Request] = []
    with _recording_client(
        seen, b'{"name":"cachedContents/xyz","model":"models/gemini-2.5-flash"}'
    ) as client:
        name = create_cached_content(request, api_key="k", client=client, environ={})
    assert name == "cachedContents/xyz"
    assert str(seen[0].url) == "https://generativelanguage.googleapis.com/v1beta/cachedContents"
    assert json.loads(seen[0].content)["ttl"] == "3600s"


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-c", "from llmcore.cli import main; main()", *args]
    return subprocess.run(command, capture_output=True, check=False)


def test_cli_body_and_import_round_trip(tmp_path: Path) -> None:
    raw = (GOLDEN / "tool-loop.json").read_bytes()
    recorded = tmp_path / "body.json"
    recorded.write_bytes(raw)
    case = tmp_path / "case.json"  # a corpus case: the model comes from meta.uri
    uri = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    case.write_bytes(b'{"request": ' + raw + b', "meta": {"uri": "' + uri.encode() + b'"}}')
    for source, extra in ((recorded, ["--model", "gemini-2.5-flash"]), (case, [])):
        imported = _cli("import", str(source), "-p", "gemini", *extra)
        assert imported.returncode == 0, imported.stderr
        request = tmp_path / "request.json"
        request.write_bytes(imported.stdout)
        rebuilt = _cli("body", str(request), "-p", "gemini")
        assert rebuilt.stdout == raw, source.name
    missing = _cli("import", str(recorded), "-p", "gemini")
    assert missing.returncode == 2 and b"pass --model" in missing.stderr


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("systemInstruction", {"parts": [{"text": "s"}]}),
        ("system_instruction", {"parts": [{"text": "s"}]}),
        ("tools", [{"functionDeclarations": [{"name": "f"}]}]),
        ("toolConfig", {"functionCallingConfig": {"mode": "NONE"}}),
    ],
)
def test_import_refuses_a_cached_content_beside_what_the_cache_holds(field, value):
    # Gemini (and the emulator) refuse such a body; before, the import took it and the body
    # built from it left the field out, with no note at the import.
    contents = [{"role": "user", "parts": [{"text": "a"}]}]
    body = {"model": "gemini-2.5-flash", "contents": contents, "cachedContent": "cachedContents/x"}
    with pytest.raises(UserError) as caught:
        P.import_body({**body, field: value})
    camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), field)
    assert caught.value.location == f"$.{camel}"
    assert "CachedContent can not be used" in str(caught.value)
    from llmcore.emulator.gemini_validate import validate_gemini

    del body["model"]
    with pytest.raises(Exception, match="CachedContent can not be used"):
        validate_gemini({**body, field: value})
