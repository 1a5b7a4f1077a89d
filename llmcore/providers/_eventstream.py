"""The shared AWS event-stream reader (``application/vnd.amazon.eventstream``), as events (P1).

Bedrock's ``converse-stream`` answers in binary frames: a prelude (total length, headers
length, CRC32 of both), headers (``:message-type``, ``:event-type`` or ``:exception-type``,
``:content-type``), a JSON payload and a CRC32 of the whole frame
(https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream
describes the framing). Frames are decoded by botocore's own parser
(``botocore.eventstream.EventStreamBuffer``, which checks both CRCs and the length limits); this
module turns each into an :class:`~llmcore.providers._sse.SSEEvent` whose ``event`` names the
frame — the ``:event-type`` of an event, the ``:exception-type`` of an exception, the
``:error-code`` of an error — whose ``id`` is the ``:message-type`` (``event``, ``exception``,
``error``), and whose ``data`` is the payload text (an error's ``{"message": …}``), so the
provider's stream parser reads it the way every other provider's reads server-sent events.

It needs botocore (the ``aws`` extra, which Bedrock's SigV4 signing needs anyway).
"""

from __future__ import annotations

from typing import Any

from llmcore import jsonbytes
from llmcore.cloud import require
from llmcore.errors import ResponseParseError
from llmcore.providers._sse import SSEEvent

__all__ = ["CONTENT_TYPE", "EventStreamReader"]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
"""The content type of an AWS event stream response."""

_NAME = "bedrock-converse"


class EventStreamReader:
    """Incremental event-stream reader: bytes in chunks of any size → events, frame by frame.

    Args:
        provider: The provider name, for errors.

    Raises:
        MissingDependencyError: botocore is not installed.
    """

    def __init__(self, provider: str = _NAME) -> None:
        self._module = require("botocore.eventstream", extra="aws", what="reading an event stream")
        self._buffer: Any = self._module.EventStreamBuffer()
        self._provider = provider
        self._pending = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Take the next bytes; return the events of the frames they complete.

        Raises:
            ResponseParseError: A frame whose CRC, lengths or headers are wrong, a payload
                that is not UTF-8, or a frame of an unknown message type.
        """
        self._buffer.add_data(chunk)
        self._pending += len(chunk)
        events: list[SSEEvent] = []
        try:
            for message in self._buffer:
                self._pending -= message.prelude.total_length
                events.append(self._event(message.headers, message.payload))
        except self._module.ParserError as exc:
            raise ResponseParseError(
                f"bad event-stream frame ({type(exc).__name__}: {exc})", provider=self._provider
            ) from exc
        return events

    def close(self) -> list[SSEEvent]:
        """Finish the stream.

        Raises:
            ResponseParseError: The stream stopped inside a frame.
        """
        if self._pending:
            raise ResponseParseError(
                f"event stream ended inside a frame ({self._pending} bytes left over)",
                provider=self._provider,
            )
        return []

    def _event(self, headers: dict[str, Any], payload: bytes) -> SSEEvent:
        kind = headers.get(":message-type")
        name_header = {"event": ":event-type", "exception": ":exception-type"}.get(str(kind))
        if kind == "error":
            return SSEEvent(
                event=str(headers.get(":error-code", "error")),
                data=_error_payload(headers.get(":error-message")),
                id="error",
            )
        name = headers.get(name_header) if name_header else None
        if not isinstance(name, str):
            raise ResponseParseError(
                f"event-stream frame of message type {kind!r} without its name header",
                provider=self._provider,
            )
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ResponseParseError(
                f"event {name!r}: payload is not UTF-8 ({exc})", provider=self._provider
            ) from exc
        return SSEEvent(event=name, data=text, id=str(kind))


def _error_payload(message: Any) -> str:
    return jsonbytes.dumps_text({"message": message if isinstance(message, str) else ""})
