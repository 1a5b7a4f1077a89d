"""The proxy's upstream client against raw HTTP/1.1 servers: framing, keep-alive, failures."""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest

from llmcore.proxy import Proxy

OK = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"


def _request(conn: socket.socket, buffer: bytearray) -> bytes | None:
    """Read one request (head and Content-Length body) from ``conn``; ``None`` at its end."""
    while b"\r\n\r\n" not in buffer:
        data = conn.recv(65536)
        if not data:
            return None
        buffer += data
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        rest += conn.recv(65536)
    buffer[:] = rest[length:]
    return head


@contextmanager
def _raw(answer: Callable[[bytes], bytes | None]) -> Iterator[tuple[str, list[int]]]:
    """A server answering each request with ``answer(head)`` (``None``: close at once).

    Yields the base URL and, per connection accepted, the number of requests it carried.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.2)
    counts: list[int] = []
    stop = threading.Event()

    def connection(conn: socket.socket, slot: int) -> None:
        buffer = bytearray()
        with conn:
            while (head := _request(conn, buffer)) is not None:
                counts[slot] += 1
                reply = answer(head)
                if reply is None:
                    return
                conn.sendall(reply)
                if b"connection: close" in reply.lower():
                    return

    def accept() -> None:
        workers = []
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            counts.append(0)
            worker = threading.Thread(target=connection, args=(conn, len(counts) - 1))
            worker.start()
            workers.append(worker)
        for worker in workers:
            worker.join(timeout=10)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", counts
    finally:
        stop.set()
        thread.join(timeout=10)
        sock.close()


def test_connections_are_kept_alive_between_requests() -> None:
    with _raw(lambda head: OK) as (upstream, counts), Proxy(upstream) as proxy:
        with httpx.Client(base_url=proxy.base_url) as client:
            answers = [client.post("/v1/other", content=b"{}") for _ in range(3)]
    assert [a.status_code for a in answers] == [200] * 3 and answers[2].content == b"{}"
    assert counts == [3]  # one upstream connection carried the three


def test_an_answer_that_says_close_is_not_reused() -> None:
    closing = OK.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n", 1)
    with _raw(lambda head: closing) as (upstream, counts), Proxy(upstream) as proxy:
        with httpx.Client(base_url=proxy.base_url) as client:
            assert [client.get("/x").status_code for _ in range(2)] == [200, 200]
    assert counts == [1, 1]


def test_chunked_answers_informational_answers_and_head_requests() -> None:
    def answer(head: bytes) -> bytes:
        if head.startswith(b"HEAD"):  # a length, and no body
            return b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\n\r\n"
        return (
            b"HTTP/1.1 100 Continue\r\n\r\n"
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
            b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
        )

    with _raw(answer) as (upstream, counts), Proxy(upstream) as proxy:
        with httpx.Client(base_url=proxy.base_url) as client:
            head = client.head("/")
            body = client.post("/v1/other", content=b"x")
    assert head.status_code == 200 and head.headers["content-length"] == "99"
    assert body.status_code == 200 and body.content == b"abcdefg"
    assert counts == [1, 1]  # the connection of a HEAD is not reused


@pytest.mark.parametrize(
    ("reply", "status"),
    [(None, 502), (b"NOT HTTP\r\n\r\n", 502)],
    ids=["closed before answering", "malformed"],
)
def test_an_upstream_without_an_answer_is_a_502(
    reply: bytes | None, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    with (
        _raw(lambda head: reply) as (upstream, _),
        Proxy(upstream) as proxy,
        caplog.at_level(logging.WARNING, "llmcore.proxy"),
    ):
        response = httpx.post(proxy.base_url + "/v1/chat/completions", content=b"{}")
    assert response.status_code == status
    assert response.json()["error"]["code"] == "upstream_unreachable"
    lines = [r.getMessage() for r in caplog.records if r.name == "llmcore.proxy"]
    assert len(lines) == 1 and "unreachable" in lines[0]


def test_an_answer_cut_mid_body_ends_the_clients_answer_with_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cut = (  # one chunk, then the connection closes before the last one
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
        b"connection: close\r\n\r\nb\r\ndata: one\n\n\r\n"
    )
    with (
        _raw(lambda head: cut) as (upstream, _),
        Proxy(upstream) as proxy,
        caplog.at_level(logging.WARNING, "llmcore.proxy"),
        httpx.Client() as client,
        client.stream("POST", proxy.base_url + "/v1/other", content=b"{}") as response,
    ):
        got = b"".join(response.iter_raw())
    assert response.status_code == 200 and got == b"data: one\n\n"
    lines = [r.getMessage() for r in caplog.records if r.name == "llmcore.proxy"]
    assert len(lines) == 1 and "failed mid-answer" in lines[0]


def test_a_tls_handshake_that_fails_is_a_502(caplog: pytest.LogCaptureFixture) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)

    def plain() -> None:  # answers the TLS hello in plain HTTP, then closes
        conn, _ = sock.accept()
        with conn:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")

    thread = threading.Thread(target=plain, daemon=True)
    thread.start()
    upstream = f"https://127.0.0.1:{sock.getsockname()[1]}"
    try:
        with Proxy(upstream) as proxy, caplog.at_level(logging.WARNING, "llmcore.proxy"):
            response = httpx.post(proxy.base_url + "/v1/messages", content=b"{}")
    finally:
        thread.join(timeout=10)
        sock.close()
    assert response.status_code == 502 and response.json()["type"] == "error"
    lines = [r.getMessage() for r in caplog.records if r.name == "llmcore.proxy"]
    assert len(lines) == 1 and "unreachable" in lines[0] and "SSL" in lines[0]
