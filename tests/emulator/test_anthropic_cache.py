"""Anthropic cache accounting, rule by rule (PROVIDER-RULES §1.2–§1.6, §6 oracles 1–4, 6)."""

from __future__ import annotations

import base64
import threading
from typing import Any

import httpx

from llmcore.emulator.tables import anthropic_min_tokens
from llmcore.emulator.tokencount import tool_prompt_tokens
from tests.emulator.helpers import SONNET, Api, ephemeral, text_block

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64).decode()


def body(
    system: list[dict[str, Any]],
    blocks: list[dict[str, Any]],
    *,
    model: str = SONNET,
    tools: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"model": model, "max_tokens": 64}
    if tools is not None:
        out["tools"] = tools
    out["system"] = system
    out["messages"] = [{"role": "user", "content": blocks}]
    out.update(extra)
    return out


def io(usage: dict[str, Any]) -> tuple[int, int, int]:
    """(read, write, uncached input)."""
    return (
        usage["cache_read_input_tokens"],
        usage["cache_creation_input_tokens"],
        usage["input_tokens"],
    )


def test_write_then_read_same_prefix(api: Api) -> None:
    request = body([text_block(1200, "sys", cache_control=ephemeral())], [text_block(10, "q")])
    assert io(api.usage(request)) == (0, 1200, 10)
    assert io(api.usage(request)) == (1200, 0, 10)


def test_usage_fields_sum_to_total_input(api: Api) -> None:
    request = body(
        [text_block(1200, "sys", cache_control=ephemeral("1h"))],
        [text_block(300, "a"), text_block(7, "b", cache_control=ephemeral()), text_block(8, "c")],
    )
    usage = api.usage(request)
    assert usage["cache_creation"] == {
        "ephemeral_5m_input_tokens": 307,
        "ephemeral_1h_input_tokens": 1200,
    }
    assert io(usage) == (0, 1507, 8)
    total = sum(io(usage))
    assert total == 1200 + 300 + 7 + 8


def _lookback_setup(api: Api, count: int = 30) -> list[dict[str, Any]]:
    """Write an entry after each of ``count`` 10-token blocks behind a 1200-token system."""
    blocks = [text_block(10, f"b{i}") for i in range(count)]
    for index in range(count):
        marked = [dict(b) for b in blocks]
        marked[index]["cache_control"] = ephemeral()
        api.usage(body([text_block(1200, "sys")], marked))
    return blocks


def _with_edit(blocks: list[dict[str, Any]], edited: int) -> list[dict[str, Any]]:
    out = [dict(b) for b in blocks]
    out[edited] = text_block(10, f"EDITED{edited}")
    out[-1]["cache_control"] = ephemeral()
    return out


def test_lookback_edit_within_20_blocks_hits_the_block_before(api: Api) -> None:
    blocks = _lookback_setup(api)
    # items: 0 = system, 1..30 = blocks; breakpoint on item 30. Editing block 10 (item 11)
    # leaves the entry after item 10, exactly 20 boundaries back: hit there.
    usage = api.usage(body([text_block(1200, "sys")], _with_edit(blocks, 10)))
    assert io(usage) == (1200 + 10 * 10, 20 * 10, 0)
    # an edit nearer the breakpoint hits just before it, too
    usage = api.usage(body([text_block(1200, "sys")], _with_edit(blocks, 25)))
    assert io(usage) == (1200 + 25 * 10, 5 * 10, 0)


def test_lookback_edit_more_than_20_blocks_back_misses_entirely(api: Api) -> None:
    blocks = _lookback_setup(api)
    # editing block 9 (item 10): the entry after item 9 is 21 boundaries back: not found
    usage = api.usage(body([text_block(1200, "sys")], _with_edit(blocks, 9)))
    assert io(usage) == (0, 1200 + 300, 0)


def test_lookback_miss_falls_back_to_an_earlier_breakpoint(api: Api) -> None:
    system = [text_block(1200, "sys", cache_control=ephemeral())]
    blocks = [text_block(10, f"b{i}") for i in range(30)]
    blocks[-1] = text_block(10, "b29", cache_control=ephemeral())
    api.usage(body(system, blocks))
    edited = [dict(b) for b in blocks]
    edited[2] = text_block(10, "EDITED")
    assert io(api.usage(body(system, edited))) == (1200, 300, 0)


def test_below_minimum_nothing_is_read_or_written_and_no_error(api: Api) -> None:
    request = body([text_block(1000, "sys", cache_control=ephemeral())], [text_block(10, "q")])
    assert io(api.usage(request)) == (0, 0, 1010)
    assert io(api.usage(request)) == (0, 0, 1010)


def test_minimum_is_per_model(api: Api) -> None:
    assert anthropic_min_tokens("claude-opus-4-5-20251101") == 4096
    assert anthropic_min_tokens("claude-sonnet-4-6") == 2048
    assert anthropic_min_tokens("claude-3-5-haiku-latest") == 2048
    assert anthropic_min_tokens("claude-sonnet-4-5-20250929") == 1024
    assert anthropic_min_tokens("some-future-model") == 1024
    system = [text_block(3000, "sys", cache_control=ephemeral())]
    opus = body(system, [text_block(10, "q")], model="claude-opus-4-5")
    assert io(api.usage(opus)) == (0, 0, 3010)
    assert io(api.usage(body(system, [text_block(10, "q")]))) == (0, 3000, 10)


def test_5m_ttl_expires_and_is_refreshed_on_hit(api: Api) -> None:
    request = body([text_block(1200, "sys", cache_control=ephemeral())], [text_block(10, "q")])
    api.usage(request)
    api.clock.advance(299)
    assert io(api.usage(request))[0] == 1200  # hit refreshes: 5 more minutes from now
    api.clock.advance(299)
    assert io(api.usage(request))[0] == 1200
    api.clock.advance(300)
    assert io(api.usage(request)) == (0, 1200, 10)


def test_1h_ttl_outlives_5m(api: Api) -> None:
    request = body(
        [text_block(1200, "sys", cache_control=ephemeral("1h"))],
        [text_block(100, "q", cache_control=ephemeral())],
    )
    first = api.usage(request)
    assert first["cache_creation"] == {
        "ephemeral_5m_input_tokens": 100,
        "ephemeral_1h_input_tokens": 1200,
    }
    api.clock.advance(600)  # 5m entry gone, 1h entry alive
    second = api.usage(request)
    assert io(second) == (1200, 100, 0)
    assert second["cache_creation"]["ephemeral_5m_input_tokens"] == 100
    api.clock.advance(3601)
    assert io(api.usage(request)) == (0, 1300, 0)


def test_mixed_ttl_billing_a_b_c(api: Api) -> None:
    tools = [
        {"name": "t", "description": "d" * 4000, "input_schema": {"type": "object"}},
    ]
    system = [text_block(500, "sys", cache_control=ephemeral("1h"))]
    first = [text_block(50, "one", cache_control=ephemeral("1h"))]
    api.usage(body(system, first, tools=tools))
    # A = hit after the user block; B = new 1h breakpoint further on; C = last (5m) breakpoint
    blocks = [
        text_block(50, "one"),
        text_block(40, "two", cache_control=ephemeral("1h")),
        text_block(30, "three", cache_control=ephemeral()),
        text_block(8, "tail"),
    ]
    usage = api.usage(body(system, blocks, tools=tools))
    read = usage["cache_read_input_tokens"]
    assert usage["cache_creation"] == {
        "ephemeral_5m_input_tokens": 30,
        "ephemeral_1h_input_tokens": 40,
    }
    assert usage["input_tokens"] == 8
    assert read > 550  # tools + system + first block


def test_1h_after_5m_is_refused(api: Api) -> None:
    request = body(
        [text_block(1200, "sys", cache_control=ephemeral())],
        [text_block(10, "a"), text_block(10, "b", cache_control=ephemeral("1h"))],
    )
    response = api.messages(request)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "messages.0.content.1.cache_control.ttl: a ttl='1h' cache_control block must not come "
        "after a ttl='5m' cache_control block. Note that blocks are processed in the following "
        "order: `tools`, `system`, `messages`."
    )


def test_five_breakpoints_are_refused_with_the_exact_message(api: Api) -> None:
    blocks = [text_block(300, f"b{i}", cache_control=ephemeral()) for i in range(5)]
    response = api.messages(body([text_block(10, "sys")], blocks))
    assert response.status_code == 400
    assert response.json() == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        },
        "request_id": response.headers["request-id"],
    }
    assert api.messages(body([text_block(10, "sys")], blocks[:4])).status_code == 200


def test_automatic_mode_counts_toward_the_limit(api: Api) -> None:
    blocks = [text_block(300, f"b{i}", cache_control=ephemeral()) for i in range(4)]
    blocks.append(text_block(10, "last"))
    response = api.messages(body([text_block(10, "sys")], blocks, cache_control=ephemeral()))
    assert response.json()["error"]["message"].endswith("Found 5.")


def test_automatic_mode_caches_the_last_block_and_moves_forward(api: Api) -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [text_block(1200, "q1")]}]
    request = {"model": SONNET, "max_tokens": 64, "cache_control": ephemeral()}
    assert io(api.usage({**request, "messages": messages})) == (0, 1200, 0)
    messages += [
        {"role": "assistant", "content": [text_block(20, "a1")]},
        {"role": "user", "content": [text_block(30, "q2")]},
    ]
    assert io(api.usage({**request, "messages": messages})) == (1200, 50, 0)


def _three_levels(extra_block: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    tools = [
        {
            "name": "read_file",
            "description": "r" * 4000,
            "input_schema": {"type": "object"},
            "cache_control": ephemeral(),
        }
    ]
    blocks = [text_block(600, "doc", cache_control=ephemeral())]
    if extra_block is not None:
        blocks.insert(0, extra_block)
    return body([text_block(300, "sys", cache_control=ephemeral())], blocks, tools=tools, **extra)


AUTO_EXTRA = tool_prompt_tokens(SONNET, None)[1]
"""Tool-use system prompt tokens that ``tool_choice: auto`` adds at the messages level."""


def _tools_and_system_tokens(api: Api) -> int:
    first = api.usage(_three_levels())
    return first["cache_creation_input_tokens"] - 600 - AUTO_EXTRA


def test_toggling_an_image_keeps_tools_and_system_misses_messages(api: Api) -> None:
    prefix = _tools_and_system_tokens(api)
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    usage = api.usage(_three_levels(image))
    assert usage["cache_read_input_tokens"] == prefix
    assert usage["cache_creation_input_tokens"] > 600
    # and removing it again: the image-free messages entry is still live
    assert io(api.usage(_three_levels())) == (prefix + 600 + AUTO_EXTRA, 0, 0)


def test_toggling_tool_choice_keeps_tools_and_system_misses_messages(api: Api) -> None:
    prefix = _tools_and_system_tokens(api)
    usage = api.usage(_three_levels(tool_choice={"type": "any"}))
    assert io(usage) == (prefix, 600, 0)
    auto = _three_levels(tool_choice={"type": "auto"})
    assert io(api.usage(auto)) == (prefix + 600 + AUTO_EXTRA, 0, 0)


def test_changing_a_tool_misses_every_level(api: Api) -> None:
    _tools_and_system_tokens(api)
    changed = _three_levels()
    changed["tools"][0]["description"] = "s" * 4000
    assert api.usage(changed)["cache_read_input_tokens"] == 0


def test_two_identical_parallel_requests_both_miss(api: Api) -> None:
    request = body([text_block(1200, "sys", cache_control=ephemeral())], [text_block(10, "q")])
    results: list[dict[str, Any]] = []

    def send() -> None:
        with httpx.Client(timeout=10) as client:
            response = client.post(
                api.emu.base_url + "/v1/messages",
                json=request,
                headers={"anthropic-version": "2023-06-01", "x-api-key": "test-org"},
            )
            results.append(response.json()["usage"])

    api.emu.pause_responses()
    try:
        threads = [threading.Thread(target=send) for _ in range(2)]
        for thread in threads:
            thread.start()
        for _ in range(2000):
            if api.emu.waiting == 2:
                break
            threading.Event().wait(0.005)
        assert api.emu.waiting == 2
    finally:
        api.emu.resume_responses()
    for thread in threads:
        thread.join()
    assert [io(u) for u in results] == [(0, 1200, 10), (0, 1200, 10)]
    assert io(api.usage(request)) == (1200, 0, 10)


def test_caches_are_isolated_per_organization(api: Api) -> None:
    request = body([text_block(1200, "sys", cache_control=ephemeral())], [text_block(10, "q")])
    api.usage(request)
    assert io(api.usage(request, **{"x-api-key": "other-org"})) == (0, 1200, 10)


def test_growing_conversation_with_rolling_breakpoints_hits_previous_turn(api: Api) -> None:
    system = [text_block(1200, "sys", cache_control=ephemeral())]
    messages: list[dict[str, Any]] = []
    totals = []
    for turn in range(5):
        messages.append({"role": "user", "content": [text_block(25, f"u{turn}")]})
        for message in messages:
            for block in message["content"]:
                block.pop("cache_control", None)
        messages[-1]["content"][-1]["cache_control"] = ephemeral()
        if len(messages) >= 3:
            messages[-3]["content"][-1]["cache_control"] = ephemeral()
        request = {"model": SONNET, "max_tokens": 64, "system": system, "messages": messages}
        totals.append(io(api.usage(request)))
        messages.append({"role": "assistant", "content": [text_block(15, f"a{turn}")]})
    assert totals[0] == (0, 1225, 0)
    assert totals[1:] == [(1225 + 40 * (n - 1), 40, 0) for n in range(1, 5)]


def test_deferred_tools_are_outside_the_prefix(api: Api) -> None:
    """Anthropic, Tool use with prompt caching: deferred tools are not in the prefix."""
    tool = {"name": "read_file", "input_schema": {"type": "object", "properties": {}}}
    deferred = {**tool, "name": "deploy", "defer_loading": True, "description": "x " * 400}
    system = [text_block(1200, "sys", cache_control=ephemeral())]
    first = body(system, [text_block(10, "q")], tools=[tool])
    second = body(system, [text_block(10, "q")], tools=[deferred, tool])
    read, write, fresh = io(api.usage(first))
    assert read == 0 and write > 1200
    assert io(api.usage(second)) == (write, 0, fresh)
