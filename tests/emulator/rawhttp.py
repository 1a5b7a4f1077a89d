"""Raw-socket HTTP for limit tests: send exactly some bytes, then read until the server closes.

Every socket has a 10 s timeout as a safety net only: each test's client sends nothing more,
so the server's answer (or close) is what ends the read; a server that never answers makes
the test fail instead of hanging.
"""

from __future__ import annotations

import json
import socket
from typing import Any

SAFETY_TIMEOUT = 10.0


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=SAFETY_TIMEOUT)


def head(path: str, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")


def read_until_closed(sock: socket.socket) -> bytes:
    """Read until the server closes the connection (a reset counts as closed)."""
    chunks: list[bytes] = []
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def parse(response: bytes) -> tuple[int, dict[str, str], bytes]:
    """Split a raw HTTP/1.1 response (Content-Length framed) into status, headers and body."""
    raw_head, _, body = response.partition(b"\r\n\r\n")
    lines = raw_head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return status, headers, body[: int(headers.get("content-length", len(body)))]


def json_body(body: bytes) -> Any:
    return json.loads(body)
