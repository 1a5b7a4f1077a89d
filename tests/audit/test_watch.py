"""The httpx hook on SDK clients against the emulator (SPEC V6)."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest

from llmcore.audit import CacheBreakError, CacheBreakWarning, LiveAudit, watch
from llmcore.emulator import Emulator

SYSTEM = "You follow the house rules. " * 500


@pytest.fixture(scope="module")
def emulator() -> Iterator[Emulator]:
    with Emulator() as emu:
        yield emu


class Counting(httpx2.HTTPTransport):
    """Counts the requests that really leave."""

    sent = 0

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        Counting.sent += 1
        return super().handle_request(request)


def _turns(client: anthropic.Anthropic, systems: list[str]) -> list[Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Start."}]
    out = []
    for system in systems:
        sent = [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}]
        reply = client.messages.create(
            model="claude-sonnet-4-6", max_tokens=20, system=sent, messages=messages
        )  # type: ignore[arg-type]
        out.append(reply)
        messages += [
            {"role": "assistant", "content": reply.content},
            {"role": "user", "content": "Go on."},
        ]
    return out


def test_a_break_warns_naming_the_request_and_path(emulator: Emulator) -> None:
    with watch(httpx2.Client()) as http, pytest.warns(CacheBreakWarning) as caught:
        client = anthropic.Anthropic(base_url=emulator.base_url, api_key="k", http_client=http)
        _turns(client, [SYSTEM, SYSTEM, SYSTEM + " Be brief."])
    breaks = [w.message for w in caught if isinstance(w.message, CacheBreakWarning)]
    assert len(breaks) == 1
    assert (
        breaks[0].observation.number == 2 and breaks[0].observation.record.path == "system[0].text"
    )
    assert "request 2 (conversation 0): break at system[0].text" in str(breaks[0])


def test_a_clean_run_warns_nothing_and_reads_the_usage(emulator: Emulator) -> None:
    audit = LiveAudit()
    with watch(httpx2.Client(), audit=audit) as http, warnings.catch_warnings():
        warnings.simplefilter("error", CacheBreakWarning)
        client = anthropic.Anthropic(base_url=emulator.base_url, api_key="k2", http_client=http)
        replies = _turns(client, [SYSTEM] * 3)
    read = sum(r.usage.cache_read_input_tokens for r in replies)
    total = sum(
        r.usage.input_tokens + r.usage.cache_read_input_tokens + r.usage.cache_creation_input_tokens
        for r in replies
    )
    (row,) = audit.rows()
    assert read > 0 and row.requests == 3 and row.break_count == 0
    assert row.recorded_hit_rate == pytest.approx(read / total)


def test_raise_refuses_the_break_before_it_is_sent(emulator: Emulator) -> None:
    http = watch(httpx2.Client(transport=Counting()), on_break="raise")
    client = anthropic.Anthropic(
        base_url=emulator.base_url, api_key="k3", http_client=http, max_retries=0
    )
    Counting.sent = 0
    _turns(client, [SYSTEM, SYSTEM])
    assert Counting.sent == 2
    with pytest.raises(anthropic.APIConnectionError) as raised:
        _turns(client, [SYSTEM + " edited"])
    error = raised.value.__cause__
    assert isinstance(error, CacheBreakError) and error.observation.record.path == "system[0].text"
    retrying = anthropic.Anthropic(
        base_url=emulator.base_url, api_key="k3", http_client=http, max_retries=2
    )
    with pytest.raises(anthropic.APIConnectionError):
        retrying.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=20,
            system=[
                {"type": "text", "text": SYSTEM + " edited", "cache_control": {"type": "ephemeral"}}
            ],
            messages=[{"role": "user", "content": "Start."}],
        )
    http.close()
    assert Counting.sent == 2  # neither the edited request nor its retries left


def test_an_async_stream_is_read_whole_by_the_caller_and_tapped(emulator: Emulator) -> None:
    audit = LiveAudit()
    prompt = [{"role": "system", "content": "Rules. " * 900}, {"role": "user", "content": "hi"}]

    async def run() -> list[Any]:
        http = watch(httpx2.AsyncClient(), audit=audit)
        client = openai.AsyncOpenAI(
            base_url=emulator.openai_base_url, api_key="k4", http_client=http
        )
        chunks = []
        for _ in range(2):
            stream = await client.chat.completions.create(
                model="gpt-4o",
                messages=prompt,
                stream=True,
                stream_options={"include_usage": True},  # type: ignore[arg-type]
            )
            chunks.append([chunk async for chunk in stream])
        await http.aclose()
        return chunks

    first, second = asyncio.run(run())
    text = "".join(c.choices[0].delta.content or "" for c in second if c.choices)
    assert text and second[-1].usage is not None
    cached = second[-1].usage.prompt_tokens_details.cached_tokens  # type: ignore[union-attr]
    (row,) = audit.rows()
    assert cached > 0 and row.requests == 2
    assert row.recorded_hit_rate == pytest.approx(
        cached / (first[-1].usage.prompt_tokens + second[-1].usage.prompt_tokens)
    )  # type: ignore[union-attr]


def test_pydantic_ai_with_a_watched_client(emulator: Emulator) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    seen: list[Any] = []
    http = watch(httpx2.AsyncClient(), on_break=seen.append)
    model = OpenAIChatModel(
        "gpt-4o",
        provider=OpenAIProvider(base_url=emulator.openai_base_url, api_key="k5", http_client=http),
    )

    async def run() -> None:
        history = None
        for prompt in ("Rules. " * 400 + "one", "two"):
            result = await Agent(model, instructions="Be kind.").run(
                prompt, message_history=history
            )
            history = result.all_messages()
        await Agent(model, instructions="Be unkind.").run("three", message_history=history)
        await http.aclose()

    asyncio.run(run())
    assert [(o.number, o.record.path) for o in seen] == [(2, "messages[0].content")]


def test_a_plain_httpx_client_streamed_and_not(emulator: Emulator) -> None:
    audit = LiveAudit()
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Rules. " * 900},
            {"role": "user", "content": "hi"},
        ],
    }
    with watch(httpx.Client(), audit=audit, on_break="raise") as http:
        plain = http.post(emulator.openai_base_url + "/chat/completions", json=body).json()
        with http.stream(
            "POST",
            emulator.openai_base_url + "/chat/completions",
            json={**body, "stream": True, "stream_options": {"include_usage": True}},
        ) as response:
            lines = [line for line in response.iter_lines() if line]
        http.get(emulator.base_url + "/v1/models")  # not a model request: not audited
    assert plain["usage"]["prompt_tokens"] > 0 and lines[-1] == "data: [DONE]"
    (row,) = audit.rows()
    assert row.requests == 2 and row.recorded_hit_rate is not None and row.recorded_hit_rate > 0


def test_a_client_without_event_hooks_is_refused() -> None:
    with pytest.raises(TypeError, match="not an httpx client"):
        watch(object())
    with pytest.raises(ValueError, match="on_break"):
        watch(httpx.Client(), on_break="shout")  # type: ignore[arg-type]
