"""Theoretical maximum cacheable prefix (SPEC V1, V5) with token numbers worked out by hand.

Token rule (llmcore.audit.estimate): a run of letters counts 1 token plus (len - 3) / 2.5
beyond 3 letters for Anthropic (OpenAI: 1 plus (len - 4) / 2.5); each item adds 5 tokens
(OpenAI 3). A system prompt of 4,400 ``S`` counts 1 + 4397 / 2.5 = 1759.8 -> 1760 + 5 = 1765.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import tokens
from llmcore.audit import _maximum, audit_bodies, audit_paths, minimum_tokens
from tests.examples import examples

from . import _bodies as b

BIG = "S" * 4400
SYSTEM = 1765  # see the module docstring
HELLO = 2 + 5  # "hello": 1 + (5 - 3) / 2.5 = 1.8 -> 2, + 5


def _anthropic_pair(model: str, cache: bool = True) -> list[bytes]:
    """Two requests of one conversation, each with a breakpoint on its newest message."""
    m1 = [b.user("hello", cache=cache)]
    m2 = [b.user("hello"), b.assistant("hi there"), b.user("more", cache=cache)]
    return [
        b.anthropic(m1, system=None, model=model, extra={"system": BIG}),
        b.anthropic(m2, system=None, model=model, extra={"system": BIG}),
    ]


def test_anthropic_whole_items_above_the_minimum():
    report = audit_bodies(_anthropic_pair("claude-sonnet-4-5"))
    first, second = report.requests
    assert first.total_tokens == SYSTEM + HELLO
    assert first.max_cacheable_tokens == 0
    # the second request's breakpoint reaches back (within 20 blocks) to the prefix the first
    # request's breakpoint wrote: system + "hello"
    assert second.max_cacheable_tokens == first.total_tokens
    assert second.ideal_cacheable_tokens == first.total_tokens


def test_anthropic_nothing_below_the_model_minimum():
    assert minimum_tokens("claude-opus-4-5-20251101", True) == 4096
    assert minimum_tokens("claude-3-5-haiku-20241022", True) == 2048
    assert minimum_tokens("claude-sonnet-4-20250514", True) == 1024
    assert minimum_tokens("anthropic/claude-haiku-4-5", True) == 4096
    report = audit_bodies(_anthropic_pair("claude-opus-4-5"))
    assert [r.max_cacheable_tokens for r in report.requests] == [0, 0]


def test_openai_counts_the_partial_item_without_a_128_step_floor():
    system = {"role": "system", "content": "S" * 4400}  # 1 + 4396 / 2.5 -> 1760, + 3 = 1763
    hello = {"role": "user", "content": "hello"}  # 1 + 0.4 -> 2, + 3 = 5
    first = b.chat([system, hello])
    second = b.chat(
        [system, hello, {"role": "assistant", "content": "hey"}, {"role": "user", "content": "go"}]
    )
    report = audit_bodies([first, second])
    assert report.requests[0].total_tokens == 1768
    # the whole first request is shared: 1768 tokens, not floored to 1,024 + 128 * 5 = 1664
    # (recorded usage reads 4,012 of 4,020 tokens, off that grid)
    assert report.requests[1].max_cacheable_tokens == 1768


def test_openai_nothing_below_1024_for_openai_models_only():
    small = [{"role": "system", "content": "short"}, {"role": "user", "content": "hello"}]
    longer = [*small, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "go"}]
    gpt = audit_bodies([b.chat(small), b.chat(longer)]).requests[1]
    assert gpt.max_cacheable_tokens == 0
    deepseek = audit_bodies(
        [b.chat(small, model="deepseek-chat"), b.chat(longer, model="deepseek-chat")]
    ).requests[1]
    assert deepseek.max_cacheable_tokens == deepseek.ideal_cacheable_tokens > 0


def test_other_model_or_provider_shares_nothing():
    pair = _anthropic_pair("claude-sonnet-4-5")
    other = _anthropic_pair("claude-sonnet-4-0")[1]
    report = audit_bodies([pair[0], other])
    assert report.requests[1].max_cacheable_tokens == 0


def _timed_cassette(path: Path, bodies: list[bytes], times: list[str]) -> Path:
    interactions = [
        {
            "request": {
                "body": body.decode(),
                "method": "POST",
                "uri": "https://api.anthropic.com/v1/messages",
            },
            "response": {"status": {"code": 200}},
            "recorded_at": when,
        }
        for body, when in zip(bodies, times, strict=True)
    ]
    path.write_text(yaml.safe_dump({"interactions": interactions}))
    return path


def test_ttl_applies_only_with_timestamps(tmp_path: Path):
    pair = _anthropic_pair("claude-sonnet-4-5")
    written = audit_bodies(pair[:1]).requests[0].total_tokens
    near = _timed_cassette(
        tmp_path / "near.yaml", pair, ["2026-01-01T10:00:00Z", "2026-01-01T10:04:59Z"]
    )
    far = _timed_cassette(
        tmp_path / "far.yaml", pair, ["2026-01-01T10:00:00Z", "2026-01-01T10:05:01Z"]
    )
    assert audit_paths([near]).requests[1].max_cacheable_tokens == written
    assert audit_paths([far]).requests[1].max_cacheable_tokens == 0
    jsonl = tmp_path / "untimed.jsonl"
    jsonl.write_bytes(b"\n".join(pair))
    assert audit_paths([jsonl]).requests[1].max_cacheable_tokens == written


def test_ttl_one_hour_and_refresh_on_hit(tmp_path: Path):
    cc = {"type": "ephemeral", "ttl": "1h"}
    m1 = [{"role": "user", "content": [{"type": "text", "text": "hello", "cache_control": cc}]}]
    body = b.anthropic(m1, system=None, extra={"system": BIG})
    path = _timed_cassette(
        tmp_path / "h.yaml", [body, body], ["2026-01-01T10:00:00Z", "2026-01-01T10:50:00Z"]
    )
    assert audit_paths([path]).requests[1].max_cacheable_tokens > 0
    pair = _anthropic_pair("claude-sonnet-4-5")
    written = audit_bodies(pair[:1]).requests[0].total_tokens
    times = ["2026-01-01T10:00:00Z", "2026-01-01T10:04:00Z", "2026-01-01T10:08:00Z"]
    refreshed = _timed_cassette(tmp_path / "r.yaml", [pair[0], pair[0], pair[1]], times)
    maxima = [r.max_cacheable_tokens for r in audit_paths([refreshed]).requests]
    assert maxima == [0, written, written]


@settings(max_examples=200, deadline=None)
@given(
    siblings=st.lists(
        st.tuples(
            st.text("ab", max_size=12),
            st.sampled_from(["messages", "tools"]),
            st.sampled_from([None, 5.0, 20.0]),
        ),
        max_size=12,
    ),
    data=st.text("ab", max_size=12),
    now=st.sampled_from([None, 10.0]),
)
def test_openai_partial_match_is_the_longest_shared_start_of_a_live_sibling(
    siblings: list[tuple[str, str, float | None]], data: str, now: float | None
) -> None:
    root = _maximum._Node(b"")
    for n, (text, section, expiry) in enumerate(siblings):
        child = _maximum._Node(text.encode())
        child.expiry = math.inf if expiry is None else expiry
        root.children[(section, n)] = child
    expected = max(
        (
            tokens.common_prefix_len(child.data, data.encode())
            for key, child in root.children.items()
            if isinstance(key, tuple)
            and key[0] == "messages"
            and (now is None or child.expiry >= now)
        ),
        default=0,
    )
    tok = (("messages", -1), data.encode(), 40, "messages")
    want = expected * 40 // len(data) if data else 0
    assert _maximum._partial(root, tok, now) == want


def _reference_add(tries: dict, entry: _maximum.Entry) -> _maximum.Maximum:
    """The maximum as first written: every node of the walk raised, no bisection."""
    root = tries.setdefault((entry.provider, entry.model), _maximum._Node(b""))
    now = entry.timestamp
    path = [root]
    for key in entry.keys:
        child = path[-1].children.get(key)
        if child is None or (now is not None and child.expiry < now):
            break
        path.append(child)
    cum = [0]
    for tok in entry.toks:
        cum.append(cum[-1] + tok[2])
    shared = cum[len(path) - 1]
    if entry.anthropic:
        ideal = shared if shared >= entry.minimum else 0
    else:
        k = len(path) - 1
        partial = _maximum._partial_scan(path[-1], entry.toks[k], now) if k < len(entry.toks) else 0
        ideal = shared + partial if shared + partial >= entry.minimum else 0
    marks = sorted(set(entry.marks))
    written = marks
    if not entry.breakpoints:
        maximum = ideal
    else:
        maximum, hits = _maximum._read(path, cum, marks, now)
        written = [*marks, *hits]
    _reference_insert(entry, path, [m for m in written if cum[m + 1] >= entry.minimum])
    return _maximum.Maximum(maximum, ideal, len(marks))


def _reference_insert(entry: _maximum.Entry, path: list, written: list[int]) -> None:
    now = entry.timestamp
    expiry = math.inf if now is None else now + entry.ttl
    for node in path[1:]:
        node.expiry = max(node.expiry, expiry)
    for k in written:
        if k < len(path) - 1:
            path[k + 1].written = max(path[k + 1].written, expiry)
    node = path[-1]
    for k in range(len(path) - 1, len(entry.keys)):
        child = node.children.get(entry.keys[k])
        if child is None:
            child = node.children[entry.keys[k]] = _maximum._Node(entry.toks[k][1])
        child.expiry = max(child.expiry, expiry)
        if k in written:
            child.written = max(child.written, expiry)
        node = child


_REQUEST = st.tuples(
    st.lists(st.sampled_from(["s", "t", "u", "v"]), max_size=6),  # items: a few shared texts
    st.sampled_from(["m1", "m2"]),
    st.one_of(st.none(), st.integers(0, 40).map(float)),  # timestamps, in any order
    st.booleans(),  # the whole-item rule
    st.booleans(),  # breakpoints
    st.lists(st.integers(0, 5), max_size=5),  # marked items (indices past the end ignored)
    st.sampled_from([5.0, 15.0]),  # ttl
)


@settings(max_examples=examples(2000, 200), deadline=None)
@given(requests=st.lists(_REQUEST, max_size=14), minimum=st.sampled_from([0, 3, 8]))
@pytest.mark.full_count
def test_maxima_equal_the_walk_that_raises_every_node(requests: list, minimum: int) -> None:
    ours = _maximum.Maxima()
    reference: dict = {}
    for texts, model, now, anthropic, breakpoints, marks, ttl in requests:
        toks = tuple(
            ((section, text), text.encode() * 3, 2, section)
            for text in texts
            for section in ["messages"]
        )
        entry = _maximum.Entry(
            provider="p",
            model=model,
            timestamp=now,
            anthropic=anthropic,
            breakpoints=breakpoints and anthropic,
            keys=tuple(tok[0] for tok in toks),
            toks=toks,
            marks=tuple(m for m in marks if m < len(toks)),
            minimum=minimum,
            ttl=ttl,
        )
        assert ours.add(entry) == _reference_add(reference, entry)


@settings(max_examples=examples(1000, 80), deadline=None)
@given(
    siblings=st.lists(
        st.tuples(
            st.text("abc", max_size=10),
            st.sampled_from(["messages", "tools", None]),  # None: a key that is no tuple
            st.sampled_from([None, 5.0, 20.0]),
        ),
        min_size=_maximum._SCAN_BELOW,
        max_size=_maximum._FANOUT_LIMIT + 80,
    ),
    queries=st.lists(
        st.tuples(st.text("abc", min_size=1, max_size=10), st.sampled_from([None, 10.0])),
        min_size=1,
        max_size=4,
    ),
    split=st.integers(0, 100),
    direct=st.booleans(),
)
@pytest.mark.full_count
def test_the_sorted_window_finds_what_looking_at_every_sibling_finds(
    siblings: list[tuple[str, str | None, float | None]],
    queries: list[tuple[str, float | None]],
    split: int,
    direct: bool,
) -> None:
    """Children added before the window is sorted and after (by ``add``, or straight into the
    dict), past the fan-out limit, expired, of another section, with equal bytes."""
    root = _maximum._Node(b"")
    cut = len(siblings) * split // 100

    def grow(part: list[tuple[str, str | None, float | None]], start: int) -> None:
        for n, (text, section, expiry) in enumerate(part, start):
            child = _maximum._Node(text.encode())
            child.expiry = math.inf if expiry is None else expiry
            key = n if section is None else (section, n)
            if direct:
                root.children[key] = child
            else:
                root.add(key, child)

    grow(siblings[:cut], 0)
    for text, now in queries:
        tok = (("messages", -1), text.encode(), 40, "messages")
        if len(root.children) >= _maximum._SCAN_BELOW:
            assert _maximum._partial(root, tok, now) == _maximum._partial_scan(root, tok, now)
    grow(siblings[cut:], cut)
    for text, now in queries:
        tok = (("messages", -1), text.encode(), 40, "messages")
        assert _maximum._partial(root, tok, now) == _maximum._partial_scan(root, tok, now)
