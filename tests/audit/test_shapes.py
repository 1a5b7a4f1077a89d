"""Gemini and Bedrock Converse as first-class shapes; the shape from the request URI (V1)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import AuditInput, Verdict, audit_bodies, minimum_tokens, wire_shape
from llmcore.audit._shape import (
    BEDROCK_INVOKE,
    BEDROCK_NOVA_MIN,
    NO_CACHE_MIN,
    model_from_uri,
    shape_from_uri,
)

from . import _bodies as b
from . import _wire as w

FLASH = w.GEMINI_URI.format(model="gemini-2.5-flash")
PRO = w.GEMINI_URI.format(model="gemini-2.5-pro")
SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0"
CONVERSE = w.CONVERSE_URI.format(model=SONNET)


def _audit(bodies: list[bytes], uri: str | None) -> list[Any]:
    report = audit_bodies(
        [AuditInput(body=x, source=f"r{i}", uri=uri) for i, x in enumerate(bodies)]
    )
    return list(report.requests)


def _gemini_turns(**kw: Any) -> list[bytes]:
    turns = [
        w.g_user("Weather in Paris?"),
        w.g_call("get_weather", {"city": "Paris"}),
        w.g_result("get_weather", {"temp": 21}),
        w.g_model("21 degrees."),
        w.g_user("And Rome?"),
    ]
    tools = [{"functionDeclarations": [w.WEATHER_DECL]}]
    return [w.gemini(turns[:n], tools=tools, **kw) for n in (1, 3, 5)]


# --- Gemini ---------------------------------------------------------------------------------


def test_a_growing_gemini_conversation_is_stable_with_the_model_from_the_url():
    records = _audit(_gemini_turns(), FLASH)
    assert [r.verdict for r in records] == [Verdict.NEW, Verdict.STABLE, Verdict.STABLE]
    assert {r.provider for r in records} == {"gemini"}
    assert {r.model for r in records} == {"gemini-2.5-flash"}
    assert [r.compared_with for r in records] == [None, 0, 1]


def test_a_changed_cached_content_name_is_a_break_before_the_contents():
    turns = [w.g_user("Summarize the file."), w.g_model("It is long."), w.g_user("Shorter?")]
    extra = {"cachedContent": "cachedContents/abc123"}
    first = w.gemini(turns[:1], system=None, extra=extra)
    second = w.gemini(turns, system=None, extra={"cachedContent": "cachedContents/xyz789"})
    [_, rec] = _audit([first, second], FLASH)
    assert rec.verdict is Verdict.BREAK and rec.path == "cachedContent"
    assert rec.first_break_offset == second.index(b"xyz789")


def test_gemini_minimum_comes_from_the_model():
    """2.5 Pro caches nothing under 2,048 tokens; over it the whole shared prefix counts."""
    long_text = "word " * 2600  # a token a word: about 2,600 tokens
    short_text = "word " * 1500  # about 1,500 tokens
    for text, cached in ((long_text, True), (short_text, False)):
        turns = [w.g_user(text), w.g_model("ok"), w.g_user("more")]
        first, second = w.gemini(turns[:1]), w.gemini(turns)
        r0, r1 = _audit([first, second], PRO)
        assert r1.verdict is Verdict.STABLE
        assert r1.max_cacheable_tokens == (r0.total_tokens if cached else 0)
        assert (r0.total_tokens >= 2048) is cached


# --- Bedrock Converse ----------------------------------------------------------------------


def _converse_turns(point: bool = True) -> list[bytes]:
    msgs = [
        w.c_user("Weather in Paris?"),
        w.c_assistant("21 degrees."),
        w.c_user("And Rome?"),
        w.c_assistant("24 degrees."),
        w.c_user("Thanks."),
    ]
    system = [{"text": "Answer briefly."}, w.POINT]
    tools = [w.tool_spec("get_weather", "Weather for a city."), w.POINT]
    out = []
    for n in (1, 3, 5):
        prefix = [dict(m) for m in msgs[:n]]
        if point:  # the breakpoint moves to the newest user message
            prefix[-1] = w.c_user(prefix[-1]["content"][0]["text"], point=True)
        out.append(w.converse(prefix, system=system, tools=tools))
    return out


def test_a_converse_conversation_with_moving_cache_points_is_stable():
    records = _audit(_converse_turns(), CONVERSE)
    assert [r.verdict for r in records] == [Verdict.NEW, Verdict.STABLE, Verdict.STABLE]
    assert {r.provider for r in records} == {"bedrock-converse"}
    assert {r.model for r in records} == {"us.anthropic.claude-sonnet-4-5-20250929-v1:0"}


def test_cache_points_are_not_prefix_tokens():
    with_points = _audit(_converse_turns(point=True), CONVERSE)
    without = _audit(_converse_turns(point=False), CONVERSE)
    assert [r.total_tokens for r in with_points] != [0, 0, 0]
    assert [r.total_tokens for r in with_points] == [r.total_tokens for r in without]


def test_a_converse_system_break_names_the_wire_index_past_a_cache_point():
    system = [{"text": "Rules."}, w.POINT, {"text": "Answer briefly."}]
    first = w.converse([w.c_user("Hi")], system=system)
    system2 = [{"text": "Rules."}, w.POINT, {"text": "Answer kindly."}]
    second = w.converse([w.c_user("Hi"), w.c_assistant("Hello"), w.c_user("Bye")], system=system2)
    [_, rec] = _audit([first, second], CONVERSE)
    assert rec.verdict is Verdict.BREAK
    assert rec.path == "system[2].text"
    assert rec.first_break_offset == second.index(b"kindly")


def test_a_converse_body_without_url_is_never_guessed_as_anthropic():
    """``system`` is an Anthropic member too, and the model says Claude: still Converse."""
    body = jsonbytes.dumps(
        {
            "modelId": "anthropic.claude-3-7-sonnet-20250219-v1:0",
            "system": [{"text": "Be brief."}],
            "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        }
    )
    [rec] = _audit([body], None)
    assert rec.provider == "bedrock-converse"
    assert wire_shape(body) == "bedrock-converse"
    plain = jsonbytes.dumps({"messages": [{"role": "user", "content": [{"text": "Hi"}]}]})
    assert wire_shape(plain) == "bedrock-converse"


def test_a_bedrock_invoke_body_is_audited_as_anthropic_with_the_url_model():
    msgs = b.session()
    model = "anthropic.claude-3-5-haiku-20241022-v1%3A0"
    extra = {"anthropic_version": "bedrock-2023-05-31"}
    bodies = [
        jsonbytes.dumps({k: v for k, v in jsonbytes.loads(x).items() if k != "model"})
        for x in (b.anthropic(msgs[:1], extra=extra), b.anthropic(msgs[:3], extra=extra))
    ]
    records = _audit(bodies, w.INVOKE_URI.format(model=model))
    assert [r.provider for r in records] == ["anthropic", "anthropic"]
    assert [r.verdict for r in records] == [Verdict.NEW, Verdict.STABLE]
    assert records[0].model == "anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gemini-2.5-flash", 0),
        ("gemini-2.5-flash-lite", 0),
        ("gemini-2.5-pro", 2048),
        ("gemini-3.1-pro-preview", 4096),
        ("gemini-2.0-flash", 4096),
        ("us.amazon.nova-pro-v1:0", BEDROCK_NOVA_MIN),
        ("amazon.nova-micro-v1:0", BEDROCK_NOVA_MIN),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", 2048),
        ("anthropic.claude-3-7-sonnet-20250219-v1:0", 1024),
        ("global.anthropic.claude-haiku-4-5-20251001-v1:0", 4096),
        ("us.meta.llama4-maverick-17b-instruct-v1:0", NO_CACHE_MIN),
        ("anthropic/claude-3.5-sonnet", 1024),
        ("claude-sonnet-4-6", 2048),
    ],
)
def test_minimum_tokens_per_model(model: str, expected: int):
    assert minimum_tokens(model, True) == expected


def test_a_bedrock_model_without_prompt_caching_caches_nothing():
    msgs = [w.c_user("word " * 3000), w.c_assistant("ok"), w.c_user("more")]
    llama = w.CONVERSE_URI.format(model="us.meta.llama4-maverick-17b-instruct-v1%3A0")
    nova = w.CONVERSE_URI.format(model="us.amazon.nova-pro-v1%3A0")
    bodies = [w.converse(msgs[:1]), w.converse(msgs)]
    assert _audit(bodies, llama)[1].max_cacheable_tokens == 0
    r0, r1 = _audit(bodies, nova)
    assert r1.ideal_cacheable_tokens == r0.total_tokens > BEDROCK_NOVA_MIN
    assert r1.max_cacheable_tokens == 0  # no cachePoint: Bedrock writes nothing


PLANTED = [
    (
        "gemini",
        0,
        b"Answer briefly.",
        b"Answer kindly.",
        "systemInstruction.parts[0].text",
        b"kindly",
    ),
    (
        "gemini",
        0,
        b"Weather for a city.",
        b"Weather for a town.",
        "tools[0].functionDeclarations[0].description",
        b"town",
    ),
    (
        "gemini",
        1,
        b'"city":"Paris"',
        b'"city":"Lyon"',
        "contents[1].parts[0].functionCall.args.city",
        b"Lyon",
    ),
    (
        "converse",
        0,
        b"Weather for a city.",
        b"Weather for a town.",
        "toolConfig.tools[0].toolSpec.description",
        b"town",
    ),
    ("converse", 1, b"21 degrees.", b"22 degrees.", "messages[1].content[0].text", b"2 degrees."),
]
"""(shape, which consecutive pair, old bytes, new bytes, JSON path, text at the first new byte)."""


@pytest.mark.parametrize(("shape", "pair", "old", "new", "path", "at"), PLANTED)
def test_a_planted_change_breaks_at_its_byte_and_path(
    shape: str, pair: int, old: bytes, new: bytes, path: str, at: bytes
):
    bodies, uri = (_gemini_turns(), FLASH) if shape == "gemini" else (_converse_turns(), CONVERSE)
    changed = bodies[pair + 1].replace(old, new)
    assert changed != bodies[pair + 1]
    [_, rec] = _audit([bodies[pair], changed], uri)
    assert rec.verdict is Verdict.BREAK
    assert rec.path == path
    assert rec.first_break_offset == changed.index(at)


# --- the shape from the URL ----------------------------------------------------------------

URIS = {
    "https://api.anthropic.com/v1/messages": "anthropic",
    "https://api.openai.com/v1/chat/completions": "openai-chat",
    "https://api.openai.com/v1/responses": "openai-responses",
    "https://openrouter.ai/api/v1/chat/completions": "openrouter",
    FLASH: "gemini",
    FLASH.replace(":generateContent", ":streamGenerateContent") + "?alt=sse": "gemini",
    (
        "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1/"
        "publishers/google/models/gemini-2.0-flash:generateContent"
    ): "gemini",
    CONVERSE: "bedrock-converse",
    CONVERSE.replace("/converse", "/converse-stream"): "bedrock-converse",
    w.INVOKE_URI.format(model="anthropic.claude-v2"): BEDROCK_INVOKE,
    "https://example.com/openai/deployments/d/chat/completions?api-version=2024-10-21": (
        "openai-chat"
    ),
    "https://api.anthropic.com/v1/messages/count_tokens": None,
    FLASH.replace(":generateContent", ":countTokens"): None,
    "https://api.openai.com/v1/embeddings": None,
}


@pytest.mark.parametrize(("uri", "expected"), list(URIS.items()))
def test_shape_from_uri(uri: str, expected: str | None):
    assert shape_from_uri(uri) == expected


def test_model_from_uri():
    assert model_from_uri(PRO + "?alt=sse") == "gemini-2.5-pro"
    assert model_from_uri(CONVERSE) == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert model_from_uri("https://api.openai.com/v1/chat/completions") == ""


_SHAPED: dict[str, Any] = {
    "anthropic": lambda t: b.anthropic([b.user(t)]),
    "openai-chat": lambda t: b.chat(
        [{"role": "system", "content": "s"}, {"role": "user", "content": t}]
    ),
    "openai-responses": lambda t: b.responses([{"role": "user", "content": t}]),
    "gemini": lambda t: w.gemini([w.g_user(t)]),
    "bedrock-converse": lambda t: w.converse([w.c_user(t)]),
}
_ENDPOINT_URIS = [u for u, shape in URIS.items() if shape is not None and shape != BEDROCK_INVOKE]


@settings(max_examples=150)
@given(
    body_shape=st.sampled_from(sorted(_SHAPED)),
    uri=st.sampled_from(_ENDPOINT_URIS),
    text=st.text(min_size=1, max_size=40),
)
def test_the_url_shape_wins_over_the_body_guess(body_shape: str, uri: str, text: str):
    body = _SHAPED[body_shape](text)
    [with_uri] = _audit([body], uri)
    assert with_uri.provider == URIS[uri]
    [without] = _audit([body], None)
    assert without.provider == body_shape


def test_a_converse_tool_choice_change_keeps_the_tools_prefix():
    """As recorded by pydantic-ai (``test_bedrock_single_tool_choice_preserves_cache``): the
    cache read stays 2,752 tokens when ``toolConfig.toolChoice`` changes from a named tool to
    ``auto``; tools are prefix items, the choice is only part of the messages-level key."""
    tools = [w.tool_spec("catalog_lookup", "Look up a product. " * 400), w.POINT]
    msgs = [w.c_user("Find a lamp."), w.c_assistant("Looking."), w.c_user("Cheaper?")]

    def body(n: int, choice: dict[str, Any]) -> bytes:
        value = jsonbytes.loads(w.converse(msgs[:n], tools=tools))
        value["toolConfig"]["toolChoice"] = choice
        return jsonbytes.dumps(value)

    first = body(1, {"tool": {"name": "catalog_lookup"}})
    second = body(3, {"auto": {}})
    r0, r1 = _audit([first, second], CONVERSE)
    # A break of kind parameter (the cache-key model: Anthropic's tool_choice rule for Claude)
    # that discards only the messages level: the tools and system are still cacheable.
    assert (r1.verdict, r1.kind, r1.parameter) == (
        Verdict.BREAK,
        "parameter",
        "toolConfig.toolChoice",
    )
    assert r1.divergence == "messages"
    tools_and_system = _audit([w.converse([], tools=tools)], CONVERSE)[0].total_tokens
    assert r1.ideal_cacheable_tokens == tools_and_system > 1024
    assert r0.total_tokens > tools_and_system
    assert r1.lost_tokens == r0.total_tokens - tools_and_system


@settings(max_examples=100)
@given(
    texts=st.lists(st.text(min_size=1, max_size=30), min_size=3, max_size=7),
    points=st.lists(st.booleans(), min_size=7, max_size=7),
    system_point=st.integers(min_value=0, max_value=2),
)
def test_cache_points_anywhere_never_break_a_growing_converse_conversation(
    texts: list[str], points: list[bool], system_point: int
):
    """P4 normalization for Converse: ``cachePoint`` blocks are breakpoints, not content."""
    system: list[dict[str, Any]] = [{"text": "Rules."}, {"text": "Be brief."}]
    system.insert(system_point, w.POINT)
    msgs = [w.c_user(t) if i % 2 == 0 else w.c_assistant(t) for i, t in enumerate(texts)]
    bodies = []
    for n in range(1, len(msgs) + 1, 2):
        prefix = [dict(m, content=list(m["content"])) for m in msgs[:n]]
        for m, point in zip(prefix, points, strict=False):
            if point:
                m["content"].append(w.POINT)
        bodies.append(w.converse(prefix, system=system))
    records = _audit(bodies, None)
    assert {r.provider for r in records} == {"bedrock-converse"}
    assert [r.verdict for r in records] == [Verdict.NEW] + [Verdict.STABLE] * (len(bodies) - 1)
    last = msgs[: 2 * (len(bodies) - 1) + 1]
    plain = _audit([w.converse(last, system=[x for x in system if x != w.POINT])], None)[0]
    assert records[-1].total_tokens == plain.total_tokens


@settings(max_examples=100)
@given(texts=st.lists(st.text(min_size=1, max_size=30), min_size=2, max_size=8))
def test_a_growing_gemini_conversation_is_always_stable(texts: list[str]):
    contents = [w.g_user(t) if i % 2 == 0 else w.g_model(t) for i, t in enumerate(texts)]
    bodies = [w.gemini(contents[:n]) for n in range(1, len(contents) + 1)]
    records = _audit(bodies, None)
    assert {r.provider for r in records} == {"gemini"}
    assert [r.verdict for r in records] == [Verdict.NEW] + [Verdict.STABLE] * (len(bodies) - 1)
    assert [r.compared_with for r in records] == [None, *range(len(bodies) - 1)]
