"""The AWS event-stream binary framing (``application/vnd.amazon.eventstream``), both ways.

Amazon Bedrock streams (``invoke-with-response-stream``, ``converse-stream``) answer with this
framing instead of server-sent events. Each message is::

    total length   uint32, big-endian: the whole message, these 4 bytes and the CRC included
    headers length uint32, big-endian
    prelude CRC    uint32: CRC-32 of the 8 bytes above
    headers        name length (uint8), name (UTF-8), value type (uint8), value
    payload        total length - headers length - 16 bytes
    message CRC    uint32: CRC-32 of everything before it

Header value types: 0 true, 1 false, 2 int8, 3 int16, 4 int32, 5 int64, 6 bytes (uint16
length), 7 string (uint16 length, UTF-8), 8 timestamp (int64 milliseconds), 9 UUID (16 bytes).
Source: https://docs.aws.amazon.com/transcribe/latest/dg/event-stream.html (the same framing
for every AWS event stream) and botocore's ``botocore/eventstream.py``.

:class:`EventStreamDecoder` takes the body in chunks of any size and returns each whole
message once its last byte arrived; both CRCs are checked. A bad CRC, a length out of bounds
(headers over 128 KiB, a payload over 24 MiB, as botocore limits them), an unknown header
type, or bytes left over at the end raise :class:`~llmcore.errors.ResponseParseError` saying
which message (0-based) and what; memory stays bounded by one message. Writing messages is the
emulator's (:mod:`llmcore.emulator.eventstream`), which imports no provider module (SPEC V4).

Messages are framing only: what ``:message-type``, ``:event-type`` and ``:exception-type`` mean
is the provider module's business (:func:`event_kind` reads them).
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from llmcore.errors import ResponseParseError

__all__ = [
    "CONTENT_TYPE",
    "MAX_HEADERS",
    "MAX_PAYLOAD",
    "EventMessage",
    "EventStreamDecoder",
    "HeaderValue",
    "event_kind",
]

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
"""The content type of an event-stream response."""
MAX_HEADERS: Final = 128 * 1024
"""Largest headers section accepted, bytes (botocore's limit)."""
MAX_PAYLOAD: Final = 24 * 1024 * 1024
"""Largest payload accepted, bytes (botocore's limit)."""

_PRELUDE: Final = 12
_CRC: Final = 4
_MIN_TOTAL: Final = _PRELUDE + _CRC

HeaderValue = bool | int | bytes | str | uuid.UUID
"""A decoded header value: booleans, integers (and timestamps, in ms), bytes, text, UUIDs."""

_FIXED: Final[dict[int, tuple[str, int]]] = {2: (">b", 1), 3: (">h", 2), 4: (">i", 4), 5: (">q", 8)}


@dataclass(frozen=True, slots=True)
class EventMessage:
    """One decoded event-stream message."""

    headers: Mapping[str, HeaderValue]
    """The headers by name (``:message-type``, ``:event-type``, ``:content-type``, …)."""
    payload: bytes
    """The payload bytes, as sent."""


def event_kind(message: EventMessage) -> tuple[str, str]:
    """Return ``(message type, event or exception type)`` of a message.

    ``("event", "chunk")`` for a Bedrock InvokeModel chunk, ``("exception",
    "throttlingException")`` for a modeled error, ``("error", "<:error-code>")`` for an
    unmodeled one; a missing header reads as ``""``.
    """
    headers = message.headers
    kind = str(headers.get(":message-type", ""))
    key = {"event": ":event-type", "exception": ":exception-type"}.get(kind, ":error-code")
    return kind, str(headers.get(key, ""))


class EventStreamDecoder:
    """Incremental decoder of an event-stream body (see the module doc).

    Args:
        provider: The provider's registry name, for errors.
    """

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._buffer = bytearray()
        self._count = 0

    def feed(self, data: bytes) -> list[EventMessage]:
        """Add body bytes; return the messages they complete, in order.

        Raises:
            ResponseParseError: A bad CRC, length or header (the message index is named).
        """
        self._buffer += data
        out: list[EventMessage] = []
        while len(self._buffer) >= _PRELUDE:
            total = self._check_prelude()
            if len(self._buffer) < total:
                break
            frame = bytes(self._buffer[:total])
            del self._buffer[:total]
            out.append(self._message(frame))
            self._count += 1
        return out

    def close(self) -> None:
        """End the stream.

        Raises:
            ResponseParseError: Bytes of an unfinished message are left.
        """
        if self._buffer:
            raise self._error(f"the stream ended inside a message ({len(self._buffer)} bytes)")

    def _check_prelude(self) -> int:
        total, head_len, crc = struct.unpack_from(">III", self._buffer)
        if zlib.crc32(self._buffer[:8]) != crc:
            raise self._error("prelude CRC mismatch")
        if head_len > MAX_HEADERS:
            raise self._error(f"headers of {head_len} bytes (over {MAX_HEADERS})")
        payload = total - head_len - _MIN_TOTAL
        if payload < 0:
            raise self._error(f"total length {total} is shorter than its headers ({head_len})")
        if payload > MAX_PAYLOAD:
            raise self._error(f"payload of {payload} bytes (over {MAX_PAYLOAD})")
        return int(total)

    def _message(self, frame: bytes) -> EventMessage:
        (crc,) = struct.unpack_from(">I", frame, len(frame) - _CRC)
        if zlib.crc32(frame[: len(frame) - _CRC]) != crc:
            raise self._error("message CRC mismatch")
        (head_len,) = struct.unpack_from(">I", frame, 4)
        headers = self._headers(frame[_PRELUDE : _PRELUDE + head_len])
        return EventMessage(headers=headers, payload=frame[_PRELUDE + head_len : -_CRC])

    def _headers(self, data: bytes) -> dict[str, HeaderValue]:
        headers: dict[str, HeaderValue] = {}
        pos = 0
        try:
            while pos < len(data):
                size = data[pos]
                name = data[pos + 1 : pos + 1 + size].decode()
                pos += 1 + size
                value, pos = self._value(data, pos)
                headers[name] = value
        except (IndexError, struct.error, UnicodeDecodeError) as exc:
            raise self._error(f"a header is cut or not UTF-8 ({exc})") from exc
        return headers

    def _value(self, data: bytes, pos: int) -> tuple[HeaderValue, int]:
        kind = data[pos]
        pos += 1
        if kind in (0, 1):
            return kind == 0, pos
        fixed = _FIXED.get(kind) or ((">q", 8) if kind == 8 else None)
        if fixed is not None:
            (number,) = struct.unpack_from(fixed[0], data, pos)
            return int(number), pos + fixed[1]
        if kind == 9:
            if pos + 16 > len(data):
                raise IndexError("UUID")
            return uuid.UUID(bytes=data[pos : pos + 16]), pos + 16
        if kind in (6, 7):
            (size,) = struct.unpack_from(">H", data, pos)
            raw = data[pos + 2 : pos + 2 + size]
            if len(raw) != size:
                raise IndexError("value")
            return (raw.decode() if kind == 7 else raw), pos + 2 + size
        raise self._error(f"unknown header value type {kind}")

    def _error(self, what: str) -> ResponseParseError:
        return ResponseParseError(
            f"{self._provider}: event stream message {self._count}: {what}",
            provider=self._provider,
        )
