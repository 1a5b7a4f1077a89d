"""Property tests for the auditor's invariants (SPEC P4, V1, V3)."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import Verdict, audit_bodies, first_difference, normalize_body
from tests.examples import examples

from . import _bodies as b

TEXT = st.text(alphabet=string.ascii_letters + ' éü✓\n"\\', min_size=1, max_size=20)
KEYS = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6)


@st.composite
def tool_inputs(draw) -> str:
    keys = draw(st.lists(KEYS, unique=True, max_size=4))
    return jsonbytes.dumps({k: draw(st.integers() | TEXT) for k in keys}).decode()


@st.composite
def conversations(draw, min_size: int = 1) -> list[dict[str, Any]]:
    """Alternating user / assistant messages; assistants may call a tool with any key order."""
    n = draw(st.integers(min_value=min_size, max_value=7))
    out: list[dict[str, Any]] = []
    for i in range(n):
        if i % 2 == 0:
            texts = draw(st.lists(TEXT, min_size=1, max_size=3))
            out.append({"role": "user", "content": [{"type": "text", "text": t} for t in texts]})
        elif draw(st.booleans()):
            out.append(b.tool_use(f"toolu_{i}", "tool", draw(tool_inputs())))
        else:
            out.append(b.assistant(draw(TEXT)))
    return out


def _cached(messages: list[dict[str, Any]], where: list[int]) -> list[dict[str, Any]]:
    """Put a breakpoint on the last block of each message index in ``where``."""
    out = []
    for i, m in enumerate(messages):
        if i in where:
            blocks = [dict(x) for x in m["content"]]
            blocks[-1]["cache_control"] = b.CC
            m = {**m, "content": blocks}
        out.append(m)
    return out


@pytest.mark.full_count
@settings(max_examples=examples(full=300, sample=100))
@given(conversations(), st.data())
def test_appending_messages_never_reports_a_break(messages, data):
    cuts = sorted(data.draw(st.sets(st.integers(1, len(messages)), min_size=1)))
    bodies = []
    for n in cuts:
        where = data.draw(st.lists(st.integers(0, n - 1), max_size=3))
        bodies.append(b.anthropic(_cached(messages[:n], where)))
    report = audit_bodies(bodies)
    assert [r.verdict for r in report.requests] == [Verdict.NEW] + [Verdict.STABLE] * (
        len(cuts) - 1
    )
    assert report.conversations == 1
    assert all(r.lost_bytes == 0 and r.lost_tokens == 0 for r in report.requests)


@pytest.mark.full_count
@settings(max_examples=examples(full=300, sample=100))
@given(conversations(min_size=3), st.data())
def test_a_single_byte_change_in_an_earlier_message_is_found_at_that_byte(messages, data):
    n = len(messages)
    i = data.draw(st.integers(1, n - 2))
    spots = [
        (k, j)
        for k, block in enumerate(messages[i]["content"])
        if block["type"] == "text"
        for j, ch in enumerate(block["text"])
        if ch in string.ascii_letters
    ]
    assume(spots)
    k, j = data.draw(st.sampled_from(spots))
    text = messages[i]["content"][k]["text"]
    new_char = data.draw(st.sampled_from([c for c in string.ascii_letters if c != text[j]]))
    blocks = [dict(x) for x in messages[i]["content"]]
    blocks[k]["text"] = text[:j] + new_char + text[j + 1 :]
    mutated = [*messages[:i], {**messages[i], "content": blocks}, *messages[i + 1 :]]
    where = data.draw(st.lists(st.integers(0, n - 1), max_size=3))
    first = b.anthropic(_cached(messages[: n - 1], [n - 2]))
    original = b.anthropic(_cached(messages, where))
    second = b.anthropic(_cached(mutated, where))
    offset = next(x for x, (p, q) in enumerate(zip(original, second, strict=True)) if p != q)
    rec = audit_bodies([first, second]).requests[1]
    assert rec.verdict is Verdict.BREAK
    assert rec.first_break_offset == offset
    assert rec.path == f"messages[{i}].content[{k}].text"
    diff = first_difference(second, original)
    assert diff is not None and diff.offset_a == offset and diff.path == rec.path


JSON_LEAF = st.none() | st.booleans() | st.integers() | TEXT
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)


MARKERS = st.lists(
    st.tuples(
        st.sampled_from(["cache_control", "prompt_cache_breakpoint"]), st.integers(0, 3), JSON_LEAF
    ),
    max_size=2,
)


def _marked_dict(arg) -> tuple[dict[str, Any], dict[str, Any]]:
    pairs, markers = arg
    plain = {k: p for k, (p, _) in pairs.items()}
    items = [(k, m) for k, (_, m) in pairs.items()]
    for name, pos, value in markers:
        if all(name != k for k, _ in items):
            items.insert(pos % (len(items) + 1), (name, value))
    return plain, dict(items)


PAIRS = st.recursive(
    JSON_LEAF.map(lambda v: (v, v)),
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda ps: ([p for p, _ in ps], [m for _, m in ps]))
        | st.tuples(st.dictionaries(KEYS, inner, max_size=3), MARKERS).map(_marked_dict)
    ),
    max_leaves=10,
)
ROOTS = st.tuples(st.dictionaries(KEYS, PAIRS, min_size=1, max_size=3), MARKERS).map(_marked_dict)
"""A JSON object, and the same with cache_control / prompt_cache_breakpoint members added."""


@pytest.mark.full_count
@settings(max_examples=examples(full=200, sample=80))
@given(ROOTS, st.sampled_from([(",", ":"), (", ", ": ")]), st.booleans())
def test_normalization_deletes_exactly_the_breakpoint_members(pair, separators, ascii_only):
    plain, marked = pair
    dump = lambda v: json.dumps(v, separators=separators, ensure_ascii=ascii_only).encode()  # noqa: E731
    assert normalize_body(dump(marked)) == dump(plain)
    assert first_difference(dump(marked), dump(plain)) is None
