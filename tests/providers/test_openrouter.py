import dataclasses
import json
from pathlib import Path

import pytest

from llmcore import Message, Params, Request, ToolCall, ToolResult
from llmcore.errors import InvalidRequestError, UserError
from llmcore.providers import get_provider
from llmcore.providers.base import EncodeCache
from llmcore.providers.openrouter import ImportNotSupportedError, cache_mode
from llmcore.requestfile import load_request_file
from tests.golden import check_golden

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "openrouter"
P = get_provider("openrouter")
CHAT = get_provider("openai-chat")
CLAUDE = "anthropic/claude-sonnet-4.5"


def example(name, model=CLAUDE, **params):
    request = load_request_file(ROOT / "examples" / f"{name}.json")
    return dataclasses.replace(
        request, model=model, params=dataclasses.replace(request.params, **params)
    )


GOLDEN_CASES = {
    "anthropic-tool-loop": lambda: example("tool-loop"),
    "anthropic-tool-loop-1h-stream": lambda: example("tool-loop", cache_ttl="1h", stream=True),
    "anthropic-tool-loop-automatic": lambda: example("tool-loop", cache_mode="automatic"),
    "anthropic-tool-loop-off": lambda: example("tool-loop", cache_mode="off"),
    "anthropic-image": lambda: example("image"),
    "anthropic-long-history": lambda: example("long-history"),
    "openai-tool-loop": lambda: example("tool-loop", model="openai/gpt-4.1"),
    "gemini-tool-loop": lambda: example("tool-loop", model="google/gemini-2.5-pro"),
    "anthropic-extra": lambda: example(
        "tool-loop", cache_mode="automatic", extra=(("provider", '{"order":["anthropic"]}'),)
    ),
}


def strip_markers(value):
    """Parse-level copy without cache_control members, key order kept (P4's normalization)."""
    if isinstance(value, list) and all(isinstance(p, tuple) for p in value):
        return [(k, strip_markers(v)) for k, v in value if k != "cache_control"]
    if isinstance(value, list):
        return [strip_markers(v) for v in value]
    return value


def pairs(raw):
    return json.loads(raw, object_pairs_hook=lambda kv: kv)


def markers(raw):
    """Paths of every cache_control member in a body."""
    found = []

    def walk(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "cache_control":
                    found.append((path, item))
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")

    walk(json.loads(raw), "$")
    return found


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_golden_bodies(name):
    check_golden(GOLDEN / f"{name}.json", P.build_body(GOLDEN_CASES[name]()))


@pytest.mark.parametrize("name", sorted(GOLDEN_CASES))
def test_body_is_the_chat_body_plus_markers_only(name):
    request = GOLDEN_CASES[name]()
    assert strip_markers(pairs(P.build_body(request))) == pairs(CHAT.build_body(request))


def test_breakpoints_follow_p3_for_claude():
    request = example("tool-loop")
    raw = P.build_body(request)
    b = json.loads(raw)
    ephemeral = {"type": "ephemeral"}
    # (2) last system part; (4) the message before the last assistant message; (3) the newest
    # message (two results: the marker goes on the last wire tool message)
    assert markers(raw) == [
        ("$.messages[0].content[0]", ephemeral),
        ("$.messages[1].content[0]", ephemeral),
        ("$.messages[4].content[0]", ephemeral),
    ]
    assert [m["role"] for m in b["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert list(b["messages"][4]["content"][0]) == ["type", "text", "cache_control"]
    assert "cache_control" not in b["tools"][-1]


def test_tool_results_carry_the_marker_on_the_last_wire_message():
    msgs = (
        Message.user("q"),
        Message.assistant(
            ToolCall(id="a", name="f", arguments=b"{}"),
            ToolCall(id="b", name="f", arguments=b"{}"),
        ),
        Message.tool(
            ToolResult(call_id="a", tool_name="f", content=b"ra"),
            ToolResult(call_id="b", tool_name="f", content=b"rb", is_error=True),
        ),
    )
    raw = P.build_body(Request(model=CLAUDE, messages=msgs, params=Params(cache_ttl="1h")))
    assert markers(raw) == [
        ("$.messages[0].content[0]", {"type": "ephemeral", "ttl": "1h"}),
        ("$.messages[3].content[1]", {"type": "ephemeral", "ttl": "1h"}),
    ]


def test_no_marker_where_no_part_can_carry_one():
    msgs = (
        Message.user("q"),
        Message.assistant(ToolCall(id="a", name="f", arguments=b"{}")),
        Message.tool(ToolResult(call_id="a", tool_name="f", content=b"")),
        Message.assistant("done"),
        Message.user("q2"),
    )
    raw = P.build_body(Request(model=CLAUDE, system=("", ""), messages=msgs))
    # (4) is the empty tool result (string content ""), the system is empty: only (3) remains
    assert markers(raw) == [("$.messages[4].content[0]", {"type": "ephemeral"})]
    assert json.loads(raw)["messages"][2]["content"] == ""


def test_never_more_than_the_limit_and_never_on_empty_text():
    request = example("long-history")
    raw = P.build_body(request)
    # markers: the last system part, the newest message, the message before the last assistant one
    assert len(markers(raw)) == 3
    for path, _ in markers(raw):
        part = json.loads(raw)
        for step in path[2:].replace("]", "").replace("[", ".").split("."):
            part = part[int(step)] if step.isdigit() else part[step]
        assert part.get("text", "x") != ""


@pytest.mark.parametrize(
    ("model", "mode", "applied"),
    [
        (CLAUDE, "breakpoints", "breakpoints"),
        (CLAUDE, "automatic", "automatic"),
        (CLAUDE, "off", "off"),
        ("google/gemini-2.5-flash", "breakpoints", "breakpoints"),
        ("google/gemini-2.5-flash", "automatic", "off"),
        ("openai/gpt-4.1", "breakpoints", "off"),
        ("deepseek/deepseek-chat", "automatic", "off"),
    ],
)
def test_cache_mode_per_model(model, mode, applied):
    assert cache_mode(Request(model=model, params=Params(cache_mode=mode))) == applied


def test_automatic_mode_is_one_top_level_marker_before_extra():
    raw = P.build_body(GOLDEN_CASES["anthropic-extra"]())
    assert markers(raw) == [("$", {"type": "ephemeral"})]
    assert list(json.loads(raw))[-2:] == ["cache_control", "provider"]


def test_extra_collision_with_top_level_marker_is_an_error():
    request = example("tool-loop", cache_mode="automatic", extra=(("cache_control", "{}"),))
    with pytest.raises(InvalidRequestError, match="collides"):
        P.build_body(request)


def test_prefix_invariant_and_encode_cache_across_turns():
    cache = EncodeCache()
    msgs = [Message.user("q0")]
    previous = None
    for turn in range(1, 8):
        request = Request(model=CLAUDE, system=("s",), messages=tuple(msgs))
        raw = P.build_body(request, cache=cache)
        assert raw == P.build_body(request)
        current = strip_markers(dict(pairs(raw))["messages"])
        if previous is not None:
            assert current[: len(previous)] == previous
        previous = current
        msgs += [
            Message.assistant(ToolCall(id=f"c{turn}", name="f", arguments=b"{}")),
            Message.tool(ToolResult(call_id=f"c{turn}", tool_name="f", content=b"r")),
            Message.assistant(f"a{turn}"),
            Message.user(f"q{turn}"),
        ]
    # only new messages and those whose breakpoint moved are encoded again
    assert cache.misses <= 1 + 6 * (4 + 2)
    assert cache.hits >= 40


def test_carry_is_ignored():
    request = example("tool-loop")
    assert P.build_body(request, carry={1: ('{"type":"thinking"}',)}) == P.build_body(request)


def test_import_is_not_supported():
    with pytest.raises(ImportNotSupportedError, match="openai-chat") as info:
        P.import_body({"model": CLAUDE, "messages": []})
    assert isinstance(info.value, UserError)
