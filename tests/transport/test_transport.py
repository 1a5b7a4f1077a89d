"""The httpx transports over real loopback HTTP: exact bytes, keys, retries and faults."""

from __future__ import annotations

import asyncio
import logging

import httpx
import pytest

from llmcore.errors import APIStatusError, ResponseParseError, TransportError
from llmcore.messages import Text
from llmcore.providers.anthropic import PROVIDER
from llmcore.transport import AsyncHTTPTransport, HTTPTransport, MissingAPIKeyError, RetryPolicy
from tests.transport.server import Reply, free_port_url, serve

KEY = "sk-ant-test-SECRET-0123456789"
OK = (
    b'{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":'
    b'[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}}'
)
SSE = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":5}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hel"}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)
SSE_HEADERS = {"content-type": "text/event-stream"}
BODY = '{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"hé  "}]}]}'.encode()


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def transport(url: str, sleeps: Sleeps, **kw: object) -> HTTPTransport:
    return HTTPTransport(
        base_urls={"anthropic": url},
        api_keys={"anthropic": KEY},
        sleep=sleeps,
        rand=lambda: 0.0,
        **{"timeout": 5.0, **kw},  # type: ignore[arg-type]
    )


def test_sends_the_exact_bytes_with_auth_headers_and_parses() -> None:
    sleeps = Sleeps()
    with serve(Reply(body=OK)) as server, transport(server.url, sleeps) as t:
        parsed = t.send(PROVIDER, BODY)
    seen = server.seen[0]
    assert seen.path == "/v1/messages"
    assert seen.body == BODY
    assert seen.headers["x-api-key"] == KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["content-type"] == "application/json"
    assert parsed.content == (Text(text="hello"),)
    assert parsed.usage.input == 5
    assert sleeps == []


def test_streamed_response_over_loopback() -> None:
    with (
        serve(Reply(body=SSE, headers=SSE_HEADERS)) as server,
        transport(server.url, Sleeps()) as t,
    ):
        parsed = t.send(PROVIDER, BODY, stream=True)
    assert parsed.content == (Text(text="hello"),)
    assert parsed.usage.output == 2


def test_key_and_base_url_from_environment_and_never_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    with serve(
        Reply(
            status=401,
            body=b'{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
        )
    ) as server:
        env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url}
        with HTTPTransport(environ=env, sleep=Sleeps()) as t, pytest.raises(APIStatusError) as info:
            t.send(PROVIDER, BODY)
    assert server.seen[0].headers["x-api-key"] == KEY
    assert info.value.status == 401 and not info.value.retryable
    assert KEY not in str(info.value)
    assert all(KEY not in r.getMessage() for r in caplog.records)
    assert len(server.seen) == 1


def test_missing_key_for_the_real_api_is_a_caller_error() -> None:
    with (
        HTTPTransport(environ={}) as t,
        pytest.raises(MissingAPIKeyError, match="ANTHROPIC_API_KEY"),
    ):
        t.send(PROVIDER, BODY)


def test_connection_refused_is_retried_then_a_transport_error() -> None:
    sleeps = Sleeps()
    with transport(free_port_url(), sleeps) as t, pytest.raises(TransportError) as info:
        t.send(PROVIDER, BODY)
    assert "no response" in str(info.value) and info.value.retryable
    assert sleeps == [0.5, 1.0]


def test_429_honours_retry_after_then_succeeds() -> None:
    limited = Reply(
        status=429,
        body=b'{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
        headers={"content-type": "application/json", "retry-after": "2"},
    )
    sleeps = Sleeps()
    with serve(limited, Reply(body=OK)) as server, transport(server.url, sleeps) as t:
        parsed = t.send(PROVIDER, BODY)
    assert sleeps == [2.0]
    assert [s.body for s in server.seen] == [BODY, BODY]
    assert parsed.content == (Text(text="hello"),)


def test_529_overloaded_is_retried_with_backoff_and_raised_when_it_persists() -> None:
    overloaded = Reply(
        status=529,
        body=b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_9"}',
    )
    sleeps = Sleeps()
    with serve(overloaded, overloaded, overloaded) as server, transport(server.url, sleeps) as t:
        with pytest.raises(APIStatusError) as info:
            t.send(PROVIDER, BODY)
    assert info.value.status == 529 and info.value.error_type == "overloaded_error"
    assert info.value.request_id == "req_9" and info.value.retryable
    assert sleeps == [0.5, 1.0]
    assert len(server.seen) == 3


def test_500_then_success() -> None:
    sleeps = Sleeps()
    failing = Reply(status=500, body=b'{"type":"error","error":{"type":"api_error","message":"x"}}')
    with serve(failing, Reply(body=OK)) as server, transport(server.url, sleeps) as t:
        parsed = t.send(PROVIDER, BODY)
    assert parsed.usage.input == 5 and sleeps == [0.5]


def test_400_is_not_retried() -> None:
    bad = Reply(
        status=400,
        body=b'{"type":"error","error":{"type":"invalid_request_error","message":"messages.0: bad"}}',
    )
    sleeps = Sleeps()
    with serve(bad, Reply(body=OK)) as server, transport(server.url, sleeps) as t:
        with pytest.raises(APIStatusError, match="invalid_request_error: messages.0: bad"):
            t.send(PROVIDER, BODY)
    assert sleeps == [] and len(server.seen) == 1


def test_stream_cut_in_the_middle_is_a_transport_error_without_retry() -> None:
    sleeps = Sleeps()
    cut = Reply(body=SSE, headers=SSE_HEADERS, cut_after=len(SSE) // 2)
    with (
        serve(cut, Reply(body=SSE, headers=SSE_HEADERS)) as server,
        transport(server.url, sleeps) as t,
    ):
        with pytest.raises(TransportError, match="stream broke after"):
            t.send(PROVIDER, BODY, stream=True)
    assert len(server.seen) == 1 and sleeps == []


def test_non_json_success_body_is_a_parse_error() -> None:
    html = Reply(
        body=b"<html>hello</html>", headers={"content-type": "text/html", "request-id": "req_7"}
    )
    with serve(html) as server, transport(server.url, Sleeps()) as t:
        with pytest.raises(ResponseParseError, match=r"not valid JSON.*request id req_7"):
            t.send(PROVIDER, BODY)


def test_non_json_gateway_error_is_a_retryable_status_error() -> None:
    sleeps = Sleeps()
    gateway = Reply(
        status=502, body=b"<html>Bad Gateway</html>", headers={"content-type": "text/html"}
    )
    with serve(gateway, gateway, gateway) as server, transport(server.url, sleeps) as t:
        with pytest.raises(APIStatusError, match="HTTP 502: <html>Bad Gateway") as info:
            t.send(PROVIDER, BODY)
    assert info.value.error_type is None and len(sleeps) == 2


def test_retry_after_beyond_the_cap_is_not_waited_for() -> None:
    sleeps = Sleeps()
    limited = Reply(status=429, body=b"{}", headers={"retry-after": "3600"})
    with (
        serve(limited) as server,
        transport(server.url, sleeps) as t,
        pytest.raises(APIStatusError),
    ):
        t.send(PROVIDER, BODY)
    assert sleeps == [] and len(server.seen) == 1


def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(max_retries=10, initial_delay=1.0, max_delay=5.0, jitter=0.5)
    error = APIStatusError("x", provider="p", status=503)
    assert [policy.delay(n, error, 0.0) for n in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert policy.delay(1, error, 1.0) == 1.0
    assert policy.delay(10, error, 0.0) is None
    assert policy.delay(0, APIStatusError("x", provider="p", status=404), 0.0) is None


def test_mock_transport_handler_sees_exact_bytes() -> None:
    seen: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200, content=OK, headers={"content-type": "application/json"})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    with HTTPTransport(client=client, api_keys={"anthropic": KEY}) as t:
        assert t.send(PROVIDER, BODY).content == (Text(text="hello"),)
    client.close()
    assert seen == [BODY]


def test_async_transport_retries_and_streams_over_loopback() -> None:
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    async def run(url: str) -> tuple[object, object]:
        async with AsyncHTTPTransport(
            base_urls={"anthropic": url}, api_keys={"anthropic": KEY}, sleep=sleep, rand=lambda: 0.0
        ) as t:
            first = await t.send(PROVIDER, BODY, stream=True)
            with pytest.raises(TransportError, match="stream broke"):
                await t.send(PROVIDER, BODY, stream=True)
            return first, None

    limited = Reply(status=429, body=b"{}", headers={"retry-after-ms": "250"})
    cut = Reply(body=SSE, headers=SSE_HEADERS, cut_after=100)
    with serve(limited, Reply(body=SSE, headers=SSE_HEADERS), cut) as server:
        first, _ = asyncio.run(run(server.url))
    assert sleeps == [0.25]
    assert first.content == (Text(text="hello"),)  # type: ignore[attr-defined]
    assert [s.body for s in server.seen] == [BODY, BODY, BODY]


def test_error_event_mid_stream_is_retried_like_its_status() -> None:
    overloaded = (
        SSE.split(b"event: content_block_start")[0]
        + b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    sleeps = Sleeps()
    replies = (Reply(body=overloaded, headers=SSE_HEADERS), Reply(body=SSE, headers=SSE_HEADERS))
    with serve(*replies) as server, transport(server.url, sleeps) as t:
        parsed = t.send(PROVIDER, BODY, stream=True)
    assert parsed.content == (Text(text="hello"),)
    assert sleeps == [0.5] and len(server.seen) == 2


def test_truncated_stream_without_message_stop_is_a_parse_error() -> None:
    short = SSE.split(b"event: message_stop")[0]
    with (
        serve(Reply(body=short, headers=SSE_HEADERS)) as server,
        transport(server.url, Sleeps()) as t,
    ):
        with pytest.raises(ResponseParseError, match="before message_stop"):
            t.send(PROVIDER, BODY, stream=True)


def test_read_timeout_is_a_retryable_transport_error() -> None:
    sleeps = Sleeps()
    slow = Reply(body=OK, delay=1.0)
    with serve(slow) as server:
        with transport(server.url, sleeps, retry=RetryPolicy(max_retries=0), timeout=0.2) as t:
            with pytest.raises(TransportError, match="ReadTimeout") as info:
                t.send(PROVIDER, BODY)
    assert info.value.retryable and sleeps == []
