"""The emulator's Gemini API: the google-genai SDK and llmcore's transport against it, caching
(implicit and ``cachedContents``), validation and the error shape (SPEC V2, PROVIDER-RULES §4)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from llmcore.emulator import Emulator, ManualClock
from llmcore.emulator.gemini_cache import implicit_minimum
from llmcore.messages import Message
from llmcore.providers import get_provider
from llmcore.providers.gemini import create_cached_content, vertex_base_url
from llmcore.request import Params, Request, Tool
from llmcore.transport import HTTPTransport

P = get_provider("gemini")
LONG = "The quick brown fox jumps over the lazy dog. " * 400  # well over 2,048 tokens
MODEL = "gemini-2.5-flash"


@pytest.fixture
def emu(_server: tuple[Emulator, ManualClock]) -> Iterator[tuple[Emulator, ManualClock]]:
    server, clock = _server
    server.reset()
    clock.advance(100_000)
    yield server, clock


@pytest.fixture
def sdk(emu: tuple[Emulator, ManualClock]) -> Iterator[genai.Client]:
    options = types.HttpOptions(base_url=emu[0].base_url, api_version="v1beta")
    client = genai.Client(api_key="key-a", http_options=options)
    yield client
    client.close()


def _post(emu: Emulator, path: str, body: object, key: str = "key-a") -> httpx.Response:
    with httpx.Client() as client:
        return client.post(emu.base_url + path, json=body, headers={"x-goog-api-key": key})


def test_sdk_generate_and_stream(sdk: genai.Client) -> None:
    config = types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=64)
    answer = sdk.models.generate_content(model=MODEL, contents="hello", config=config)
    assert answer.text and answer.candidates[0].finish_reason == types.FinishReason.STOP
    usage = answer.usage_metadata
    assert usage.prompt_token_count > 0 and usage.cached_content_token_count is None
    assert usage.total_token_count == usage.prompt_token_count + usage.candidates_token_count
    chunks = list(sdk.models.generate_content_stream(model=MODEL, contents="hello", config=config))
    assert len(chunks) > 1 and "".join(c.text or "" for c in chunks) == answer.text
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


def test_sdk_function_calls_round_trip(sdk: genai.Client) -> None:
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="list_files", description="List.", parameters_json_schema={"type": "object"}
            )
        ]
    )
    config = types.GenerateContentConfig(tools=[tool])
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text="work")])]
    first = sdk.models.generate_content(model=MODEL, contents=contents, config=config)
    calls = first.function_calls or []
    assert calls and calls[0].id
    contents.append(first.candidates[0].content)
    contents.append(
        types.Content(
            role="user",
            parts=[
                types.Part.from_function_response(name=c.name, response={"output": "ok"})
                for c in calls
            ],
        )
    )
    second = sdk.models.generate_content(model=MODEL, contents=contents, config=config)
    assert second.candidates[0].content.role == "model"


def test_sdk_cached_contents_create_use_update_delete(
    sdk: genai.Client, emu: tuple[Emulator, ManualClock]
) -> None:
    server, clock = emu
    created = sdk.caches.create(
        model=MODEL, config=types.CreateCachedContentConfig(system_instruction=LONG)
    )
    assert created.name.startswith("cachedContents/")
    assert (created.expire_time - created.create_time).total_seconds() == 3600  # default 1 h
    tokens = created.usage_metadata.total_token_count
    config = types.GenerateContentConfig(cached_content=created.name)
    used = sdk.models.generate_content(model=MODEL, contents="hello", config=config)
    assert used.usage_metadata.cached_content_token_count == tokens
    assert used.usage_metadata.prompt_token_count > tokens  # the cache is part of the prompt
    with pytest.raises(genai_errors.ClientError) as refused:  # its own system beside a cache
        sdk.models.generate_content(
            model=MODEL,
            contents="hello",
            config=types.GenerateContentConfig(cached_content=created.name, system_instruction="x"),
        )
    assert refused.value.code == 400 and refused.value.status == "INVALID_ARGUMENT"
    assert [c.name for c in sdk.caches.list()] == [created.name]
    clock.advance(1800)
    updated = sdk.caches.update(
        name=created.name, config=types.UpdateCachedContentConfig(ttl="7200s")
    )
    assert (updated.expire_time - updated.update_time).total_seconds() == 7200
    service = server.engine.services["gemini"]
    assert service.caches.storage_token_hours(clock.now()) == pytest.approx(tokens * 0.5)
    sdk.caches.delete(name=created.name)
    with pytest.raises(genai_errors.ClientError):
        sdk.caches.get(name=created.name)


def test_an_expired_cache_is_refused(emu: tuple[Emulator, ManualClock]) -> None:
    server, clock = emu
    request = Request(model=MODEL, system=(LONG,), messages=(Message.user("hi"),))
    with httpx.Client() as client:
        name = create_cached_content(
            request,
            ttl_seconds=60,
            base_url=server.gemini_base_url,
            api_key="key-a",
            client=client,
        )
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "cachedContent": name}
    path = f"/v1beta/models/{MODEL}:generateContent"
    assert _post(server, path, body).status_code == 200
    assert _post(server, path, body, key="key-b").status_code == 403  # another project's key
    clock.advance(61)
    late = _post(server, path, body)
    assert late.status_code == 403 and late.json()["error"]["status"] == "PERMISSION_DENIED"


def test_llmcore_transport_plain_and_stream_with_implicit_caching(
    emu: tuple[Emulator, ManualClock],
) -> None:
    server, _ = emu
    request = Request(
        model=MODEL,
        system=(LONG,),
        tools=(Tool.from_schema("f", "Do f.", {"type": "object"}),),
        messages=(Message.user("hello"),),
        params=Params(max_tokens=100),
    )
    body = P.build_body(request)
    with HTTPTransport(base_urls={"gemini": server.gemini_base_url}, environ={}) as transport:
        first = transport.send(P, body, model=MODEL)
        second = transport.send(P, body, model=MODEL, stream=True)
        vertex = vertex_base_url("p", "us-central1").split("/v1/", 1)[1]
        vertex_url = f"{server.base_url}/v1/{vertex}"
    with HTTPTransport(base_urls={"gemini": vertex_url}, environ={}) as transport:
        other = transport.send(P, body, model="gemini-2.5-pro")
    assert first.content and first.usage.cache_read == 0
    total = first.usage.input
    assert total >= implicit_minimum(MODEL)
    assert second.content == first.content
    assert 0 < second.usage.cache_read <= total  # cachedContentTokenCount ⊂ promptTokenCount
    assert second.usage.input + second.usage.cache_read == total
    assert other.usage.cache_read == 0  # another model, another cache


def test_a_prompt_under_the_minimum_is_never_cached(emu: tuple[Emulator, ManualClock]) -> None:
    server, _ = emu
    body = {"contents": [{"role": "user", "parts": [{"text": "short"}]}]}
    path = "/v1beta/models/gemini-2.5-pro:generateContent"
    for _ in range(2):
        usage = _post(server, path, body).json()["usageMetadata"]
        assert "cachedContentTokenCount" not in usage


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"contents": [], "surprise": 1}, 'Unknown name "surprise"'),
        ({"contents": []}, "contents is not specified"),
        ({"contents": [{"role": "assistant", "parts": [{"text": "x"}]}]}, "valid role"),
        ({"contents": [{"role": "user", "parts": []}]}, "must not be empty"),
        (
            {
                "contents": [
                    {"role": "user", "parts": [{"text": "x"}]},
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"name": "f", "response": {}}}],
                    },
                ]
            },
            "function response turn comes immediately after a function call turn",
        ),
        (
            {
                "contents": [
                    {"role": "user", "parts": [{"text": "x"}]},
                    {"role": "model", "parts": [{"text": "y"}]},
                    {"role": "model", "parts": [{"functionCall": {"name": "f"}}]},
                ]
            },
            "function call turn comes immediately after a user turn",
        ),
        (
            {
                "contents": [
                    {"role": "user", "parts": [{"text": "x"}]},
                    {"role": "model", "parts": [{"functionCall": {"name": "f"}}] * 2},
                    {
                        "role": "user",
                        "parts": [{"functionResponse": {"name": "f", "response": {}}}],
                    },
                ]
            },
            "number of function response parts is equal",
        ),
        (
            {
                "contents": [{"role": "user", "parts": [{"text": "x", "colour": 1}]}],
            },
            'Unknown name "colour"',
        ),
    ],
)
def test_validation_in_the_api_words_and_shape(
    emu: tuple[Emulator, ManualClock], body: dict[str, object], message: str
) -> None:
    answer = _post(emu[0], f"/v1beta/models/{MODEL}:generateContent", body)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert set(error) == {"code", "message", "status"}
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert message in error["message"]
    typed = P.parse_error(400, answer.content, dict(answer.headers))
    assert typed.error_type == "INVALID_ARGUMENT"


def test_llmcore_bodies_pass_validation_through_a_tool_loop(
    emu: tuple[Emulator, ManualClock],
) -> None:
    from tests.providers.test_gemini import GOLDEN_CASES

    server, _ = emu
    for name in ("tool-loop", "tool-choice-name-extra"):
        request = GOLDEN_CASES[name]()
        answer = _post(
            server, f"/v1beta/models/{MODEL}:generateContent", json.loads(P.build_body(request))
        )
        assert answer.status_code == 200, answer.text


def test_the_auditor_agrees_with_the_emulator_on_gemini_traffic(tmp_path: Path) -> None:
    from llmcore.audit import Verdict, audit_paths

    record = tmp_path / "record.jsonl"
    history = [Message.user("hello " + LONG)]
    with Emulator(clock=ManualClock(), record=record) as server:
        with HTTPTransport(base_urls={"gemini": server.gemini_base_url}, environ={}) as transport:
            reads = []
            for turn in range(3):
                request = Request(model=MODEL, system=("Be brief.",), messages=tuple(history))
                # the last request streams: a record line is written once its answer is sent,
                # so a request right after a streamed one could be written first
                parsed = transport.send(P, P.build_body(request), model=MODEL, stream=turn == 2)
                reads.append(parsed.usage.cache_read)
                history += [Message.assistant(*parsed.content), Message.user(f"more {turn}")]
    report = audit_paths([record])
    assert [r.provider for r in report.requests] == ["gemini"] * 3
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.STABLE, Verdict.STABLE]
    assert reads[0] == 0 and all(read > 0 for read in reads[1:])
    for row, read in zip(report.requests, reads, strict=True):
        assert row.usage is not None and row.usage.cache_read_tokens == read  # the tap's reading
        assert row.max_cacheable_tokens <= row.total_tokens


def test_the_bench_session_runs_on_gemini_through_the_runner() -> None:
    from llmcore.bench import DEFAULT_PLAN, run_bench, with_provider

    result = run_bench(plan=with_provider(DEFAULT_PLAN, "gemini", None))
    assert {row.provider for row in result.rows} == {"gemini"}
    assert result.rows[0].usage.cache_read == 0
    reads = [row.usage.cache_read for row in result.rows[1:]]
    assert sum(1 for read in reads if read > 0) >= len(reads) - 2  # tool loops, a reopen
    assert result.hit_rate > 0.5
