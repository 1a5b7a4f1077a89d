"""OpenAI automatic caching (PROVIDER-RULES §2.1–§2.2, §6 oracles 5 and 6)."""

from __future__ import annotations

import threading
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.emulator.tables import OPENAI_REPLY_PRIMING as PRIMING
from llmcore.emulator.tables import openai_cacheable
from llmcore.emulator.tokencount import MESSAGE_TOKENS, text_tokens
from tests.emulator.helpers import RESPONSES_TOOLS, Api, text_of


def message(tokens: int, tag: str, role: str = "user") -> dict[str, Any]:
    """A Chat message that counts exactly ``tokens``: its content, its role and 3 more."""
    return {"role": role, "content": text_of(tokens - MESSAGE_TOKENS - text_tokens(role), tag)}


def chat(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": list(messages), **extra}


def cached(response: httpx.Response) -> tuple[int, int]:
    assert response.status_code == 200, response.text
    usage = response.json()["usage"]
    assert usage["prompt_tokens_details"]["cache_write_tokens"] == 0
    return usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]


def test_under_1024_tokens_nothing_is_cached(api: Api) -> None:
    request = chat(message(1000, "sys", "system"), message(20, "q"))
    assert cached(api.chat(request)) == (1020 + PRIMING, 0)
    assert cached(api.chat(request)) == (1020 + PRIMING, 0)


def test_repeat_is_cached_in_128_token_steps(api: Api) -> None:
    request = chat(message(1500, "sys", "system"), message(100, "q"))
    assert cached(api.chat(request)) == (1600 + PRIMING, 0)
    assert cached(api.chat(request)) == (1600 + PRIMING, 1024 + 128 * 4)


def test_appended_turn_reads_the_shared_prefix_floored(api: Api) -> None:
    first = [message(1100, "sys", "system"), message(60, "q1")]
    api.chat(chat(*first))
    second = [*first, message(40, "a1", "assistant"), message(30, "q2")]
    assert cached(api.chat(chat(*second))) == (1230 + PRIMING, 1024 + 128)


def test_difference_inside_an_item_counts_its_common_bytes(api: Api) -> None:
    base = message(1300, "sys", "system")
    api.chat(chat(base, message(20, "q")))
    changed = dict(base)
    # change the last 100 characters (50 words) of the system message: ~1250 tokens still shared
    changed["content"] = base["content"][:-100] + " b" * 50
    assert cached(api.chat(chat(changed, message(20, "q")))) == (1320 + PRIMING, 1024 + 128)


@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.integers(min_value=20, max_value=900), min_size=1, max_size=4))
def test_cached_tokens_are_0_or_1024_plus_128k(api_for_hypothesis: Api, sizes: list[int]) -> None:
    api = api_for_hypothesis
    api.emu.reset()
    messages = [message(size, f"m{i}") for i, size in enumerate(sizes)]
    api.chat(chat(*messages))
    total, hit = cached(api.chat(chat(*messages, message(30, "next"))))
    assert hit == openai_cacheable(sum(sizes))
    assert hit == 0 or (hit >= 1024 and (hit - 1024) % 128 == 0)
    assert hit <= total


def test_prompt_cache_key_is_part_of_the_key(api: Api) -> None:
    request = chat(message(1500, "sys", "system"), message(20, "q"), prompt_cache_key="a")
    api.chat(request)
    assert cached(api.chat(request))[1] == 1408
    assert cached(api.chat({**request, "prompt_cache_key": "b"}))[1] == 0


def test_in_memory_retention_is_10_minutes_idle(api: Api) -> None:
    request = chat(message(1500, "sys", "system"), message(20, "q"))
    api.chat(request)
    api.clock.advance(599)
    assert cached(api.chat(request))[1] == 1408  # a hit restarts the idle time
    api.clock.advance(599)
    assert cached(api.chat(request))[1] == 1408
    api.clock.advance(601)
    assert cached(api.chat(request))[1] == 0


def test_24h_retention(api: Api) -> None:
    request = chat(message(1500, "sys", "system"), message(20, "q"), prompt_cache_retention="24h")
    api.chat(request)
    api.clock.advance(23 * 3600)
    assert cached(api.chat(request))[1] == 1408
    api.clock.advance(24 * 3600 + 1)
    assert cached(api.chat(request))[1] == 0


def test_image_and_tools_are_part_of_the_prefix(api: Api) -> None:
    tools = [{"type": "function", "function": {"name": "f", "description": "d" * 5000}}]
    request = chat(message(100, "q"), tools=tools)
    first_total, _ = cached(api.chat(request))
    assert first_total > 1024
    assert cached(api.chat(request))[1] > 0
    other = [{"type": "function", "function": {"name": "g", "description": "d" * 5000}}]
    assert cached(api.chat(chat(message(100, "q"), tools=other)))[1] == 0


def test_responses_usage_and_caching(api: Api) -> None:
    request = {"model": "gpt-4o", "instructions": "i" * 6000, "input": "hello"}
    first = api.responses(request).json()["usage"]
    assert first["input_tokens_details"] == {"cached_tokens": 0, "cache_write_tokens": 0}
    second = api.responses(request).json()["usage"]
    assert second["input_tokens"] == first["input_tokens"]
    assert second["input_tokens_details"]["cached_tokens"] == openai_cacheable(
        second["input_tokens"] - 2
    )
    assert second["total_tokens"] == second["input_tokens"] + second["output_tokens"]


def test_responses_previous_response_id_continues_the_prefix(api: Api) -> None:
    tools = RESPONSES_TOOLS
    first = api.responses(
        {"model": "gpt-4o", "instructions": "i" * 6000, "input": "hi", "tools": tools}
    ).json()
    follow = {
        "model": "gpt-4o",
        "tools": tools,
        "instructions": "i" * 6000,
        "previous_response_id": first["id"],
        "input": [
            {
                "type": "function_call_output",
                "call_id": first["output"][0]["call_id"],
                "output": "README.md\t92\n",
            }
        ],
    }
    response = api.responses(follow)
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["input_tokens_details"]["cached_tokens"] >= 1024
    missing = api.responses({**follow, "previous_response_id": "resp_nope"})
    assert missing.status_code == 400
    assert missing.json()["error"]["code"] == "previous_response_not_found"


def test_parallel_identical_chat_requests_both_miss(api: Api) -> None:
    request = chat(message(1500, "sys", "system"), message(20, "q"))
    results: list[int] = []

    def send() -> None:
        with httpx.Client(timeout=10) as client:
            response = client.post(api.emu.openai_base_url + "/chat/completions", json=request)
            results.append(response.json()["usage"]["prompt_tokens_details"]["cached_tokens"])

    api.emu.pause_responses()
    try:
        threads = [threading.Thread(target=send) for _ in range(2)]
        for thread in threads:
            thread.start()
        for _ in range(2000):
            if api.emu.waiting == 2:
                break
            threading.Event().wait(0.005)
    finally:
        api.emu.resume_responses()
    for thread in threads:
        thread.join()
    assert results == [0, 0]
