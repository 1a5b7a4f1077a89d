from __future__ import annotations

import base64
import json
import warnings

import pytest

from llmcore.archive import ITEM_TYPES, ConversationState, Item, decode, encode
from llmcore.archive.state import Feedback
from llmcore.errors import ArchiveReadError
from llmcore.facts import SentFacts, TurnFacts
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.usage import Cost, Usage, UsageTotals

from .helpers import FIXTURE, conversation, png


def test_fixture_decodes_with_real_decoder():
    state = decode(FIXTURE.read_bytes())
    assert state.provider == "anthropic"
    assert state.model == "claude-opus-5-5"
    assert [m.role for m in state.history] == ["user", "assistant", "tool", "user", "assistant"]
    # The image has no file: it reads as an omitted image (A7).
    first = state.history[0].content
    assert first[0] == Text(text="# This turn\nMode: Just do it\n\nMake a card")
    assert first[1] == Text.omitted_image("image/png")
    call = state.history[1].content[1]
    assert call == ToolCall(id="toolu_1", name="batch_design", arguments=b'{"operations":"[]"}')
    result = state.history[2].content[0]
    assert result == ToolResult(
        call_id="toolu_1", tool_name="batch_design", content=b'{"created":[]}', is_error=False
    )
    assert state.history[3].content[1] == Text.omitted_image("image/png")
    assert [i.type for i in state.items] == ["user", "tool", "assistant"]
    assert state.items[1].fields()["statusText"] == "1 created"
    assert state.items[1].fields()["detail"] == "arguments:\n{}"
    assert state.feedback == (
        ("6F1C2A1E-2B1B-4C7A-9E43-1D2F3A4B5C60", Feedback(rating="good", reasons=())),
    )
    assert state.usage.total == Usage(input=2500, output=80)
    assert state.usage.last_round == Usage(input=1500, output=40)
    assert state.usage.cost == Cost(kind="estimated", dollars=0.0213)
    assert state.sent_facts == SentFacts(turns=(TurnFacts(message=0),))


def test_fixture_image_reads_when_its_file_is_supplied():
    data = b"any bytes"
    digest = "9f2c0d8e4b1a7c3e5f6a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e"
    state = decode(
        FIXTURE.read_bytes(), load_image=lambda sha, mime: data if sha == digest else None
    )
    assert state.history[0].content[1] == Image(data=data, mime_type="image/png")


def test_fixture_round_trip_is_a_byte_fixed_point():
    once = encode(decode(FIXTURE.read_bytes()))
    twice = encode(decode(once))
    assert once == twice
    assert encode(decode(twice)) == twice
    # Same data as the hand-formatted file, apart from the fileless image.
    original = json.loads(FIXTURE.read_bytes())
    original["history"][0]["content"][1] = {"mimeType": "image/png", "type": "imageOmitted"}
    assert json.loads(once) == original


def test_encoding_form_is_sorted_indented_with_trailing_newline():
    data = encode(decode(FIXTURE.read_bytes()))
    assert data.startswith(
        b'{\n  "approvalCards": {},\n  "estimatedCost": {\n    "dollars": 0.0213,'
    )
    assert data.endswith(b"\n}\n")
    keys = list(json.loads(data))
    assert keys == sorted(keys)
    assert len(keys) == 16


def test_unchanged_conversation_encodes_to_identical_bytes():
    state = conversation(5)
    assert encode(state) == encode(state)
    images = {p.sha256: p.data for m in state.history for p in m.content if isinstance(p, Image)}
    back = decode(encode(state), load_image=lambda sha, mime: images.get(sha))
    assert back == state
    assert encode(back) == encode(state)


def test_every_item_type_keeps_host_fields():
    items = tuple(
        Item.make(
            id=f"id-{kind}",
            type=kind,
            detail="details\nhere",
            citations=[{"url": "https://example.com", "title": "É"}],
            zHost={"nested": [1, 2.5, None, True, "x"], "b": {"a": 1}},
            aHost=10**30,
        )
        for kind in sorted(ITEM_TYPES)
    )
    assert len(items) == 13
    state = ConversationState(items=items, history=(Message.user("hi"),))
    back = decode(encode(state))
    assert back.items == items
    fields = back.items[0].fields()
    assert fields["zHost"] == {"b": {"a": 1}, "nested": [1, 2.5, None, True, "x"]}
    assert fields["aHost"] == 10**30
    assert fields["citations"] == [{"title": "É", "url": "https://example.com"}]


def test_tool_bytes_non_utf8_use_base64_and_strings_are_kept_exactly():
    weird_args = b'{"b": 1,  "a":"\\u00e9"}'  # spacing and key order kept as bytes
    state = ConversationState(
        history=(
            Message.user("go"),
            Message.assistant(
                ToolCall(id="c1", name="t", arguments=weird_args),
                ToolCall(id="c2", name="t", arguments=b"\xff\xfe not utf8"),
            ),
            Message.tool(
                ToolResult(call_id="c1", tool_name="t", content=b"\x80\x81", is_error=True),
                ToolResult(call_id="c2", tool_name="t", content=b""),
            ),
        )
    )
    data = encode(state)
    doc = json.loads(data)
    blocks = doc["history"][1]["content"]
    assert blocks[0]["arguments"] == weird_args.decode()
    assert base64.b64decode(blocks[1]["argumentsBase64"]) == b"\xff\xfe not utf8"
    assert "arguments" not in blocks[1]
    results = doc["history"][2]["content"]
    assert base64.b64decode(results[0]["contentBase64"]) == b"\x80\x81"
    assert results[0]["isError"] is True
    assert results[1]["content"] == ""
    assert decode(data) == state


def test_usage_optional_keys_written_only_when_present():
    plain = UsageTotals().record(Usage(input=1, output=2), Cost(kind="reported", dollars=0.25))
    doc = json.loads(encode(ConversationState(usage=plain)))
    assert doc["usage"] == {
        "cacheRead": 0,
        "cacheWrite": 0,
        "input": 1,
        "output": 2,
        "webSearchRequests": 0,
    }
    assert doc["estimatedCost"] == {"dollars": 0.25, "kind": "reported"}
    full = Usage(
        input=1, cache_write=5, cache_write_1h=3, reported_cost=0.01, web_search_requests=2
    )
    totals = UsageTotals().record(full, Cost(kind="not_billed"))
    data = encode(ConversationState(usage=totals))
    doc = json.loads(data)
    assert doc["lastRoundUsage"]["cacheWrite1h"] == 3
    assert doc["lastRoundUsage"]["reportedCost"] == 0.01
    assert doc["estimatedCost"] == {"kind": "notBilled"}
    assert decode(data).usage == totals


@pytest.mark.parametrize(
    ("kind", "disk"),
    [
        ("reported", "reported"),
        ("estimated", "estimated"),
        ("unknown", "unknown"),
        ("not_billed", "notBilled"),
    ],
)
def test_cost_kinds_round_trip(kind, disk):
    dollars = 1.5 if kind in ("reported", "estimated") else None
    state = ConversationState(usage=UsageTotals(cost=Cost(kind=kind, dollars=dollars)))
    data = encode(state)
    assert json.loads(data)["estimatedCost"]["kind"] == disk
    assert decode(data).usage.cost == Cost(kind=kind, dollars=dollars)


def test_sent_facts_sections_round_trip():
    facts = SentFacts(
        turns=(TurnFacts(message=0), TurnFacts(message=4, sections=(("Design system", "a" * 64),)))
    )
    data = encode(ConversationState(sent_facts=facts))
    assert json.loads(data)["sentFacts"] == [
        {"message": 0},
        {"message": 4, "sections": {"Design system": "a" * 64}},
    ]
    assert decode(data).sent_facts == facts


def test_cards_feedback_queued_unsent_round_trip():
    state = ConversationState(
        skill_cards=(("i1", '{"state":"accepted"}'),),
        lint_rule_cards=(("i2", "[1,2]"),),
        approval_cards=(("i3", '"approved"'),),
        resolved_cards=("i3", "i1"),
        feedback=(("i9", Feedback(rating="bad", reasons=("wrong", "slow"))),),
        queued=("later",),
        unsent=("draft back",),
    )
    assert decode(encode(state)) == state


def _fixture_doc():
    return json.loads(FIXTURE.read_bytes())


def _mutate(path, value):
    doc = _fixture_doc()
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return json.dumps(doc).encode()


BAD_FILES = [
    (b"", "$", "not JSON"),
    (b"\xff\xfe{}", "$", "not UTF-8"),
    (b"[1, 2]", "$", "expected an object"),
    (b'{"formatVersion": 1,', "$", "not JSON"),
    (b'{"formatVersion": 2}', "$.formatVersion", "newer"),
    (b'{"formatVersion": 0}', "$.formatVersion", "unknown formatVersion"),
    (b'{"formatVersion": "1"}', "$.formatVersion", "expected an integer"),
    (b'{"formatVersion": true}', "$.formatVersion", "expected an integer"),
    (b'{"provider": "x"}', "$", "missing field 'formatVersion'"),
    (b"[" * 100_000 + b"]" * 100_000, "$", "nested too deeply"),
    (_mutate(["extra"], 1), "$.extra", "unknown field"),
    (_mutate(["items"], {}), "$.items", "expected an array"),
    (_mutate(["items", 0, "type"], "banner"), "$.items[0].type", "unknown item type"),
    (_mutate(["items", 0, "id"], 5), "$.items[0].id", "string"),
    (_mutate(["items", 1, "detail"], []), "$.items[1].detail", "string"),
    (_mutate(["items", 1, "citations"], "x"), "$.items[1].citations", "array"),
    (
        _mutate(["history", 0, "content", 0, "type"], "video"),
        "$.history[0].content[0].type",
        "unknown block type",
    ),
    (
        _mutate(["history", 0, "content", 0, "text"], None),
        "$.history[0].content[0].text",
        "found null",
    ),
    (
        _mutate(["history", 0, "content", 0, "extra"], 1),
        "$.history[0].content[0].extra",
        "unknown field",
    ),
    (
        _mutate(["history", 0, "content", 1, "sha256"], "../../etc/passwd"),
        "$.history[0].content[1].sha256",
        "hex",
    ),
    (
        _mutate(["history", 0, "content", 1, "sha256"], "a/" + "0" * 62),
        "$.history[0].content[1].sha256",
        "hex",
    ),
    (_mutate(["history", 0, "role"], "system"), "$.history[0].role", "user, assistant or tool"),
    (_mutate(["history", 0, "content"], []), "$.history[0]", "non-empty"),
    (
        _mutate(["history", 1, "content", 1, "arguments"], 5),
        "$.history[1].content[1].arguments",
        "string",
    ),
    (
        _mutate(["history", 1, "content", 1, "argumentsBase64"], "AA=="),
        "$.history[1].content[1]",
        "exactly one",
    ),
    (
        _mutate(["history", 1, "content", 1, "arguments"], KeyError),
        "$.history[1].content[1]",
        "exactly one",
    ),
    (
        _mutate(["history", 2, "content", 0, "isError"], "no"),
        "$.history[2].content[0].isError",
        "true or false",
    ),
    (
        _mutate(["history", 2, "content", 0, "isError"], KeyError),
        "$.history[2].content[0]",
        "missing field",
    ),
    (_mutate(["history", 2, "role"], "user"), "$.history[2]", "cannot hold"),
    (_mutate(["usage", "input"], -1), "$.usage.input", "non-negative"),
    (_mutate(["usage", "input"], 1.5), "$.usage.input", "integer"),
    (_mutate(["usage", "cacheRead"], KeyError), "$.usage", "missing field"),
    (_mutate(["usage", "reportedCost"], "1"), "$.usage.reportedCost", "number"),
    (_mutate(["estimatedCost", "kind"], "free"), "$.estimatedCost.kind", "expected reported"),
    (_mutate(["estimatedCost", "dollars"], KeyError), "$.estimatedCost", "needs dollars"),
    (
        _mutate(["feedback", "6F1C2A1E-2B1B-4C7A-9E43-1D2F3A4B5C60", "rating"], "meh"),
        "$.feedback.6F1C2A1E-2B1B-4C7A-9E43-1D2F3A4B5C60.rating",
        "good",
    ),
    (_mutate(["sentFacts", 0, "message"], "0"), "$.sentFacts[0].message", "integer"),
    (_mutate(["sentFacts", 0, "sections"], {"a": 1}), "$.sentFacts[0].sections.a", "string"),
    (_mutate(["queued"], [1]), "$.queued[0]", "string"),
    (_mutate(["resolvedCards"], "x"), "$.resolvedCards", "array"),
    (_mutate(["skillCards"], []), "$.skillCards", "object"),
    (
        b'{"formatVersion": 1, "estimatedCost": {"kind": "estimated", "dollars": 1e400}}',
        "$.estimatedCost.dollars",
        "out of range",
    ),
    (
        b'{"formatVersion": 1, "items": [{"id": "a", "type": "user", "x": 1e999}]}',
        "$.items[0].x",
        "out of range",
    ),
    (b'{"formatVersion": 1, "usage": {"input": ' + b"9" * 5000 + b"}}", "$", "not JSON"),
    (
        b'{"formatVersion": 1, "history": [{"role": "assistant", "content": [{"type": "toolCall", '
        b'"id": "a", "name": "b", "arguments": "\\ud800"}]}]}',
        "$.history[0].content[0].arguments",
        "lone surrogate",
    ),
    (
        b'{"formatVersion": 1, "history": [{"role": "assistant", "content": [{"type": "toolCall", '
        b'"id": "a", "name": "b", "arguments": "{}"}]}, {"role": "tool", "content": [{"type": '
        b'"toolResult", "callID": "a", "toolName": "b", "isError": false, "content": "\\udfff"}]}]}',
        "$.history[1].content[0].content",
        "lone surrogate",
    ),
    (
        b'{"formatVersion": 1, "history": [{"role": "tool", "content": [{"type": "toolResult", '
        b'"callID": "a", "toolName": "b", "isError": false, "content": 7}]}]}',
        "$.history[0].content[0].content",
        "expected a string",
    ),
    (
        b'{"formatVersion": 1, "history": [{"role": "assistant", "content": [{"type": "toolCall", '
        b'"id": "a", "name": "b", "argumentsBase64": "@@@"}]}]}',
        "$.history[0].content[0].argumentsBase64",
        "base64",
    ),
]


@pytest.mark.parametrize(("data", "location", "message"), BAD_FILES)
def test_bad_files_raise_typed_error_naming_the_path(data, location, message):
    with pytest.raises(ArchiveReadError) as info:
        decode(data)
    assert info.value.location == location
    assert message in info.value.message


def test_tool_results_read_as_text_are_known_to_be_valid_utf8(monkeypatch):
    import llmcore.messages as messages

    results = (
        ToolResult(call_id="a", tool_name="b", content='日本 "q"\n'.encode()),
        ToolResult(call_id="a", tool_name="b", content=b"\xff\xfe not UTF-8"),
    )
    history = (
        Message.assistant(ToolCall(id="a", name="b", arguments=b"{}")),
        Message.tool(results[0]),
        Message.assistant(ToolCall(id="a", name="b", arguments=b"{}")),
        Message.tool(results[1]),
    )
    checked = []
    real = messages._is_utf8
    monkeypatch.setattr(messages, "_is_utf8", lambda data: checked.append(data) or real(data))
    read = decode(encode(ConversationState(history=history))).history
    assert read == history
    text_result, base64_result = read[1].content[0], read[3].content[0]
    assert isinstance(text_result, ToolResult) and isinstance(base64_result, ToolResult)
    assert text_result.utf8_content is text_result.content and checked == []
    assert base64_result.utf8_content == "\ufffd\ufffd not UTF-8".encode()
    assert checked == [base64_result.content]  # stored as base64: checked when first sent


def test_missing_top_level_keys_read_as_defaults():
    state = decode(b'{"formatVersion": 1}')
    assert state == ConversationState()


def test_deep_host_nesting_is_refused_with_its_path():
    value: list = []
    for _ in range(300):
        value = [value]
    data = json.dumps({"formatVersion": 1, "skillCards": {"k": value}}).encode()
    with pytest.raises(ArchiveReadError) as info:
        decode(data)
    assert info.value.location.startswith("$.skillCards.k[0]")
    assert "nested deeper" in info.value.message


def test_image_type_contradicted_by_signature_reads_without_warning():
    data = png(b"abc")
    import hashlib

    digest = hashlib.sha256(data).hexdigest()
    doc = {
        "formatVersion": 1,
        "history": [
            {
                "role": "user",
                "content": [{"type": "image", "sha256": digest, "mimeType": "image/jpeg"}],
            }
        ],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        state = decode(json.dumps(doc).encode(), load_image=lambda sha, mime: data)
    assert state.history[0].content[0] == Image(data=data, mime_type="image/png")


def test_fragment_cache_gives_the_same_bytes_as_a_plain_encode():
    from llmcore.archive.codec import FragmentCache
    from llmcore.archive.images import kept_images

    cache = FragmentCache()
    state = conversation(6)
    assert encode(state, fragments=cache) == encode(state)
    assert encode(state, fragments=cache) == encode(state)  # served from the cache
    # An image dropped by the budget changes its message's fragment.
    kept = kept_images(state.history, budget=200).kept
    assert encode(state, kept_images=kept, fragments=cache) == encode(state, kept_images=kept)
    grown = conversation(7)
    assert encode(grown, fragments=cache) == encode(grown)
