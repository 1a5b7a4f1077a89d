"""In-test servers: any ASGI app on uvicorn on a free loopback port; a watched proxy session."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import uvicorn

from llmcore.audit import LiveAudit, Observation, watch
from llmcore.emulator import Emulator
from llmcore.proxy import Proxy


@contextmanager
def serve(app: Any) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1; yield its base URL; stop it after."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", ws="none", access_log=False)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    started = threading.Event()
    while not server.started:
        started.wait(0.005)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Watched:
    """A proxy with a record in front of an emulator, and a watched httpx2 client for the SDK."""

    proxy: Proxy
    record: Path
    http: httpx2.Client
    seen: list[Observation] = field(default_factory=list)
    """What the proxy audited (its observer)."""
    hooked: list[Observation] = field(default_factory=list)
    """The breaks the hook reported (its ``on_break``)."""
    hook_audit: LiveAudit = field(default_factory=LiveAudit)


@contextmanager
def watched(emulator: Emulator, tmp_path: Path) -> Iterator[Watched]:
    """The proxy (record ``tmp_path/record.jsonl``) and a watched client; both closed after."""
    seen: list[Observation] = []
    hooked: list[Observation] = []
    audit = LiveAudit()
    record = tmp_path / "record.jsonl"
    with (
        Proxy(emulator.base_url, record=record, observer=seen.append) as proxy,
        watch(httpx2.Client(), on_break=hooked.append, audit=audit) as http,
    ):
        yield Watched(proxy, record, http, seen, hooked, audit)
