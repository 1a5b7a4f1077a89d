"""The shared server-sent-events reader (``text/event-stream``), used by every provider module.

:class:`SSEReader` turns body bytes, fed in chunks of any size, into :class:`SSEEvent` values by
the WHATWG rules (https://html.spec.whatwg.org/multipage/server-sent-events.html#parsing-an-event-stream):
lines end in CRLF, LF or CR; ``field: value`` with one leading space removed; ``data`` lines
join with LF; a blank line dispatches; lines starting with ``:`` are comments; a leading BOM is
skipped. Bytes that are not UTF-8 raise :class:`~llmcore.errors.ResponseParseError`.

Unlike a browser, :meth:`SSEReader.close` reports a stream that stops inside an event (data after
the last blank line) instead of dropping it silently: a cut stream must never look complete.

It leaves out what the events mean; each provider module's stream parser reads them.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

from llmcore.errors import ResponseParseError

__all__ = ["SSEEvent", "SSEReader", "iter_events"]

_BOM: Final = "\ufeff"


@dataclass(frozen=True, slots=True, kw_only=True)
class SSEEvent:
    """One dispatched server-sent event."""

    event: str
    """The ``event`` field; ``"message"`` when the event named none (the SSE default)."""
    data: str
    """The ``data`` lines joined with LF (no trailing LF)."""
    id: str | None = None
    """The last ``id`` field seen, if any."""


class SSEReader:
    """Incremental ``text/event-stream`` parser.

    Args:
        provider: The provider name, for errors.
    """

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._buffer = ""
        self._partial: list[str] = []
        self._started = False
        self._event = ""
        self._data: list[str] = []
        self._has_fields = False
        self._last_id: str | None = None
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add body bytes and return the events they complete, in order.

        Raises:
            ResponseParseError: The bytes are not UTF-8.
        """
        try:
            text = self._decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            raise ResponseParseError(
                f"event stream is not UTF-8: {exc.reason}", provider=self._provider
            ) from exc
        return self._lines(text)

    def close(self) -> list[SSEEvent]:
        """End the stream and return any last events.

        Raises:
            ResponseParseError: The stream ends inside an event (fields after the last blank
                line) or inside a UTF-8 sequence.
        """
        try:
            tail = self._decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise ResponseParseError(
                "event stream ends inside a UTF-8 sequence", provider=self._provider
            ) from exc
        events = self._lines(tail)
        if self._buffer or self._partial or self._has_fields:
            raise ResponseParseError(
                "event stream ends in the middle of an event (truncated)", provider=self._provider
            )
        return events

    def _lines(self, text: str) -> list[SSEEvent]:
        if not self._started and text:
            self._started = True
            text = text.removeprefix(_BOM)
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]
        self._pending_cr = False
        if "\n" not in text and "\r" not in text:
            if text:
                self._partial.append(text)  # no line ends: keep joining cheap for long lines
            return []
        self._buffer += "".join(self._partial) + text
        self._partial.clear()
        events: list[SSEEvent] = []
        while True:
            cut = _line_end(self._buffer)
            if cut is None:
                return events
            end, width = cut
            if width == 1 and self._buffer[end] == "\r" and end + 1 == len(self._buffer):
                self._pending_cr = True
            line = self._buffer[:end]
            self._buffer = self._buffer[end + width :]
            event = self._line(line)
            if event is not None:
                events.append(event)

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        self._has_fields = True
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._last_id = value
        return None

    def _dispatch(self) -> SSEEvent | None:
        has_data = bool(self._data)
        event = SSEEvent(
            event=self._event or "message", data="\n".join(self._data), id=self._last_id
        )
        self._event = ""
        self._data = []
        self._has_fields = False
        return event if has_data else None


def _line_end(buffer: str) -> tuple[int, int] | None:
    """Return (index, width) of the first line end (CRLF, LF or CR) in ``buffer``, if any."""
    lf = buffer.find("\n")
    cr = buffer.find("\r")
    if cr < 0 and lf < 0:
        return None
    if cr < 0 or (0 <= lf < cr):
        return lf, 1
    if cr + 1 < len(buffer) and buffer[cr + 1] == "\n":
        return cr, 2
    return cr, 1


def iter_events(chunks: Iterable[bytes], provider: str) -> Iterator[SSEEvent]:
    """Yield the events of a whole stream given as byte chunks; see :meth:`SSEReader.close`.

    Raises:
        ResponseParseError: Not UTF-8, or the stream stops inside an event.
    """
    reader = SSEReader(provider)
    for chunk in chunks:
        yield from reader.feed(chunk)
    yield from reader.close()
