"""Bedrock Converse: golden bodies, the cache-point policy, roles, import, responses, errors."""

import json
from pathlib import Path

import pytest

from llmcore import (
    Image,
    Message,
    Params,
    Request,
    Text,
    Tool,
    ToolCall,
    ToolChoiceName,
    ToolResult,
)
from llmcore.errors import (
    APIStatusError,
    InvalidRequestError,
    RequestFileError,
    ResponseParseError,
    UnsupportedContentError,
)
from llmcore.providers import get_provider
from llmcore.providers._sse import SSEEvent
from llmcore.providers.base import EncodeCache
from llmcore.providers.bedrock_converse import wire_id
from llmcore.requestfile import load_request_file
from tests.golden import check_golden

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "bedrock-converse"
P = get_provider("bedrock-converse")
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
NOVA = "amazon.nova-pro-v1:0"
TOOL = Tool.from_schema("f", "does f", {"type": "object", "properties": {"x": {"type": "integer"}}})
POINT = {"cachePoint": {"type": "default"}}


def body(request, **kw):
    return json.loads(P.build_body(request, **kw))


def _from_example(name: str, model: str = CLAUDE, **params) -> Request:
    base = load_request_file(ROOT / "examples" / f"{name}.json")
    return Request(
        model=model,
        system=base.system,
        tools=base.tools,
        messages=base.messages,
        params=Params(**params) if params else base.params,
    )


@pytest.mark.parametrize("name", ["tool-loop", "image", "long-history"])
def test_examples_match_golden_bodies(name):
    check_golden(GOLDEN / f"{name}.json", P.build_body(_from_example(name)))


def test_golden_variants():
    variants = {
        "nova": _from_example("tool-loop", NOVA),
        "off-sampling": _from_example(
            "tool-loop",
            cache_mode="off",
            temperature=0.5,
            top_p=0.9,
            stop_sequences=("END",),
            max_tokens=100,
        ),
        "tool-choice-name-1h-extra": _from_example(
            "tool-loop",
            tool_choice=ToolChoiceName(name="read_file"),
            cache_ttl="1h",
            extra=(("additionalModelRequestFields", '{"top_k":5}'),),
        ),
    }
    for suffix, request in variants.items():
        check_golden(GOLDEN / f"tool-loop-{suffix}.json", P.build_body(request))


def _history():
    return (
        Message.user("q1"),
        Message.assistant("a1", ToolCall(id="t1", name="f", arguments=b'{"x": 1}')),
        Message.tool(ToolResult(call_id="t1", tool_name="f", content=b"r1", is_error=True)),
        Message.user(Image(data=b"\x89PNG\r\n\x1a\n" + bytes(24), mime_type="image/png")),
        Message.assistant("done"),
        Message.user("q2"),
    )


def test_cache_points_follow_p3_and_roles_alternate():
    raw = P.build_body(
        Request(model=CLAUDE, system=("s1", "s2"), tools=(TOOL,), messages=_history())
    )
    assert CLAUDE.encode() not in raw  # the model goes in the URL
    b = json.loads(raw)
    assert list(b) == ["messages", "system", "toolConfig"]
    assert b["system"] == [{"text": "s1"}, {"text": "s2"}, POINT]
    assert b["toolConfig"]["tools"][-1] == POINT
    roles = [m["role"] for m in b["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    joined = b["messages"][2]["content"]
    assert joined[0] == {
        "toolResult": {"toolUseId": "t1", "content": [{"text": "r1"}], "status": "error"}
    }
    assert joined[1]["image"]["format"] == "png" and joined[-1] == POINT
    assert b["messages"][4]["content"] == [{"text": "q2"}, POINT]
    assert b'"input":{"x": 1}' in raw  # the stored argument bytes, spliced (P2)
    assert raw.count(b"cachePoint") == 4


def test_nova_caches_no_tools_and_other_models_get_no_cache_points():
    nova = body(Request(model=NOVA, system=("s",), tools=(TOOL,), messages=_history()))
    assert POINT not in nova["toolConfig"]["tools"] and nova["system"][-1] == POINT
    llama = P.build_body(
        Request(model="meta.llama3-70b-instruct-v1:0", system=("s",), messages=_history())
    )
    assert b"cachePoint" not in llama


def test_automatic_mode_marks_only_the_newest_message_and_1h_ttl():
    params = Params(cache_mode="automatic", cache_ttl="1h")
    raw = P.build_body(Request(model=CLAUDE, system=("s",), messages=_history(), params=params))
    assert raw.count(b"cachePoint") == 1
    assert json.loads(raw)["messages"][-1]["content"][-1] == {
        "cachePoint": {"type": "default", "ttl": "1h"}
    }


def test_cached_build_equals_cold_and_reencodes_only_moved_runs():
    cache = EncodeCache()
    history = _history()
    for end in (1, 4, 6):
        request = Request(model=CLAUDE, messages=history[:end])
        assert P.build_body(request, cache=cache) == P.build_body(request)
    assert cache.misses <= 6 + 4


def test_tool_choice_none_and_ids():
    request = Request(
        model=CLAUDE,
        tools=(TOOL,),
        messages=(Message.user("x"),),
        params=Params(tool_choice="none"),
    )
    with pytest.raises(InvalidRequestError, match="'none' has no Converse form"):
        P.build_body(request)
    assert wire_id("call_1.a:b-c") == "call_1.a:b-c"
    rewritten = wire_id("x" * 80)
    assert len(rewritten) == 64 and rewritten == wire_id("x" * 80)
    assert wire_id("bad id!") != "bad id!"


def test_import_rebuilds_the_same_bytes_and_drops_reasoning():
    raw = P.build_body(Request(model=CLAUDE, system=("s",), tools=(TOOL,), messages=_history()))
    obj = json.loads(raw)
    obj["messages"][1]["content"].insert(
        0, {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "sig"}}}
    )
    result = P.import_body({**obj, "modelId": CLAUDE}, raw=json.dumps(obj).encode())
    assert P.build_body(result.request) == raw
    assert result.notes == (
        "$.messages[1].content[0]: dropped a reasoningContent block (provider-only data, M4)",
    )


def test_import_errors_name_the_place():
    with pytest.raises(RequestFileError, match="modelId"):
        P.import_body({"messages": []})
    bad = {"modelId": CLAUDE, "messages": [{"role": "user", "content": [{"document": {}}]}]}
    with pytest.raises(UnsupportedContentError, match="document"):
        P.import_body(bad)


def _wire(role: str, *blocks: dict[str, object]) -> dict[str, object]:
    return {"role": role, "content": list(blocks)}


USE = {"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}
RESULT = {"toolResult": {"toolUseId": "t1", "content": [{"text": "r"}]}}


@pytest.mark.parametrize(
    ("messages", "where", "role"),
    [
        ([_wire("user", {"text": "a"}), _wire("user", {"text": "b"})], 1, "user"),
        (
            [_wire("user", {"text": "a"}), _wire("assistant", {"text": "b"})]
            + [_wire("assistant", {"text": "c"})],
            2,
            "assistant",
        ),
        (  # a toolResult turn then a text turn: both are user messages on the wire
            [_wire("user", {"text": "a"}), _wire("assistant", USE), _wire("user", RESULT)]
            + [_wire("user", {"text": "b"})],
            3,
            "user",
        ),
    ],
)
def test_import_refuses_roles_that_do_not_alternate(messages, where, role):
    body = {"modelId": CLAUDE, "messages": messages, "toolConfig": {"tools": []}}
    with pytest.raises(RequestFileError) as caught:
        P.import_body(body)
    assert caught.value.location == f"$.messages[{where}].role"
    assert str(caught.value) == (
        f"$.messages[{where}].role: {role!r} follows {role!r} (messages[{where - 1}]): Converse"
        " roles must alternate between user and assistant (Bedrock refuses the body with a"
        " ValidationException)"
    )


def test_import_takes_a_conversation_that_starts_with_the_assistant():
    # Recorded traffic: Bedrock answered 200 to such a body for Claude (corpus case 0018,
    # pydantic-ai's test_bedrock_anthropic_message_history_starting_with_response); refusing it
    # as "Bedrock refuses it" failed that case.
    messages = [_wire("assistant", {"text": "a"}), _wire("user", {"text": "b"})]
    result = P.import_body({"modelId": CLAUDE, "messages": messages})
    assert [m.role for m in result.request.messages] == ["assistant", "user"]


def test_import_of_alternating_roles_with_tool_results_rebuilds_the_bytes():
    messages = [_wire("user", {"text": "a"}), _wire("assistant", USE), _wire("user", RESULT)]
    body = {"messages": messages, "toolConfig": {"tools": [{"toolSpec": {"name": "f"}}]}}
    result = P.import_body({**body, "modelId": CLAUDE})
    rebuilt = json.loads(P.build_body(result.request))
    assert [m["role"] for m in rebuilt["messages"]] == ["user", "assistant", "user"]


RESPONSE = (
    b'{"output":{"message":{"role":"assistant","content":[{"reasoningContent":'
    b'{"reasoningText":{"text":"t","signature":"s"}}},{"text":"Hi"},'
    b'{"toolUse":{"toolUseId":"tooluse_1","name":"f","input":{ "x" :1 }}}]}},'
    b'"stopReason":"tool_use","usage":{"inputTokens":3,"outputTokens":5,"totalTokens":1508,'
    b'"cacheReadInputTokens":1000,"cacheWriteInputTokens":500},"metrics":{"latencyMs":9}}'
)


def test_parse_response_keeps_argument_bytes_and_usage():
    parsed = P.parse_response(RESPONSE)
    assert parsed.content == (
        Text(text="Hi"),
        ToolCall(id="tooluse_1", name="f", arguments=b'{ "x" :1 }'),
    )
    assert (parsed.usage.input, parsed.usage.cache_read, parsed.usage.cache_write) == (3, 1000, 500)
    assert parsed.usage.output == 5 and parsed.stop_reason == "tool_use"
    assert parsed.notes == (
        "$.output.message.content[0]: left out a reasoningContent block (provider-only, M4)",
    )


def _events(*pairs):
    return [SSEEvent(event=name, data=json.dumps(data), id="event") for name, data in pairs]


def test_stream_parser_joins_deltas():
    parser = P.stream_parser()
    for event in _events(
        ("messageStart", {"role": "assistant", "p": "abc"}),
        ("contentBlockDelta", {"delta": {"text": "Hel"}, "contentBlockIndex": 0}),
        ("contentBlockDelta", {"delta": {"text": "lo"}, "contentBlockIndex": 0}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        (
            "contentBlockStart",
            {"start": {"toolUse": {"toolUseId": "u1", "name": "f"}}, "contentBlockIndex": 1},
        ),
        ("contentBlockDelta", {"delta": {"toolUse": {"input": '{"x"'}}, "contentBlockIndex": 1}),
        ("contentBlockDelta", {"delta": {"toolUse": {"input": ": 2}"}}, "contentBlockIndex": 1}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        ("messageStop", {"stopReason": "tool_use"}),
        (
            "metadata",
            {
                "usage": {
                    "inputTokens": 1,
                    "outputTokens": 2,
                    "totalTokens": 3,
                    "cacheReadInputTokens": 7,
                },
                "metrics": {"latencyMs": 1},
            },
        ),
    ):
        parser.feed(event)
    parsed = parser.finish()
    assert parsed.content == (
        Text(text="Hello"),
        ToolCall(id="u1", name="f", arguments=b'{"x": 2}'),
    )
    assert parsed.usage.cache_read == 7 and parsed.stop_reason == "tool_use"


def test_stream_errors():
    parser = P.stream_parser()
    with pytest.raises(ResponseParseError, match="before messageStart"):
        parser.feed(_events(("messageStop", {"stopReason": "end_turn"}))[0])
    parser = P.stream_parser()
    parser.feed(_events(("messageStart", {"role": "assistant"}))[0])
    with pytest.raises(ResponseParseError, match="truncated"):
        parser.finish()
    with pytest.raises(ResponseParseError, match="unknown stream event"):
        parser.feed(_events(("surprise", {}))[0])


def test_http_errors_read_the_amzn_error_type():
    error = P.parse_error(
        429,
        b'{"message":"Too many requests, please wait before trying again."}',
        {
            "x-amzn-ErrorType": "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "x-amzn-RequestId": "rid-1",
        },
    )
    assert isinstance(error, APIStatusError)
    assert (error.status, error.error_type, error.request_id) == (
        429,
        "ThrottlingException",
        "rid-1",
    )
    assert error.retryable and "Too many requests" in error.message
    bad = P.parse_error(400, b"<html>", {})
    assert bad.status == 400 and not bad.retryable


@pytest.mark.parametrize(
    ("emptied", "where"),
    [
        (_wire("assistant", {"reasoningContent": {"reasoningText": {"text": "x"}}}), 1),
        (_wire("assistant"), 1),
        (_wire("assistant", {"text": ""}), 1),
        (_wire("user", {"cachePoint": {"type": "default"}}), 0),
    ],
)
def test_import_refuses_a_message_that_vanishes_between_two_others(emptied, where):
    # Before: the message was dropped and the two around it (or an assistant first) stood
    # side by side in the request file; the builder joined them into one message.
    around = [_wire("user", {"text": "a"}), _wire("assistant", {"text": "b"})]
    messages = [around[0], emptied, _wire("user", {"text": "c"})] if where else [emptied, around[1]]
    with pytest.raises(RequestFileError) as caught:
        P.import_body({"modelId": CLAUDE, "messages": messages})
    assert caught.value.location == f"$.messages[{where}].content"
    assert "holds nothing llmcore sends" in str(caught.value)


def test_import_keeps_a_last_message_of_dropped_blocks_dropped_with_a_note():
    reasoning = {"reasoningContent": {"reasoningText": {"text": "x"}}}
    messages = [_wire("user", {"text": "a"}), _wire("assistant", reasoning)]
    result = P.import_body({"modelId": CLAUDE, "messages": messages})
    assert [m.role for m in result.request.messages] == ["user"]
    assert any("reasoningContent" in note for note in result.notes)
