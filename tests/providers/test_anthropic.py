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
from llmcore.errors import InvalidRequestError, UnsupportedContentError
from llmcore.providers import get_provider
from llmcore.providers.anthropic import tool_input, wire_id
from llmcore.providers.base import EncodeCache
from llmcore.requestfile import load_request_file
from tests.golden import check_golden

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "anthropic"
P = get_provider("anthropic")
TOOL = Tool.from_schema("f", "does f", {"type": "object", "properties": {"x": {"type": "integer"}}})
TOOL_G = Tool.from_schema("g", "does g", {"type": "object"})


def body(request, **kw):
    return json.loads(P.build_body(request, **kw))


@pytest.mark.parametrize("name", ["tool-loop", "image", "long-history"])
def test_examples_match_golden_bodies(name):
    request = load_request_file(ROOT / "examples" / f"{name}.json")
    check_golden(GOLDEN / f"{name}.json", P.build_body(request))


def test_golden_variants():
    base = load_request_file(ROOT / "examples" / "tool-loop.json")
    for suffix, params in {
        "automatic-1h": Params(max_tokens=100, cache_mode="automatic", cache_ttl="1h"),
        "off-sampling": Params(
            max_tokens=100,
            cache_mode="off",
            temperature=0.5,
            top_p=0.9,
            stop_sequences=("END",),
            stream=True,
        ),
        "tool-choice-name-extra": Params(
            tool_choice=ToolChoiceName(name="read_file"),
            extra=(("metadata", '{"user_id":"u1"}'), ("top_k", "5")),
        ),
    }.items():
        request = Request(
            model=base.model,
            system=base.system,
            tools=base.tools,
            messages=base.messages,
            params=params,
        )
        check_golden(GOLDEN / f"tool-loop-{suffix}.json", P.build_body(request))


def test_key_order_and_breakpoints_are_exactly_p3():
    msgs = (
        Message.user("q1"),
        Message.assistant("a1", ToolCall(id="t1", name="f", arguments=b'{"x":1}')),
        Message.tool(ToolResult(call_id="t1", tool_name="f", content=b"r1")),
        Message.assistant("done"),
        Message.user("q2"),
    )
    raw = P.build_body(
        Request(model="claude-sonnet-4-5", system=("s1", "s2"), tools=(TOOL, TOOL_G), messages=msgs)
    )
    b = json.loads(raw)
    assert list(b) == ["model", "max_tokens", "system", "messages", "tools"]
    assert raw.count(b"cache_control") == 4
    assert "cache_control" in b["tools"][1] and "cache_control" not in b["tools"][0]
    assert "cache_control" in b["system"][1] and "cache_control" not in b["system"][0]
    # (3) newest message, (4) the message before the last assistant message
    assert "cache_control" in b["messages"][4]["content"][-1]
    assert "cache_control" in b["messages"][2]["content"][-1]
    assert b["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": "r1",
                "cache_control": {"type": "ephemeral"},
            }
        ],
    }
    assert list(b["messages"][1]["content"][1]) == ["type", "id", "name", "input"]


def test_no_empty_text_block_and_block_array_system():
    msgs = (Message.user(Text(text=""), Image(data=b"img", mime_type="image/png")),)
    b = body(Request(model="m", system=("", "sys"), messages=msgs, params=Params(max_tokens=5)))
    assert b["system"] == [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    assert [blk["type"] for blk in b["messages"][0]["content"]] == ["image"]


def test_one_hour_ttl_everywhere():
    b = body(
        Request(
            model="m",
            system=("s",),
            tools=(TOOL,),
            messages=(Message.user("q"),),
            params=Params(cache_ttl="1h"),
        )
    )
    assert b["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert b["tools"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (b'{"b":1, "a":2}', '{"b":1, "a":2}'),
        (b"", "{}"),
        (b"  ", "{}"),
        (b"[1]", '{"raw_arguments":"[1]"}'),
        (b'{"a":', '{"raw_arguments":"{\\"a\\":"}'),
        (b"\xff{}", '{"raw_arguments":"\ufffd{}"}'),
    ],
)
def test_tool_arguments_treatment(args, expected):
    from llmcore import jsonbytes

    assert jsonbytes.dumps(tool_input(args)).decode() == expected


def test_arguments_are_spliced_byte_for_byte():
    args = b'{"z": 1,\n "a": [1.50, "\\u00e9"]}'
    msgs = (
        Message.user("q"),
        Message.assistant(ToolCall(id="t", name="f", arguments=args)),
        Message.tool(ToolResult(call_id="t", tool_name="f", content=b"ok")),
    )
    assert b'"input":' + args + b"}" in P.build_body(Request(model="m", messages=msgs))


def test_invalid_ids_are_rewritten_identically_and_distinctly():
    ids = ["call.1", "call:1", "x" * 300, "ok_id-1"]
    assert wire_id("ok_id-1") == "ok_id-1"
    assert len({wire_id(i) for i in ids}) == 4
    msgs = (
        Message.user("q"),
        Message.assistant(*[ToolCall(id=i, name="f", arguments=b"{}") for i in ids]),
        Message.tool(*[ToolResult(call_id=i, tool_name="f", content=b"r") for i in ids]),
    )
    b = body(Request(model="m", messages=msgs))
    uses = [blk["id"] for blk in b["messages"][1]["content"]]
    results = [blk["tool_use_id"] for blk in b["messages"][2]["content"]]
    assert uses == results and all(len(u) <= 256 for u in uses)


@pytest.mark.parametrize(
    ("msgs", "where", "what"),
    [
        (
            (Message.user("q"), Message.tool(ToolResult(call_id="x", tool_name="f", content=b""))),
            "messages[1]",
            "x",
        ),
        (
            (
                Message.user("q"),
                Message.assistant(ToolCall(id="c1", name="f", arguments=b"{}")),
                Message.user("next"),
            ),
            "messages[1]",
            "c1",
        ),
        (
            (
                Message.user("q"),
                Message.assistant(ToolCall(id="c1", name="f", arguments=b"{}")),
                Message.tool(ToolResult(call_id="c2", tool_name="f", content=b"")),
            ),
            "messages[2]",
            "c2",
        ),
    ],
)
def test_pairing_errors_name_index_and_id(msgs, where, what):
    with pytest.raises(InvalidRequestError) as info:
        P.build_body(Request(model="m", messages=msgs))
    assert info.value.location == where and repr(what) in str(info.value)


def test_extra_collision_is_an_error():
    with pytest.raises(InvalidRequestError, match="collides"):
        P.build_body(
            Request(
                model="m", messages=(Message.user("q"),), params=Params(extra=(("model", '"x"'),))
            )
        )


def test_encode_cache_reuses_unchanged_messages():
    cache = EncodeCache()
    msgs = [Message.user("q0")]
    for turn in range(1, 6):
        request = Request(model="m", messages=tuple(msgs))
        assert P.build_body(request, cache=cache) == P.build_body(request)
        msgs += [Message.assistant(f"a{turn}"), Message.user(f"q{turn}")]
    # each build encodes only new messages and those whose breakpoint moved (at most 4 per turn)
    assert cache.misses <= 1 + 4 * 4
    assert cache.hits >= 10


def test_carry_puts_thinking_first_without_breakpoint():
    thinking = '{"type":"thinking","thinking":"hm","signature":"sig"}'
    msgs = (
        Message.user("q"),
        Message.assistant(ToolCall(id="t", name="f", arguments=b"{}")),
        Message.tool(ToolResult(call_id="t", tool_name="f", content=b"r")),
    )
    raw = P.build_body(Request(model="m", messages=msgs), carry={1: (thinking,)})
    assert b'{"role":"assistant","content":[' + thinking.encode() + b',{"type":"tool_use"' in raw


def test_import_inverse_and_refusals():
    recorded = {
        "model": "m",
        "max_tokens": 10,
        "system": "s",
        "stream": False,
        "metadata": {"user_id": "u"},
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "x", "signature": "y"},
                    {"type": "text", "text": "yo"},
                ],
            },
        ],
    }
    result = P.import_body(recorded)
    assert result.request.params.extra == (("stream", "false"), ("metadata", '{"user_id":"u"}'))
    assert any("thinking" in n for n in result.notes)
    rebuilt = json.loads(P.build_body(result.request))
    assert rebuilt["stream"] is False and rebuilt["metadata"] == {"user_id": "u"}
    doc = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}],
    }
    with pytest.raises(UnsupportedContentError) as info:
        P.import_body(doc)
    assert info.value.feature == "document" and info.value.location == "$.messages[0].content[0]"


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses", "openrouter"])
def test_an_image_type_no_provider_accepts_is_refused_with_its_place(provider):
    msgs = (Message.user("look", Image(data=b"\x00\x01", mime_type="image/heic")),)
    with pytest.raises(InvalidRequestError) as info:
        get_provider(provider).build_body(Request(model="m", messages=msgs))
    assert info.value.location == "messages[0].content[1]" and "image/heic" in str(info.value)
