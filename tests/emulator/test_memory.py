"""Bounded cache memory: a least-recently-used budget by estimated bytes over all stores."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.emulator import Engine, ManualClock, Rejection
from llmcore.emulator.scan import MeasureMemo, scan_body
from llmcore.emulator.store import (
    DEFAULT_CACHE_BYTES,
    KEY_ENTRY_BYTES,
    KeyStore,
    MemoryBudget,
    PromptStore,
    ResponseStore,
)
from llmcore.tokens import common_prefix_len
from tests.emulator.helpers import RESPONSES_TOOLS, SONNET, ephemeral, text_block
from tests.examples import examples

KEY = KEY_ENTRY_BYTES + 32  # one Anthropic entry with a SHA-256 key
TTL = 300.0


def _key(n: int) -> bytes:
    return n.to_bytes(32, "big")


def test_default_budget_is_128_mib() -> None:
    assert DEFAULT_CACHE_BYTES == 128 * 1024 * 1024
    assert MemoryBudget().limit == DEFAULT_CACHE_BYTES
    assert Engine().budget.limit == DEFAULT_CACHE_BYTES
    with pytest.raises(ValueError):
        MemoryBudget(0)


def test_key_store_evicts_the_least_recently_used_by_bytes() -> None:
    budget = MemoryBudget(3 * KEY)
    store = KeyStore(budget)
    for n in range(3):
        store.put(_key(n), 0.0, TTL)
    assert budget.used == 3 * KEY and len(store) == 3
    store.put(_key(3), 0.0, TTL)  # one entry over: the oldest goes
    assert not store.live(_key(0), 1.0)
    assert all(store.live(_key(n), 1.0) for n in (1, 2, 3))
    assert budget.used == 3 * KEY and budget.evictions == 1


def test_a_hit_refreshes_recency() -> None:
    budget = MemoryBudget(3 * KEY)
    store = KeyStore(budget)
    for n in range(3):
        store.put(_key(n), 0.0, TTL)
    assert store.live(_key(0), 1.0)  # a hit: 0 is now the most recently used
    store.put(_key(3), 1.0, TTL)
    assert store.live(_key(0), 2.0)
    assert not store.live(_key(1), 2.0)


def test_a_refresh_counts_as_use() -> None:
    budget = MemoryBudget(3 * KEY)
    store = KeyStore(budget)
    for n in range(3):
        store.put(_key(n), 0.0, TTL)
    store.put(_key(0), 1.0, TTL)  # refresh, same size: nothing evicted
    assert budget.used == 3 * KEY and budget.evictions == 0
    store.put(_key(3), 1.0, TTL)
    assert store.live(_key(0), 2.0) and not store.live(_key(1), 2.0)


def test_prompt_store_is_charged_its_item_bytes() -> None:
    budget = MemoryBudget(10_000)
    store = PromptStore(budget)
    big = (b"a" * 6000,)
    store.put(b"salt", big, (1500,), 0.0, TTL)
    assert 6000 < budget.used < 10_000
    store.put(b"other", (b"b" * 6000,), (1500,), 0.0, TTL)  # 12 KB > 10 KB: the first goes
    assert store.best(b"salt", big, (1500,), 1.0) == (0, None)
    assert store.best(b"other", (b"b" * 6000,), (1500,), 1.0)[0] == 1500
    assert len(store) == 1


def test_prompt_store_touch_refreshes_recency() -> None:
    budget = MemoryBudget(3 * 2000)
    store = PromptStore(budget)
    prompts = [(bytes([65 + n]) * 1500,) for n in range(3)]
    for n, items in enumerate(prompts):
        store.put(b"s%d" % n, items, (375,), 0.0, TTL)
    _, first = store.best(b"s0", prompts[0], (375,), 1.0)
    assert first is not None
    store.touch(b"s0", first, 1.0)
    store.put(b"s3", (b"z" * 1500,), (375,), 1.0, TTL)
    assert store.best(b"s0", prompts[0], (375,), 2.0)[0] == 375
    assert store.best(b"s1", prompts[1], (375,), 2.0) == (0, None)


def test_one_budget_is_shared_across_stores() -> None:
    budget = MemoryBudget(4 * KEY)
    keys = KeyStore(budget)
    prompts = PromptStore(budget)
    for n in range(3):
        keys.put(_key(n), 0.0, TTL)
    prompts.put(b"salt", (b"p" * KEY,), (10,), 0.0, TTL)  # 832 bytes: two keys must go
    assert budget.used <= budget.limit
    assert [keys.live(_key(n), 1.0) for n in range(3)] == [False, False, True]


def test_an_entry_larger_than_the_budget_is_not_kept() -> None:
    budget = MemoryBudget(1000)
    store = PromptStore(budget)
    store.put(b"salt", (b"a" * 5000,), (1250,), 0.0, TTL)
    assert len(store) == 0 and budget.used == 0


def test_clear_and_expiry_give_the_bytes_back() -> None:
    budget = MemoryBudget(DEFAULT_CACHE_BYTES)
    keys, prompts, responses = KeyStore(budget), PromptStore(budget), ResponseStore(budget)
    keys.put(_key(1), 0.0, TTL)
    prompts.put(b"salt", (b"a" * 100,), (25,), 0.0, TTL)
    responses.put("resp_1", [{"type": "message"}], 500)
    prompts.put(b"salt", (b"b" * 100,), (25,), 10_000.0, TTL)  # the expired one is dropped
    assert len(prompts) == 1
    keys.clear()
    prompts.clear()
    responses.clear()
    assert budget.used == 0 and len(budget) == 0


def _anthropic(n: int) -> bytes:
    body = {
        "model": SONNET,
        "max_tokens": 100,
        "system": [text_block(1100, f"conv{n}", cache_control=ephemeral())],
        "messages": [{"role": "user", "content": f"hello {n}"}],
    }
    return jsonbytes.dumps(body)


def test_many_conversations_stay_within_the_budget() -> None:
    engine = Engine(clock=ManualClock(), cache_bytes=20 * KEY)
    for n in range(200):
        engine.anthropic_messages(_anthropic(n), "org").commit()
    assert engine.budget.used <= 20 * KEY
    assert len(engine.anthropic.store) <= 20
    repeat = engine.anthropic_messages(_anthropic(199), "org")  # the newest is still cached
    assert b'"cache_read_input_tokens":1100' in repeat.body


def _first(n: int) -> bytes:
    body = {"model": "gpt-4o", "instructions": f"{n}:" + "i" * 6000, "input": "hi"}
    return jsonbytes.dumps({**body, "tools": RESPONSES_TOOLS})


def _follow(first: dict[str, Any], previous: str) -> bytes:
    output = {
        "type": "function_call_output",
        "call_id": first["output"][0]["call_id"],
        "output": "ok",
    }
    body = {
        "model": "gpt-4o",
        "previous_response_id": previous,
        "input": [output],
        "tools": RESPONSES_TOOLS,
    }
    return jsonbytes.dumps(body)


def test_an_evicted_previous_response_is_not_found_like_an_unknown_id() -> None:
    engine = Engine(clock=ManualClock(), cache_bytes=64 * 1024)
    first = json.loads(engine.responses(_first(0), "org").body)
    engine.responses(_follow(first, first["id"]), "org")  # found while stored
    for n in range(1, 40):  # other conversations push it out
        engine.responses(_first(n), "org").commit()
    assert engine.budget.used <= 64 * 1024
    with pytest.raises(Rejection) as evicted:
        engine.responses(_follow(first, first["id"]), "org")
    with pytest.raises(Rejection) as unknown:
        engine.responses(_follow(first, "resp_never"), "org")
    for caught in (evicted.value, unknown.value):
        assert (caught.status, caught.code, caught.param) == (
            400,
            "previous_response_not_found",
            "previous_response_id",
        )
    assert str(evicted.value) == str(unknown.value).replace("resp_never", first["id"])


def test_measure_memo_is_bounded_by_bytes() -> None:
    memo = MeasureMemo(max_bytes=50_000)
    for n in range(100):
        value, spans = scan_body(
            b'{"messages":[{"role":"user","content":"%d%s"}]}' % (n, b"x" * 1000)
        )
        memo.measure(value["messages"][0]["content"], spans)
    assert 0 < len(memo) <= 25


def _naive_prefix(a: bytes, b: bytes) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=400))
@given(st.binary(max_size=600), st.binary(max_size=40), st.binary(max_size=40))
def test_common_prefix_len_matches_a_byte_by_byte_scan(shared: bytes, a: bytes, b: bytes) -> None:
    left, right = shared * 3 + a, shared * 3 + b  # long shared runs cross the doubling windows
    assert common_prefix_len(left, right) == _naive_prefix(left, right)
    assert common_prefix_len(right, left) == _naive_prefix(left, right)
