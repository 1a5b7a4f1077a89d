"""The proxy forwards byte for byte and streams each answer as it arrives (SPEC V6)."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import anthropic
import httpx
import openai
import pytest

from llmcore import jsonbytes
from llmcore.proxy import Proxy, ProxyError
from tests.proxy.helpers import free_port, serve


async def _echo(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers with what it received: method, path, query, headers and body."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    seen = {
        "method": scope["method"],
        "path": scope["path"],
        "query": scope["query_string"].decode(),
        "headers": [[k.decode(), v.decode()] for k, v in scope["headers"]],
        "body": body.decode(),
    }
    payload = jsonbytes.dumps(seen)
    headers = [
        (b"content-type", b"application/json"),
        (b"x-upstream", b"one"),
        (b"set-cookie", b"a=1"),
        (b"set-cookie", b"b=2"),
        (b"content-length", str(len(payload)).encode()),
    ]
    await send({"type": "http.response.start", "status": 201, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def test_method_path_query_headers_and_body_arrive_unchanged() -> None:
    body = b'{"b": 1,  "a":"\\u00e9"}'  # spacing, key order and escapes as sent
    with serve(_echo) as upstream, Proxy(upstream) as proxy:
        response = httpx.put(
            f"{proxy.base_url}/v1/things/x%2Fy?z=1&z=2",
            content=body,
            headers={
                "X-Api-Key": "k",
                "Anthropic-Beta": "a,b",
                "Connection": "keep-alive, x-hop",
                "x-hop": "1",
            },
        )
    assert response.status_code == 201
    assert response.headers["x-upstream"] == "one"
    assert response.headers.get_list("set-cookie") == ["a=1", "b=2"]
    seen = response.json()
    assert (seen["method"], seen["query"], seen["body"]) == ("PUT", "z=1&z=2", body.decode())
    assert seen["path"] == "/v1/things/x/y"  # the raw path x%2Fy went up as sent
    names = [name for name, _ in seen["headers"]]
    assert ["x-api-key", "k"] in seen["headers"] and ["anthropic-beta", "a,b"] in seen["headers"]
    assert "connection" not in names and "x-hop" not in names  # hop-by-hop, and the one it names


def test_an_event_stream_passes_event_by_event() -> None:
    first_seen = threading.Event()

    async def stream(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"data: one\n\n", "more_body": True})
        while not first_seen.is_set():  # the second event waits for the client to see the first
            await __import__("asyncio").sleep(0.001)
        await send({"type": "http.response.body", "body": b"data: two\n\n", "more_body": False})

    with serve(stream) as upstream, Proxy(upstream) as proxy, httpx.Client() as client:
        with client.stream("POST", proxy.base_url + "/v1/other", content=b"{}") as response:
            chunks = response.iter_raw()
            assert next(chunks) == b"data: one\n\n"
            first_seen.set()
            assert b"".join(chunks) == b"data: two\n\n"


def test_a_refused_upstream_is_a_502_in_the_providers_shape(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with (
        Proxy(f"http://127.0.0.1:{free_port()}") as proxy,
        caplog.at_level(logging.WARNING, "llmcore.proxy"),
    ):
        client = anthropic.Anthropic(base_url=proxy.base_url, api_key="sk-ant-K", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as raised:
            client.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=5,
                messages=[{"role": "user", "content": "hi"}],
            )
        chat = openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="sk-K", max_retries=0)
        with pytest.raises(openai.APIStatusError) as chat_raised:
            chat.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
            )
        client.close()
        chat.close()
    assert raised.value.status_code == 502
    assert raised.value.body["type"] == "error"  # type: ignore[index]
    assert raised.value.body["error"]["type"] == "api_error"  # type: ignore[index]
    assert chat_raised.value.status_code == 502
    assert chat_raised.value.body["code"] == "upstream_unreachable"  # type: ignore[index]
    lines = [r.getMessage() for r in caplog.records if r.name == "llmcore.proxy"]
    assert len(lines) == 2 and all("unreachable" in line for line in lines)
    assert not any("sk-" in line for line in lines)


def test_an_upstream_that_times_out_is_a_504() -> None:
    release = threading.Event()

    async def silent(scope: dict[str, Any], receive: Any, send: Any) -> None:
        while not release.is_set():
            await __import__("asyncio").sleep(0.005)

    timeout = httpx.Timeout(connect=5.0, read=0.05, write=5.0, pool=5.0)
    try:
        with serve(silent) as upstream, Proxy(upstream, timeout=timeout) as proxy:
            response = httpx.post(proxy.base_url + "/v1/chat/completions", content=b"{}")
            release.set()
    finally:
        release.set()
    assert response.status_code == 504
    assert response.json()["error"]["code"] == "upstream_timeout"


def test_a_bad_upstream_url_is_refused() -> None:
    with pytest.raises(ProxyError, match="not an http:// or https:// URL"):
        Proxy("api.anthropic.com")


def test_the_proxy_listens_on_loopback_by_default() -> None:
    with serve(_echo) as upstream, Proxy(upstream) as proxy:
        assert proxy.base_url.startswith("http://127.0.0.1:")
        assert json.loads(httpx.get(proxy.base_url + "/x").text)["method"] == "GET"
