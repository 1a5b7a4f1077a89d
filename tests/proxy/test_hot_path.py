"""The proxy's own cost: one write per request upstream, audits off the event loop (SPEC V6)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from llmcore import jsonbytes
from llmcore.audit import Observation
from llmcore.emulator import Emulator
from llmcore.proxy import Proxy
from llmcore.proxy.worker import MAX_WAITING, AuditWorker

ANSWER = b'{"usage": {"prompt_tokens": 3}}'


@contextmanager
def _raw_upstream(first_reads: list[bytes]) -> Iterator[str]:
    """A TCP server answering each request at once; keeps each connection's first read."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)

    def serve() -> None:
        conn, _ = sock.accept()
        with conn:
            first_reads.append(conn.recv(1 << 20))
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER)
            )
            conn.recv(1 << 20)  # until the proxy closes its connection

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        thread.join(timeout=10)
        sock.close()


def test_a_request_goes_upstream_in_one_write() -> None:
    body = jsonbytes.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    first: list[bytes] = []
    with _raw_upstream(first) as upstream, Proxy(upstream) as proxy:
        response = httpx.post(proxy.base_url + "/v1/chat/completions", content=body)
    assert response.status_code == 200 and response.content == ANSWER
    head, _, rest = first[0].partition(b"\r\n\r\n")
    assert rest == body  # head and body in the first read: one segment
    assert b"\r\ncontent-length: %d" % len(body) in head.lower()
    assert head.lower().startswith(b"post /v1/chat/completions http/1.1\r\nhost: 127.0.0.1:")


def test_a_request_is_answered_while_an_earlier_ones_audit_is_still_running() -> None:
    release, first_audit = threading.Event(), threading.Event()

    def slow(observation: Observation) -> None:
        first_audit.set()
        assert release.wait(10)

    body = jsonbytes.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    with Emulator() as emulator, Proxy(emulator.base_url, observer=slow) as proxy:
        with httpx.Client(base_url=proxy.base_url + "/v1") as client:
            assert client.post("/chat/completions", content=body).status_code == 200
            assert first_audit.wait(10)  # the first audit holds the audit thread
            second = client.post("/chat/completions", content=body)
            assert second.status_code == 200 and proxy.audit.requests == 1
            release.set()
    assert proxy.audit.requests == 2  # stopping ran the audits still queued


def test_the_worker_runs_jobs_in_order_and_drain_waits_for_all() -> None:
    done: list[int] = []
    worker = AuditWorker(done.append)
    for n in range(MAX_WAITING * 2):  # more than the queue holds: put waits for a place
        worker.put(n)
    worker.drain()
    assert done == list(range(MAX_WAITING * 2))
    worker.put(-1)  # a drained worker starts again
    worker.drain()
    assert done[-1] == -1


def test_a_failing_job_is_logged_and_the_next_one_runs(caplog: pytest.LogCaptureFixture) -> None:
    done: list[int] = []

    def job(n: int) -> None:
        if n == 0:
            raise RuntimeError("boom")
        done.append(n)

    worker = AuditWorker(job)
    worker.put(0)
    worker.put(1)
    worker.drain()
    assert done == [1]
    assert [r.getMessage() for r in caplog.records] == ["llmcore: the audit of a request failed"]
