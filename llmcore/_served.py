"""An ASGI app on uvicorn, on a socket bound first, in a thread or the caller's (SPEC V2, V6).

The emulator (:class:`llmcore.emulator.Emulator`) and the proxy (:class:`llmcore.proxy.Proxy`)
both serve this way: :class:`Served` binds the socket itself — so the port is known (port 0:
the OS picks one) and a taken address is a typed error before any thread starts — with
``IPPROTO_TCP`` so asyncio sets ``TCP_NODELAY`` on each accepted connection (no 40 ms
delayed-ACK stalls), then runs a ``uvicorn.Server`` on it. Imports uvicorn only.

Leaves out: the apps themselves.
"""

from __future__ import annotations

import socket
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from types import TracebackType
from typing import Any, Self

import uvicorn

__all__ = ["Served", "StartStop"]


class Served:
    """One server's socket, uvicorn server and thread.

    Args:
        name: What the errors call it (``emulator``, ``proxy``).
        host: Interface to bind (``::1``-style hosts bind IPv6).
        port: TCP port; 0 lets the OS choose (:attr:`port`).
        error: Makes the owner's typed error from a message.
        on_close: Called each time the socket is closed (after serving).
    """

    def __init__(
        self,
        name: str,
        host: str,
        port: int,
        error: Callable[[str], Exception],
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.name, self.host = name, host
        self._port, self._error, self._on_close = port, error, on_close
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    @property
    def port(self) -> int:
        """The bound TCP port (raises the owner's error before the socket is bound)."""
        if self._socket is None:
            raise self._error(f"the {self.name} is not started")
        port: int = self._socket.getsockname()[1]
        return port

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` (IPv6 hosts in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _bind(self, app: Any, config: dict[str, Any]) -> uvicorn.Server:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self._port))
        except (OSError, OverflowError) as exc:  # OverflowError: a port outside 0-65535
            sock.close()
            raise self._error(f"cannot listen on {self.host}:{self._port}: {exc}") from exc
        sock.listen(2048)
        self._socket = sock
        options: dict[str, Any] = {
            "log_level": "warning",
            "access_log": False,
            "ws": "none",
            "timeout_keep_alive": 60,
            "loop": "auto",  # uvloop when installed
        }
        self._server = uvicorn.Server(uvicorn.Config(app, **(options | config)))
        return self._server

    def start(self, app: Any, config: dict[str, Any], timeout: float = 10.0) -> None:
        """Serve ``app`` in a daemon thread; return once it accepts connections.

        ``config``: ``uvicorn.Config`` options over the defaults (warning log level, no
        access log, no websockets, 60 s keep-alive, uvloop when installed).

        Raises:
            The owner's error: already started, the address cannot be bound, or the server
            did not start within ``timeout`` seconds.
        """
        if self._thread is not None:
            raise self._error(f"the {self.name} is already started")
        server = self._bind(app, config)
        thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self._socket]}, daemon=True, name=self.name
        )
        self._thread = thread
        thread.start()
        waited = threading.Event()
        for _ in range(max(1, int(timeout / 0.01))):
            if server.started or not thread.is_alive():
                break
            waited.wait(0.01)
        if not server.started:
            self.stop()
            raise self._error(f"the {self.name} server did not start")

    def serve_forever(
        self, app: Any, config: dict[str, Any], on_ready: Callable[[], None] | None = None
    ) -> None:
        """Serve ``app`` in the calling thread until interrupted; ``on_ready`` once bound.

        Raises:
            The owner's error: the address cannot be bound.
        """
        server = self._bind(app, config)
        if on_ready is not None:
            on_ready()
        try:
            server.run(sockets=[self._socket] if self._socket else None)
        finally:
            self._close()

    def _close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        if self._on_close is not None:
            self._on_close()

    def stop(self) -> None:
        """Stop serving and wait for the thread (at most 10 s); close the socket (idempotent)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._thread = None
        self._server = None
        self._close()


class StartStop(ABC):
    """A server that is a context manager: ``with`` calls :meth:`start`, then :meth:`stop`."""

    @abstractmethod
    def start(self, timeout: float = 10.0) -> Self:
        """Serve in a background thread; return ``self`` once it accepts connections."""

    @abstractmethod
    def stop(self) -> None:
        """Stop serving (idempotent)."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
