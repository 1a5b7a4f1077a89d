"""Parse a request body and remember the raw text of each prefix item, for a measurement memo.

The emulator measures every prefix item of every request (:mod:`llmcore.emulator.prefix`: strip
cache markers, re-encode, count). Consecutive requests of a conversation repeat almost every
item, so :func:`scan_body` parses the body like :func:`llmcore.jsonbytes.loads` while keeping
the exact source text of each item (``tools[i]``, ``system[i]``, ``messages[i].content[j]`` or a
string ``content``, ``input[i]``); :class:`MeasureMemo` maps that text to the item's
measurement. The same text always parses to the same value, so a memo hit is exactly what
measuring would give. Reading JSON only (``json.JSONDecoder``); all writing stays in
:mod:`llmcore.jsonbytes`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any, Final

from llmcore.emulator.prefix import Kind, measure

__all__ = ["MEMO", "MeasureMemo", "Spans", "scan_body"]

Spans = dict[int, str]
"""``id(parsed item)`` → the item's source text, for the items of one parsed body."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_DECODER: Final = json.JSONDecoder(parse_constant=_refuse_constant)
_WS: Final = re.compile(r"[ \t\n\r]*")
Handler = Callable[[str, str, int, Spans], tuple[Any, int]]


def _skip(text: str, index: int) -> int:
    found = _WS.match(text, index)
    return found.end() if found else index


def _leaf(text: str, index: int) -> tuple[Any, int]:
    value, end = _DECODER.raw_decode(text, index)
    return value, end


def _item(text: str, index: int, spans: Spans) -> tuple[Any, int]:
    value, end = _leaf(text, index)
    if isinstance(value, dict | list | str):
        spans[id(value)] = text[index:end]
    return value, end


def _array(
    text: str, index: int, spans: Spans, each: Callable[[str, int, Spans], tuple[Any, int]]
) -> tuple[list[Any], int]:
    out: list[Any] = []
    index = _skip(text, index + 1)
    if text[index] == "]":
        return out, index + 1
    while True:
        value, index = each(text, index, spans)
        out.append(value)
        index = _skip(text, index)
        if text[index] == "]":
            return out, index + 1
        if text[index] != ",":
            raise ValueError(f"expected , or ] at {index}")
        index = _skip(text, index + 1)


def _object(text: str, index: int, spans: Spans, handle: Handler) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    index = _skip(text, index + 1)
    if text[index] == "}":
        return out, index + 1
    while True:
        key, index = _leaf(text, index)
        if not isinstance(key, str):
            raise ValueError(f"object key expected at {index}")
        index = _skip(text, index)
        if text[index] != ":":
            raise ValueError(f"expected : at {index}")
        value, index = handle(key, text, _skip(text, index + 1), spans)
        out[key] = value
        index = _skip(text, index)
        if text[index] == "}":
            return out, index + 1
        if text[index] != ",":
            raise ValueError(f"expected , or }} at {index}")
        index = _skip(text, index + 1)


def _items_or_leaf(text: str, index: int, spans: Spans) -> tuple[Any, int]:
    if text[index] == "[":
        return _array(text, index, spans, _item)
    return _item(text, index, spans)


def _message_field(key: str, text: str, index: int, spans: Spans) -> tuple[Any, int]:
    if key == "content":
        return _items_or_leaf(text, index, spans)
    return _leaf(text, index)


def _message(text: str, index: int, spans: Spans) -> tuple[Any, int]:
    if text[index] == "{":
        return _object(text, index, spans, _message_field)
    return _item(text, index, spans)


def _top_field(key: str, text: str, index: int, spans: Spans) -> tuple[Any, int]:
    if key in ("tools", "system", "input") and text[index] == "[":
        return _array(text, index, spans, _item)
    if key in ("system", "instructions", "input"):
        return _item(text, index, spans)
    if key == "messages" and text[index] == "[":
        return _array(text, index, spans, _message)
    return _leaf(text, index)


def scan_body(raw: bytes) -> tuple[Any, Spans]:
    """Parse ``raw`` (as :func:`llmcore.jsonbytes.loads` would) and return the item spans.

    Raises:
        ValueError: ``raw`` is not valid UTF-8 JSON.
    """
    text = raw.decode("utf-8")
    start = _skip(text, 0)
    spans: Spans = {}
    try:
        if text[start : start + 1] == "{":
            value, end = _object(text, start, spans, _top_field)
        else:
            value, end = _leaf(text, start)
    except IndexError as exc:
        raise ValueError("unexpected end of the JSON text") from exc
    if _skip(text, end) != len(text):
        raise ValueError(f"extra data after the JSON value at {end}")
    return value, spans


class MeasureMemo:
    """(kind, item source text) → ``(bytes, tokens, images)`` of :func:`.prefix.measure`.

    Bounded: once it holds ``limit`` entries or about ``max_bytes`` bytes (source text plus
    measured bytes) it starts over. Thread-safe.

    Args:
        limit: Most entries kept.
        max_bytes: Most bytes of text and measured bytes kept (default 32 MiB).
    """

    def __init__(self, limit: int = 50_000, max_bytes: int = 32 * 1024 * 1024) -> None:
        self._entries: dict[str, tuple[bytes, int, int]] = {}
        self._limit = limit
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def measure(self, value: Any, spans: Spans, kind: Kind = "anthropic") -> tuple[bytes, int, int]:
        """Return ``measure(value, kind)``, from the memo when ``value``'s source text was seen."""
        text = spans.get(id(value))
        if text is None:
            return measure(value, kind)
        source = kind + "\x00" + text
        found = self._entries.get(source)
        if found is not None:
            return found
        result = measure(value, kind)
        size = len(source) + len(result[0])
        with self._lock:
            if len(self._entries) >= self._limit or self._bytes + size > self._max_bytes:
                self._entries.clear()
                self._bytes = 0
            self._entries[source] = result
            self._bytes += size
        return result


MEMO: Final = MeasureMemo()
"""The process-wide memo (its entries depend only on item text, so sharing is exact)."""
