import dataclasses
import json
import warnings
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
    jsonbytes,
)
from llmcore.errors import InvalidRequestError, RequestFileError, UnsupportedContentError
from llmcore.providers import get_provider
from llmcore.providers.base import EncodeCache, data_url
from llmcore.providers.openai_chat import TOOL_ERROR_TEXT, tool_arguments, wire_id
from llmcore.requestfile import load_request_file
from tests.conftest import CORPUS
from tests.golden import check_golden

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "openai-chat"
P = get_provider("openai-chat")
TOOL = Tool.from_schema("f", "does f", {"type": "object", "properties": {"x": {"type": "integer"}}})
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8

# The module docstring's key-order table: every object of each kind writes its keys in this order.
KEY_ORDER = {
    "body": [
        "model",
        "max_completion_tokens",
        "messages",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "stop",
        "stream",
        "stream_options",
    ],
    "message": ["role", "tool_call_id", "content", "tool_calls"],
    "text": ["type", "text"],
    "image_url": ["type", "image_url"],
    "image_url.image_url": ["url"],
    "tool_call": ["id", "type", "function"],
    "tool_call.function": ["name", "arguments"],
    "tool": ["type", "function"],
    "tool.function": ["name", "description", "parameters"],
    "tool_choice": ["type", "function"],
    "tool_choice.function": ["name"],
    "stream_options": ["include_usage"],
}


def pairs(raw):
    return json.loads(raw, object_pairs_hook=lambda kv: kv)


def check_key_order(raw, extra=()):
    """Walk a body parsed as key/value pair lists; check each object against KEY_ORDER."""
    seen = set()

    def keys_in_order(kind, obj):
        keys = [k for k, _ in obj]
        order = KEY_ORDER[kind]
        known = [k for k in keys if k in order]
        assert known == sorted(known, key=order.index), (kind, keys)
        seen.add(kind)
        return dict(obj)

    top = keys_in_order("body", raw)
    assert [k for k, _ in raw if k not in KEY_ORDER["body"]] == list(extra)
    for message in top["messages"]:
        msg = keys_in_order("message", message)
        content = msg.get("content")
        for part in content if isinstance(content, list) else []:
            p = keys_in_order(dict(part)["type"], part)
            if "image_url" in p:
                keys_in_order("image_url.image_url", p["image_url"])
        for call in msg.get("tool_calls", []):
            keys_in_order("tool_call.function", keys_in_order("tool_call", call)["function"])
    for tool in top.get("tools", []):
        keys_in_order("tool.function", keys_in_order("tool", tool)["function"])
    if isinstance(top.get("tool_choice"), list):
        keys_in_order(
            "tool_choice.function", keys_in_order("tool_choice", top["tool_choice"])["function"]
        )
    if "stream_options" in top:
        keys_in_order("stream_options", top["stream_options"])
    return seen


def body(request, **kw):
    return json.loads(P.build_body(request, **kw))


def example(name, **params):
    request = load_request_file(ROOT / "examples" / f"{name}.json")
    new_params = dataclasses.replace(request.params, **params)
    return dataclasses.replace(request, model="gpt-4.1", params=new_params)


def tool_loop_parallel():
    return Request(
        model="gpt-4.1",
        system=("You are terse.", "", "Use tools."),
        tools=(TOOL, Tool.from_schema("g", "", {"type": "object"})),
        messages=(
            Message.user("run f and g"),
            Message.assistant(
                "Running both.",
                ToolCall(id="call_1", name="f", arguments=b'{"x": 1}'),
                ToolCall(id="call_2", name="g", arguments=b""),
            ),
            Message.tool(
                ToolResult(call_id="call_1", tool_name="f", content=b"one"),
                ToolResult(call_id="call_2", tool_name="g", content=b"boom", is_error=True),
            ),
            Message.assistant("f gave one; g failed."),
            Message.user("thanks \u00e9\u6f22"),
        ),
        params=Params(max_tokens=256, temperature=0.2, top_p=0.9, stop_sequences=("END",)),
    )


GOLDEN_CASES = {
    "tool-loop": lambda: example("tool-loop"),
    "image": lambda: example("image"),
    "long-history": lambda: example("long-history"),
    "tool-loop-stream": lambda: example("tool-loop", stream=True, tool_choice="auto"),
    "tool-loop-parallel": tool_loop_parallel,
    "tool-choice-none": lambda: dataclasses.replace(
        tool_loop_parallel(), params=Params(tool_choice="none")
    ),
    "tool-choice-any": lambda: dataclasses.replace(
        tool_loop_parallel(), params=Params(tool_choice="any")
    ),
    "tool-choice-name-extra": lambda: dataclasses.replace(
        tool_loop_parallel(),
        params=Params(
            tool_choice=ToolChoiceName(name="f"),
            stream=True,
            extra=(("n", "1"), ("response_format", '{"type":"json_object"}'), ("user", '"u1"')),
        ),
    ),
}


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_bodies(name):
    request = GOLDEN_CASES[name]()
    raw = P.build_body(request)
    check_golden(GOLDEN / f"{name}.json", raw)
    assert b"null" not in raw.replace(b'"null"', b"")


def test_every_key_order_row_is_exercised_by_the_goldens():
    seen = set()
    for name in GOLDEN_CASES:
        raw = (GOLDEN / f"{name}.json").read_bytes()
        extra = [k for k, _ in GOLDEN_CASES[name]().params.extra]
        seen |= check_key_order(pairs(raw), extra)
    assert seen == set(KEY_ORDER)


def test_body_shape_of_the_parallel_tool_loop():
    b = body(tool_loop_parallel())
    assert list(b) == [
        "model",
        "max_completion_tokens",
        "messages",
        "tools",
        "temperature",
        "top_p",
        "stop",
    ]
    assert b["messages"][0] == {
        "role": "system",
        "content": [
            {"type": "text", "text": "You are terse."},
            {"type": "text", "text": "Use tools."},
        ],
    }
    assert b["messages"][2]["tool_calls"][1] == {
        "id": "call_2",
        "type": "function",
        "function": {"name": "g", "arguments": "{}"},
    }
    assert b["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": [{"type": "text", "text": "one"}],
    }
    assert b["messages"][4]["content"] == [
        {"type": "text", "text": TOOL_ERROR_TEXT},
        {"type": "text", "text": "boom"},
    ]
    assert b["tools"][1] == {
        "type": "function",
        "function": {"name": "g", "parameters": {"type": "object"}},
    }
    assert b["stop"] == ["END"]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("none", "none"),
        ("any", "required"),
        (ToolChoiceName(name="f"), {"type": "function", "function": {"name": "f"}}),
    ],
)
def test_tool_choice_mapping(choice, wire):
    request = Request(
        model="m", tools=(TOOL,), messages=(Message.user("q"),), params=Params(tool_choice=choice)
    )
    assert body(request)["tool_choice"] == wire


def test_stream_adds_include_usage():
    b = body(Request(model="m", messages=(Message.user("q"),), params=Params(stream=True)))
    assert list(b)[-2:] == ["stream", "stream_options"]
    assert b["stream_options"] == {"include_usage": True}


def test_cache_parameters_and_carry_are_ignored():
    base = tool_loop_parallel()
    raw = P.build_body(base)
    for mode in ("automatic", "off"):
        params = dataclasses.replace(base.params, cache_mode=mode, cache_ttl="1h")
        assert P.build_body(dataclasses.replace(base, params=params)) == raw
    assert P.build_body(base, carry={2: ('{"type":"thinking"}',)}) == raw
    assert b"cache_control" not in raw


def test_no_empty_text_part_and_no_null():
    msgs = (
        Message.user(Text(text=""), Image(data=PNG, mime_type="image/png"), Text(text="")),
        Message.assistant(Text(text=""), ToolCall(id="c", name="f", arguments=b"{}")),
        Message.tool(ToolResult(call_id="c", tool_name="f", content=b"")),
        Message.assistant(Text.omitted_image("image/png")),
    )
    b = body(Request(model="m", system=("",), messages=msgs))
    assert b["messages"][0] == {
        "role": "user",
        "content": [
            {
                "type": "image_url",
                "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAAAAAAAAA=="},
            }
        ],
    }
    assert "content" not in b["messages"][1]
    assert b["messages"][2] == {"role": "tool", "tool_call_id": "c", "content": ""}
    assert b["messages"][3]["content"][0]["text"].startswith("[Image omitted")


def test_empty_error_result_is_the_marker_alone():
    msgs = (
        Message.user("q"),
        Message.assistant(ToolCall(id="c", name="f", arguments=b"{}")),
        Message.tool(ToolResult(call_id="c", tool_name="f", content=b"", is_error=True)),
    )
    assert body(Request(model="m", messages=msgs))["messages"][2]["content"] == [
        {"type": "text", "text": TOOL_ERROR_TEXT}
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (b'{"b":1, "a":2}', '{"b":1, "a":2}'),
        (b' {"a":"\xc3\xa9"}\n', ' {"a":"\u00e9"}\n'),
        (b"", "{}"),
        (b" \n", "{}"),
        (b"[1]", '{"raw_arguments":"[1]"}'),
        (b'"s"', '{"raw_arguments":"\\"s\\""}'),
        (b'{"a":', '{"raw_arguments":"{\\"a\\":"}'),
        (b"\xff{}", '{"raw_arguments":"\ufffd{}"}'),
        (b'{"a":"\xff"}', '{"raw_arguments":"{\\"a\\":\\"\ufffd\\"}"}'),
    ],
)
def test_tool_arguments_treatment(args, expected):
    assert tool_arguments(args) == expected


def test_arguments_are_escaped_from_the_stored_bytes_not_redumped():
    args = b'{"z": 1,\n "a": [1.50, "\\u00e9"]}'
    msgs = (
        Message.user("q"),
        Message.assistant(ToolCall(id="t", name="f", arguments=args)),
        Message.tool(ToolResult(call_id="t", tool_name="f", content=b"ok")),
    )
    raw = P.build_body(Request(model="m", messages=msgs))
    assert b'"arguments":"{\\"z\\": 1,\\n \\"a\\": [1.50, \\"\\\\u00e9\\"]}"' in raw
    assert (
        body(Request(model="m", messages=msgs))["messages"][1]["tool_calls"][0]["function"][
            "arguments"
        ].encode()
        == args
    )


def test_long_ids_are_rewritten_identically_and_never_collide():
    long_a = "call_" + "a" * 60
    long_b = "call_" + "a" * 59 + "b"  # same 40-character prefix as long_a
    ids = [long_a, long_b, "x" * 40, "", "call_short"]
    assert wire_id("x" * 40) == "x" * 40 and wire_id("call_short") == "call_short"
    assert all(0 < len(wire_id(i)) <= 40 for i in ids)
    assert len({wire_id(i) for i in ids}) == len(ids)
    msgs = (
        Message.user("q"),
        Message.assistant(*[ToolCall(id=i, name="f", arguments=b"{}") for i in ids]),
        Message.tool(*[ToolResult(call_id=i, tool_name="f", content=b"r") for i in ids]),
    )
    request = Request(model="m", messages=msgs)
    b = body(request)
    calls = [c["id"] for c in b["messages"][1]["tool_calls"]]
    results = [m["tool_call_id"] for m in b["messages"][2:]]
    assert calls == results == [wire_id(i) for i in ids]
    assert request.messages[1].content[0].id == long_a  # the history keeps the original


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


@pytest.mark.parametrize(
    ("params", "key"),
    [
        (Params(extra=(("model", '"x"'),)), "model"),
        (Params(stream=True, extra=(("stream_options", "{}"),)), "stream_options"),
        (Params(max_tokens=5, extra=(("max_completion_tokens", "9"),)), "max_completion_tokens"),
    ],
)
def test_extra_collision_is_an_error(params, key):
    with pytest.raises(InvalidRequestError, match="collides") as info:
        P.build_body(Request(model="m", messages=(Message.user("q"),), params=params))
    assert info.value.location == f"params.extra.{key}"


def test_extra_is_appended_verbatim_in_order():
    params = Params(extra=(("z_last", '{"b":1,"a":2}'), ("max_tokens", "50")))
    raw = P.build_body(Request(model="m", messages=(Message.user("q"),), params=params))
    assert raw.endswith(b',"z_last":{"b":1,"a":2},"max_tokens":50}')


def test_encode_cache_reuses_unchanged_messages():
    cache = EncodeCache()
    msgs = [Message.user("q0")]
    for turn in range(1, 6):
        request = Request(model="m", messages=tuple(msgs))
        assert P.build_body(request, cache=cache) == P.build_body(request)
        msgs += [Message.assistant(f"a{turn}"), Message.user(f"q{turn}")]
    # Chat has no breakpoints: each message is encoded exactly once
    assert cache.misses == 9
    assert cache.hits == 1 + 3 + 5 + 7


def test_prefix_invariant_across_turns():
    request = tool_loop_parallel()
    earlier = body(dataclasses.replace(request, messages=request.messages[:3]))
    later = body(request)
    assert later["messages"][: len(earlier["messages"])] == earlier["messages"]


# ---- import ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_import_then_build_is_byte_identical_on_own_bodies(name):
    raw = (GOLDEN / f"{name}.json").read_bytes()
    result = P.import_body(json.loads(raw))
    assert P.build_body(result.request) == raw
    assert result.notes == ()


def test_import_inverts_the_request():
    request = tool_loop_parallel()
    imported = P.import_body(json.loads(P.build_body(request))).request
    # empty argument bytes are sent as "{}" (the documented treatment) and read back as such
    assert imported.messages[1].content[2].arguments == b"{}"
    assert (
        imported.messages[:1] + imported.messages[2:] == request.messages[:1] + request.messages[2:]
    )
    assert imported.system == ("You are terse.", "Use tools.")
    assert imported.params == request.params
    assert imported.tools == request.tools
    assert imported.messages[2].content[1].is_error is True
    assert imported.messages[2].content[1].tool_name == "g"


def test_import_normalizes_real_client_shapes():
    recorded = {
        "messages": [
            {"role": "developer", "content": "be nice"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": ""},
            {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "reasoning_content": "secret",
                "tool_calls": [
                    {
                        "type": "function",
                        "id": "c",
                        "function": {"name": "f", "arguments": '{"x": 1}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": "c",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
        ],
        "model": "o1",
        "n": 1,
        "stream": True,
        "max_tokens": 9,
        "stop": "END",
        "tool_choice": {"type": "allowed_tools", "allowed_tools": {}},
    }
    result = P.import_body(recorded)
    request = result.request
    assert request.system == ("be nice",)
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    assert request.messages[1].content[0].arguments == b'{"x": 1}'
    assert request.messages[2].content[0].content == b"ab"
    assert request.params.stop_sequences == ("END",)
    assert request.params.stream is False
    assert request.params.extra == (
        ("n", "1"),
        ("stream", "true"),
        ("max_tokens", "9"),
        ("tool_choice", '{"type":"allowed_tools","allowed_tools":{}}'),
    )
    notes = " | ".join(result.notes)
    for word in (
        "developer",
        "dropped an empty assistant message",
        "refusal",
        "reasoning_content",
        "one string",
    ):
        assert word in notes
    rebuilt = body(request)
    assert rebuilt["stream"] is True and "stream_options" not in rebuilt
    assert list(rebuilt)[-4:] == ["n", "stream", "max_tokens", "tool_choice"]


@pytest.mark.parametrize(
    ("message", "feature", "where"),
    [
        ({"role": "user", "content": [{"type": "file", "file": {}}]}, "file part", ".content[0]"),
        (
            {"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]},
            "input_audio part",
            ".content[0]",
        ),
        (
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
            },
            "image URL",
            ".content[0].image_url.url",
        ),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": "https://x"}]},
            "image URL",
            ".content[0].image_url",
        ),
        (
            {
                "role": "user",
                "content": [
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,", "detail": "low"},
                    }
                ],
            },
            "image detail 'low'",
            ".content[0].image_url",
        ),
        ({"role": "user", "content": "x", "name": "bob"}, "message name", ".name"),
        (
            {"role": "assistant", "content": None, "function_call": {}},
            "legacy function_call",
            ".function_call",
        ),
        ({"role": "assistant", "content": None, "audio": {"id": "a"}}, "assistant audio", ".audio"),
        ({"role": "assistant", "content": None, "refusal": "no"}, "refusal", ".refusal"),
        ({"role": "function", "name": "f", "content": "x"}, "legacy function message", ""),
        (
            {"role": "system", "content": "late"},
            "system message after the conversation started",
            "",
        ),
        (
            {"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]},
            "custom tool call",
            ".tool_calls[0]",
        ),
    ],
)
def test_import_refusals_name_the_feature_and_path(message, feature, where):
    recorded = {"model": "m", "messages": [{"role": "user", "content": "q"}, message]}
    with pytest.raises(UnsupportedContentError) as info:
        P.import_body(recorded)
    assert info.value.feature == feature
    assert info.value.location == "$.messages[1]" + where


@pytest.mark.parametrize(
    ("tool", "feature"),
    [
        ({"type": "custom", "custom": {"name": "x"}}, "custom tool"),
    ],
)
def test_import_refuses_custom_tools(tool, feature):
    with pytest.raises(UnsupportedContentError) as info:
        P.import_body({"model": "m", "messages": [], "tools": [tool]})
    assert info.value.feature == feature and info.value.location.startswith("$.tools[0]")


def test_import_malformed_body_names_the_path():
    with pytest.raises(RequestFileError) as info:
        P.import_body(
            {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c", "content": 5}]}
        )
    assert info.value.location == "$.messages[0].content"


CORPUS_CASES = {
    # case: the normalizations that explain every difference (none = JSON-equal as recorded)
    "0059": set(),  # user text + base64 image parts
    "0089": set(),  # user text parts
    "0009": {"string content"},
    "0023": {"string content", "content null"},
    "0030": {"string content", "content null"},
    "0042": {"string content"},
    "0079": {"string content", "developer"},
    "0094": {"string content", "empty assistant"},
}


def normalize(value, kinds):
    """Apply the named import normalizations to a recorded body (parsed, order kept)."""
    if isinstance(value, list):
        out = [normalize(v, kinds) for v in value]
        if "empty assistant" in kinds:
            out = [m for m in out if m != {"role": "assistant", "content": ""}]
        return out
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key == "content" and item is None and "content null" in kinds:
            continue
        if key == "content" and isinstance(item, str) and item and "string content" in kinds:
            item = [{"type": "text", "text": item}]
        if key == "role" and item == "developer" and "developer" in kinds:
            item = "system"
        out[key] = normalize(item, kinds)
    return out


def ordered(value):
    """A comparable form that keeps array order and ignores object key order (a named normalization)."""
    if isinstance(value, dict):
        return sorted((k, ordered(v)) for k, v in value.items())
    if isinstance(value, list):
        return [ordered(v) for v in value]
    return value


@pytest.mark.parametrize("case", sorted(CORPUS_CASES))
def test_real_corpus_bodies_rebuild_json_equal(case):
    recorded = json.loads((CORPUS / "openai-chat" / f"{case}.json").read_text("utf-8"))["request"]
    request = P.import_body(recorded).request
    rebuilt = json.loads(P.build_body(request))
    assert ordered(rebuilt) == ordered(normalize(recorded, CORPUS_CASES[case]))
    # and our own body is a fixed point
    assert P.build_body(P.import_body(rebuilt).request) == P.build_body(request)


def test_corpus_pydantic_case_with_strict_tools_keeps_strict():
    recorded = json.loads((CORPUS / "openai-chat" / "0027.json").read_text("utf-8"))["request"]
    result = P.import_body(recorded)
    flags = [t["function"].get("strict") for t in recorded["tools"]]
    assert [t.strict for t in result.request.tools] == flags
    rebuilt = json.loads(P.build_body(result.request))
    assert [t["function"].get("strict") for t in rebuilt["tools"]] == flags


@pytest.mark.parametrize("mime", ["image/png", 'image/x"q', "image/\u00e9\n"])
def test_a_data_url_is_written_as_its_text_is(mime):
    # The base64 is never scanned; a mime type that needs escaping still is.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a PNG signature would correct the declared type
        image = Image(data=b"\x00\x01\xfe\xff" * 40, mime_type=mime)
    url = data_url(image)
    text = f"data:{mime};base64,{image.base64.decode()}"
    assert url.plain is (mime == "image/png")
    assert jsonbytes.dumps(url) == json.dumps(text, ensure_ascii=False).encode()
