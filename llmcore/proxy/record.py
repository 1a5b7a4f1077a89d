"""An ASGI middleware that writes the record of the model requests an app serves (SPEC V6).

``llmcore emulate --record FILE`` wraps the emulator in :class:`Recording`: each POST to a
model endpoint is audited once its answer has been sent, in the audit thread
(:class:`~llmcore.proxy.worker.AuditWorker`; :class:`~llmcore.audit.live.LiveAudit`, for the
conversation key), and written as one line of the record
(:class:`~llmcore.audit.live.RecordWriter`), the format ``llmcore proxy --record`` writes, with
the usage read from a copy of the answer's bytes (:class:`~llmcore.audit.tap.UsageTap`). No
header is recorded.

Leaves out: forwarding (:mod:`llmcore.proxy.server`).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from llmcore.audit.live import LiveAudit, RecordWriter, is_model_path
from llmcore.audit.tap import UsageTap
from llmcore.proxy.worker import AuditJob, AuditWorker

__all__ = ["Recording"]


class Recording:
    """Wraps an ASGI app; records each model request it answers.

    Args:
        app: The ASGI application (the emulator's).
        path: The JSONL file to append to.

    Raises:
        OSError: The file cannot be opened for appending.
    """

    def __init__(self, app: Any, path: Path) -> None:
        self.app = app
        self.audit = LiveAudit()
        """The audit giving each line its conversation."""
        self.writer = RecordWriter(path)
        self._worker = AuditWorker(
            AuditJob(self.audit, self.writer, log_unread=False), name="llmcore-record"
        )

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        """Serve one ASGI scope; a model request's line is written once it is answered."""
        if scope["type"] != "http" or scope["method"] != "POST" or not is_model_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        parts: list[bytes] = []
        answer: dict[str, Any] = {"status": 0, "tap": None}

        async def receiving() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                parts.append(message.get("body", b""))
            return message

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = {k.lower(): v.decode("latin-1") for k, v in message.get("headers", ())}
                answer["status"] = message["status"]
                answer["tap"] = UsageTap(
                    headers.get(b"content-type"), headers.get(b"content-encoding")
                )
            elif message["type"] == "http.response.body" and answer["tap"] is not None:
                answer["tap"].feed(message.get("body", b""))
            await send(message)

        ticket = self._worker.ticket()  # its place: the order requests came in
        try:
            await self.app(scope, receiving, sending)
        finally:
            self._worker.put(
                b"".join(parts), scope["path"], answer["status"], answer["tap"], ticket=ticket
            )

    def close(self) -> None:
        """Write the lines of every request answered, then close the record file."""
        self._worker.drain()
        self.writer.close()
