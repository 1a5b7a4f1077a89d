"""A small scripted HTTP server on 127.0.0.1 for transport and runner tests (real loopback)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    cut_after: int | None = None  # send only this many body bytes, then drop the connection
    delay: float = 0.0  # seconds to wait before answering


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        return None

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        body = self.rfile.read(length)
        self.server.seen.append(
            Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        )
        reply = (
            self.server.script.pop(0)
            if self.server.script
            else Reply(status=500, body=b"script empty")
        )
        if reply.delay:
            time.sleep(reply.delay)
        self.send_response(reply.status)
        for key, value in reply.headers.items():
            self.send_header(key, value)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        if reply.cut_after is None:
            try:
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                return  # the client gave up first (a timeout test); nothing to report
        else:
            self.wfile.write(reply.body[: reply.cut_after])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[Reply] = []
        self.seen: list[Seen] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@contextmanager
def serve(*replies: Reply) -> Iterator[_Server]:
    server = _Server()
    server.script.extend(replies)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def free_port_url() -> str:
    """A loopback URL on which nothing listens (connection refused)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}"
