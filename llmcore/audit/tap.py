"""Reading a response's reported usage from its bytes as they pass (SPEC V6, U1).

A :class:`UsageTap` is fed a response body chunk by chunk — a copy of what a proxy forwards or
an httpx stream yields to its caller — and keeps only what it needs: for server-sent events,
the ``data:`` lines that carry a ``usage`` object; for a JSON body, the body itself (up to
:data:`MAX_JSON_BYTES`). :meth:`UsageTap.finish` returns the provider's ``usage`` object as
received (Anthropic's ``message_start`` usage updated by ``message_delta``'s; OpenAI Chat's
usage chunk; Responses' ``response.completed`` usage; a Bedrock ConverseStream's ``metadata``
event usage, or an InvokeModel stream's Anthropic events inside its ``chunk`` events), which
:func:`llmcore.audit.usage.usage_of` turns into :class:`~llmcore.audit.usage.RecordedUsage`;
then :attr:`UsageTap.response_id` is a Responses answer's ``id`` (what a later request's
``previous_response_id`` names, https://platform.openai.com/docs/api-reference/responses/create).
The field names follow the providers' API references, listed in :mod:`llmcore.audit.usage`.

An ``application/vnd.amazon.eventstream`` body is read frame by frame (the AWS event-stream
framing, https://docs.aws.amazon.com/transcribe/latest/dg/event-stream.html: a 4-byte
big-endian total length, a 4-byte headers length, the prelude CRC, headers, payload, message
CRC); only payloads are read, CRCs are not checked (the client does that), and a frame longer
than :data:`MAX_LINE_BYTES` is dropped unread.

``gzip`` and ``deflate`` bodies are inflated as they pass; another content encoding (``br``,
``zstd``) gives no usage. A tap never raises on the body's content.

Leaves out: normalizing the usage (:mod:`llmcore.audit.usage`), auditing
(:mod:`llmcore.audit.live`).
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
import zlib
from typing import Any, Final

__all__ = ["EVENTSTREAM", "MAX_JSON_BYTES", "MAX_LINE_BYTES", "UsageTap"]

EVENTSTREAM: Final = "application/vnd.amazon.eventstream"
"""The content type of Amazon Bedrock's streamed answers (ConverseStream, InvokeModel)."""

MAX_JSON_BYTES: Final = 16 * 1024 * 1024
"""A JSON response longer than this many bytes (inflated) is not read for usage."""
MAX_LINE_BYTES: Final = 4 * 1024 * 1024
"""An event-stream line longer than this is dropped unread (its usage, if any, is lost)."""


class UsageTap:
    """Collects the ``usage`` a response reports, from chunks of its body in order.

    Args:
        content_type: The response's ``Content-Type`` (``text/event-stream`` selects the event
            reader; otherwise the first bytes decide).
        content_encoding: The response's ``Content-Encoding`` (``gzip``, ``deflate`` or none).
    """

    __slots__ = (
        "_events",
        "_frames",
        "_inflater",
        "_json",
        "_line",
        "_size",
        "_usage",
        "broken",
        "response_id",
    )

    def __init__(self, content_type: str | None = None, content_encoding: str | None = None):
        encoding = (content_encoding or "").strip().lower()
        self._inflater: Any = None
        self.broken = encoding not in ("", "identity", "gzip", "x-gzip", "deflate")
        """Whether the body cannot be read for usage (an encoding this tap does not inflate,
        or a bad compressed stream)."""
        if encoding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(wbits=31)
        elif encoding == "deflate":
            self._inflater = zlib.decompressobj(wbits=47)  # zlib or gzip header, auto-detected
        kind = (content_type or "").lower()
        self._events: bool | None = True if "text/event-stream" in kind else None
        self._frames: bytearray | None = bytearray() if EVENTSTREAM in kind else None
        self._json = bytearray()
        self._line = bytearray()
        self._size = 0
        self._usage: dict[str, Any] | None = None
        self.response_id: str | None = None
        """An OpenAI Responses answer's ``id`` (``resp_…``), known by :meth:`finish` (a
        stream's from its first ``response.*`` event carrying the response); else ``None``."""

    def feed(self, chunk: bytes) -> None:
        """Read one chunk of the body as received (still compressed, if it was)."""
        if self.broken or not chunk:
            return
        if self._inflater is not None:
            try:
                chunk = self._inflater.decompress(chunk)
            except zlib.error:
                self.broken = True
                return
        if self._frames is not None:
            self._feed_frames(chunk)
            return
        if self._events is None:
            start = chunk.lstrip()[:6]
            if not start:
                return
            self._events = start.startswith((b"event:", b"data:", b":", b"id:"))
        if self._events:
            self._feed_lines(chunk)
        elif self._size + len(chunk) <= MAX_JSON_BYTES:
            self._json += chunk
            self._size += len(chunk)
        else:
            self.broken = True

    def _feed_lines(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if len(self._line) + len(chunk) - start <= MAX_LINE_BYTES:
                    self._line += chunk[start:]
                else:
                    self._line = bytearray(b"\0")  # poisoned: dropped at its newline
                return
            if self._line:
                self._line += chunk[start:end]
                self._line_done(bytes(self._line))
                self._line = bytearray()
            else:
                self._line_done(chunk[start:end])
            start = end + 1

    def _feed_frames(self, chunk: bytes) -> None:
        frames = self._frames
        assert frames is not None
        frames += chunk
        while len(frames) >= 12:
            total, head = struct.unpack_from(">II", frames)
            if total < 16 or head > total - 16 or total > MAX_LINE_BYTES:
                self.broken = True  # not event-stream framing: nothing more can be read
                return
            if len(frames) < total:
                return
            payload = bytes(frames[12 + head : total - 4])
            del frames[:total]
            self._payload(payload)

    def _payload(self, payload: bytes) -> None:
        """Read one event-stream payload: Converse's ``metadata`` or an InvokeModel ``chunk``."""
        if b'"usage"' not in payload and b'"bytes"' not in payload:
            return
        try:
            event = json.loads(payload)
        except (ValueError, RecursionError):
            return
        if not isinstance(event, dict):
            return
        if isinstance(event.get("usage"), dict):  # ConverseStream's metadata event
            self._usage = event["usage"]
        elif isinstance(event.get("bytes"), str):  # InvokeModel: a provider event, base64
            try:
                inner = json.loads(base64.b64decode(event["bytes"], validate=True))
            except (binascii.Error, ValueError, RecursionError):
                return
            if isinstance(inner, dict):
                self._event(inner)

    def _line_done(self, line: bytes) -> None:
        if not line.startswith(b"data:") or (
            b'"usage' not in line and b'"response.created"' not in line
        ):
            return
        try:
            event = json.loads(line[5:])
        except (ValueError, RecursionError):
            return
        if isinstance(event, dict):
            self._event(event)

    def _event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":  # Anthropic: the input counts
            message = event.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            if isinstance(usage, dict):
                self._usage = dict(usage)
        elif kind == "message_delta":  # Anthropic: output counts, sometimes the input again
            usage = event.get("usage")
            if isinstance(usage, dict):
                self._usage = {**(self._usage or {}), **usage}
        elif isinstance(kind, str) and kind.startswith("response."):  # OpenAI Responses
            response = event.get("response")
            if not isinstance(response, dict):
                return
            self._response(response)
            usage = response.get("usage")
            if isinstance(usage, dict):
                self._usage = usage
        else:  # an OpenAI Chat chunk (the last one, with stream_options.include_usage)
            usage = event.get("usage", event.get("usageMetadata"))
            if isinstance(usage, dict):
                self._usage = usage

    def finish(self) -> dict[str, Any] | None:
        """The ``usage`` object the whole body reported, as received (``None``: none found)."""
        if self.broken:
            return None
        if self._frames is not None:
            return self._usage
        if self._events:
            if self._line:
                self._line_done(bytes(self._line))
                self._line = bytearray()
            return self._usage
        if not self._json:
            return None
        try:
            value = json.loads(self._json)
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, dict):
            return None
        self._response(value)
        usage = value.get("usage", value.get("usageMetadata"))
        return usage if isinstance(usage, dict) else None

    def _response(self, value: dict[str, Any]) -> None:
        """Keep a Responses object's ``id`` (``"object": "response"``), the first one seen."""
        found = value.get("id")
        if (
            self.response_id is None
            and value.get("object") == "response"
            and isinstance(found, str)
        ):
            self.response_id = found
