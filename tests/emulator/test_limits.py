"""Body limits, header and body timeouts, and clients that leave mid-body (emulator limits).

No test waits for time to pass: each client sends a fixed prefix of a request and nothing
more, so the server's 413/408 or close is the only thing that can end the read (the sockets'
10 s timeout is a safety net that turns a hang into a failure).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from llmcore.emulator import Emulator, Limits, ManualClock
from llmcore.emulator.limits import (
    ANTHROPIC_MAX_BODY,
    BODY_DEADLINE,
    MAX_BODIES_IN_FLIGHT,
    MAX_HEADER_BYTES,
    MAX_HEADER_LINES,
    OPENAI_MAX_BODY,
)
from tests.emulator import rawhttp
from tests.emulator.helpers import ANTHROPIC_HEADERS, OPENAI_HEADERS, Api

SMALL = 4096
ENDPOINTS = [
    pytest.param("/v1/messages", "anthropic", id="messages"),
    pytest.param("/v1/chat/completions", "openai", id="chat"),
    pytest.param("/v1/responses", "openai", id="responses"),
]


def _headers(shape: str, **extra: str) -> dict[str, str]:
    return {**(ANTHROPIC_HEADERS if shape == "anthropic" else OPENAI_HEADERS), **extra}


def _send(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``data`` and nothing more; return the answer read until the server closes."""
    with rawhttp.connect(port) as sock:
        sock.sendall(data)
        return rawhttp.parse(rawhttp.read_until_closed(sock))


def _assert_error(shape: str, headers: dict[str, str], body: bytes, kind: str) -> dict[str, Any]:
    data = rawhttp.json_body(body)
    assert headers["connection"] == "close"
    if shape == "anthropic":
        assert data["type"] == "error"
        assert data["error"]["type"] == kind
        assert data["request_id"] == headers["request-id"]
    else:
        assert data["error"]["type"] == "invalid_request_error"
        assert data["error"]["code"] == kind
        assert headers["x-request-id"].startswith("req_")
    error: dict[str, Any] = data["error"]
    return error


@pytest.fixture(scope="module")
def small() -> Iterator[Emulator]:
    """An emulator whose endpoints take at most 4 KiB bodies."""
    limits = Limits(anthropic_max_body=SMALL, openai_max_body=SMALL)
    with Emulator(clock=ManualClock(), limits=limits) as emu:
        yield emu


def test_default_limits_are_documented_values() -> None:
    assert Limits().anthropic_max_body == ANTHROPIC_MAX_BODY == 32 * 1024 * 1024
    assert Limits().openai_max_body == OPENAI_MAX_BODY == 50 * 1024 * 1024
    assert Limits().header_timeout == 30.0
    assert Limits().body_timeout == 30.0
    assert Limits().body_deadline == BODY_DEADLINE == 120.0
    assert Limits().max_header_bytes == MAX_HEADER_BYTES == 64 * 1024
    assert Limits().max_header_lines == MAX_HEADER_LINES == 100
    assert Limits().bodies_in_flight == MAX_BODIES_IN_FLIGHT == 256 * 1024 * 1024
    for field in (
        "anthropic_max_body",
        "header_timeout",
        "body_timeout",
        "body_deadline",
        "max_header_bytes",
        "max_header_lines",
        "bodies_in_flight",
        "cache_bytes",
    ):
        with pytest.raises(ValueError, match=field):
            Limits(**{field: 0})


@pytest.mark.parametrize(("path", "shape"), ENDPOINTS)
def test_declared_oversize_body_gets_413_before_any_body_byte(
    api: Api, path: str, shape: str
) -> None:
    limit = ANTHROPIC_MAX_BODY if shape == "anthropic" else OPENAI_MAX_BODY
    head = rawhttp.head(path, _headers(shape, **{"content-length": str(limit + 1)}))
    status, headers, body = _send(api.emu.port, head)
    assert status == 413
    error = _assert_error(shape, headers, body, "request_too_large")
    if shape == "anthropic":
        assert error["message"] == "Request exceeds the maximum allowed number of bytes."
    else:
        assert str(limit) in error["message"]


@pytest.mark.parametrize(("path", "shape"), ENDPOINTS)
def test_chunked_body_gets_413_as_soon_as_it_passes_the_limit(
    small: Emulator, path: str, shape: str
) -> None:
    head = rawhttp.head(path, _headers(shape, **{"transfer-encoding": "chunked"}))
    chunk = b"%x\r\n%s\r\n" % (SMALL + 100, b"a" * (SMALL + 100))  # and no final chunk
    status, headers, body = _send(small.port, head + chunk)
    assert status == 413
    _assert_error(shape, headers, body, "request_too_large")


@pytest.mark.parametrize(("path", "shape"), ENDPOINTS)
def test_body_exactly_at_the_limit_is_read_and_parsed(
    small: Emulator, path: str, shape: str
) -> None:
    response = httpx.post(
        small.base_url + path, content=b"x" * SMALL, headers=_headers(shape), timeout=10
    )
    assert response.status_code == 400  # not JSON: read whole, then refused by the parser
    over = httpx.post(
        small.base_url + path, content=b"x" * (SMALL + 1), headers=_headers(shape), timeout=10
    )
    assert over.status_code == 413


def test_header_timeout_closes_a_connection_that_sends_part_of_its_head() -> None:
    with Emulator(limits=Limits(header_timeout=0.05)) as emu:
        status, headers, body = _send(emu.port, b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n")
        assert status == 408
        assert headers["connection"] == "close"
        assert body == b"request header read timed out\n"


def test_header_timeout_closes_a_connection_that_sends_nothing() -> None:
    with Emulator(limits=Limits(header_timeout=0.05)) as emu:
        status, _, _ = _send(emu.port, b"")
        assert status == 408


@pytest.mark.parametrize(("path", "shape"), ENDPOINTS)
def test_body_timeout_answers_408_in_the_provider_shape(path: str, shape: str) -> None:
    with Emulator(limits=Limits(body_timeout=0.05)) as emu:
        head = rawhttp.head(path, _headers(shape, **{"content-length": "1000"}))
        status, headers, body = _send(emu.port, head + b'{"model":')
        assert status == 408
        error = _assert_error(
            shape, headers, body, "timeout_error" if shape == "anthropic" else "request_timeout"
        )
        assert "after 9 bytes" in error["message"]
        assert emu.engine.counts == {"requests": 1, "rejected": 1}


class _Collect(logging.Handler):
    """Keeps records; sets ``arrived`` on the first one."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.arrived = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.arrived.set()


def test_client_leaving_mid_body_leaves_one_log_line_and_no_traceback(api: Api) -> None:
    ours, uvicorn_errors = _Collect(), _Collect()
    logging.getLogger("llmcore.emulator").addHandler(ours)
    logging.getLogger("uvicorn.error").addHandler(uvicorn_errors)
    before = dict(api.emu.engine.counts)
    try:
        head = rawhttp.head(
            "/v1/chat/completions", _headers("openai", **{"content-length": "50000"})
        )
        with rawhttp.connect(api.emu.port) as sock:
            sock.sendall(head + b"a" * 12345)
        assert ours.arrived.wait(rawhttp.SAFETY_TIMEOUT), "no log line for the disconnect"
        # a later request is answered by the same event loop, after the first one's task ended
        assert api.chat({"model": "gpt-4o", "messages": []}).status_code == 400
    finally:
        logging.getLogger("llmcore.emulator").removeHandler(ours)
        logging.getLogger("uvicorn.error").removeHandler(uvicorn_errors)
    [record] = [r for r in ours.records if r.name == "llmcore.emulator"]
    line = record.getMessage()
    assert line.startswith(
        "llmcore emulator: client disconnected mid-body (POST /v1/chat/completions, "
    )
    assert line.endswith(" of 50000 bytes)")
    assert "\n" not in line and record.exc_info is None
    assert uvicorn_errors.records == []
    assert api.emu.engine.counts["requests"] == before["requests"] + 1  # the later request only


# --- request head size (header flood) ---------------------------------------------------------

HEAD_START = b"POST /v1/messages HTTP/1.1\r\nhost: x\r\n"
TEXT_431 = b"request header fields too large\n"


def _assert_431(answer: tuple[int, dict[str, str], bytes]) -> None:
    status, headers, body = answer
    assert status == 431
    assert headers["connection"] == "close"
    assert headers["content-type"] == "text/plain; charset=utf-8"
    assert body == TEXT_431


def test_more_header_lines_than_the_default_limit_get_431_before_the_head_ends(api: Api) -> None:
    before = dict(api.emu.engine.counts)
    # host and 100 x-N lines are delivered to the parser callbacks (101 > 100); the last one
    # waits for the next line to start
    flood = b"".join(b"x-%d: a\r\n" % n for n in range(MAX_HEADER_LINES + 1))
    _assert_431(_send(api.emu.port, HEAD_START + flood))  # and the head never ends
    assert api.emu.engine.counts == before  # refused before the application saw a request


def test_header_bytes_over_the_limit_get_431_before_the_head_ends() -> None:
    with Emulator(limits=Limits(max_header_bytes=1024)) as emu:
        flood = b"".join(b"x-%d: %s\r\n" % (n, b"a" * 90) for n in range(15))  # about 1.5 KiB
        _assert_431(_send(emu.port, HEAD_START + flood))


def test_a_header_line_that_never_ends_gets_431() -> None:
    with Emulator(limits=Limits(max_header_bytes=1024)) as emu:
        _assert_431(_send(emu.port, HEAD_START + b"x-endless: " + b"a" * 5000))


def test_a_url_over_the_limit_gets_431() -> None:
    with Emulator(limits=Limits(max_header_bytes=1024)) as emu:
        _assert_431(_send(emu.port, b"POST /v1/messages?q=" + b"a" * 2000))


@pytest.mark.parametrize(
    "limits",
    [
        pytest.param(Limits(max_header_bytes=1024), id="bytes"),
        pytest.param(Limits(max_header_lines=5), id="lines"),
    ],
)
def test_a_complete_head_over_the_limit_gets_431_and_never_reaches_the_app(
    limits: Limits,
) -> None:
    with Emulator(clock=ManualClock(), limits=limits) as emu:
        extra = {f"x-{n}": "a" * 100 for n in range(10)}
        head = rawhttp.head(
            "/v1/messages", _headers("anthropic", **extra, **{"content-length": "2"})
        )
        _assert_431(_send(emu.port, head + b"{}"))
        assert emu.engine.counts == {"requests": 0, "rejected": 0}


def test_heads_under_the_limits_and_bodies_over_them_are_served_on_one_connection() -> None:
    limits = Limits(max_header_bytes=1024, max_header_lines=10)
    with Emulator(clock=ManualClock(), limits=limits) as emu, httpx.Client(timeout=10) as client:
        for _ in range(3):  # keep-alive: each body is far longer than the head limit
            response = client.post(
                emu.base_url + "/v1/chat/completions",
                content=b"x" * 200_000,
                headers=_headers("openai"),
            )
            assert response.status_code == 400  # read whole, refused by the JSON parser


# --- body deadline and bodies in flight ---------------------------------------------------------


@pytest.mark.parametrize(("path", "shape"), ENDPOINTS)
def test_a_body_not_complete_by_the_deadline_gets_408_in_the_provider_shape(
    path: str, shape: str
) -> None:
    with Emulator(limits=Limits(body_deadline=0.05)) as emu:  # body_timeout stays 30 s
        head = rawhttp.head(path, _headers(shape, **{"content-length": "1000"}))
        status, headers, body = _send(emu.port, head + b'{"model":')
        assert status == 408
        error = _assert_error(
            shape, headers, body, "timeout_error" if shape == "anthropic" else "request_timeout"
        )
        assert "the whole body must arrive within 0.05 s (9 bytes received)" in error["message"]
        assert emu.engine.counts == {"requests": 1, "rejected": 1}
        assert emu.body_bytes_held == 0


def _wait_for(condition: Callable[[], bool]) -> None:
    """Wait until ``condition`` holds (a state the server reaches; the timeout is a safety net)."""
    deadline = time.monotonic() + rawhttp.SAFETY_TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, "the server never reached the expected state"
        time.sleep(0.002)


@pytest.mark.parametrize(("path", "shape"), ENDPOINTS)
def test_bodies_in_flight_over_the_limit_get_503_and_are_released(path: str, shape: str) -> None:
    limits = Limits(anthropic_max_body=SMALL, openai_max_body=SMALL, bodies_in_flight=6000)
    with Emulator(clock=ManualClock(), limits=limits) as emu:
        head = rawhttp.head(path, _headers(shape, **{"content-length": str(SMALL)}))
        with rawhttp.connect(emu.port) as holder:
            holder.sendall(head + b"a" * 4000)  # and the last 96 bytes never come
            _wait_for(lambda: emu.body_bytes_held == 4000)
            status, headers, body = _send(emu.port, head + b"b" * 4000)
            assert status == 503
            assert headers["connection"] == "close"
            data = rawhttp.json_body(body)
            if shape == "anthropic":
                assert data["error"]["type"] == "overloaded_error"
            else:
                assert (data["error"]["type"], data["error"]["code"]) == ("server_error", None)
            assert "6000 bytes" in data["error"]["message"]
            assert emu.body_bytes_held == 4000  # the refused body's bytes were given back
        _wait_for(lambda: emu.body_bytes_held == 0)  # the holder left: its bytes too
        answer = httpx.post(
            emu.base_url + path, content=b"c" * 4000, headers=_headers(shape), timeout=10
        )
        assert answer.status_code == 400  # read whole, then refused by the JSON parser
        assert emu.body_bytes_held == 0  # given back before the response was sent


def test_a_head_of_exactly_the_line_limit_is_served(api: Api) -> None:
    extra = {f"x-{n}": "a" for n in range(MAX_HEADER_LINES - 5)}  # + host, length and 3 more
    head = rawhttp.head("/v1/messages", {**_headers("anthropic"), **extra, "content-length": "2"})
    assert head.count(b"\r\n") - 2 == MAX_HEADER_LINES  # request line and the blank line aside
    with rawhttp.connect(api.emu.port) as sock:
        sock.sendall(head + b"{}")
        status = int(sock.recv(65536).split(b" ")[1])
    assert status == 400  # reached the application, refused there (no model)
