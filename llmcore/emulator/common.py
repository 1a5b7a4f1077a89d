"""Small pieces the three wire modules share: the turn a request is at, ids, SSE framing."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

from llmcore import jsonbytes

__all__ = ["PIECE_CHARS", "Turn", "event", "make_id", "pieces"]

PIECE_CHARS: Final = 24
"""Characters per streamed text or argument delta."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """Where a request stands in its conversation, read from its history alone."""

    first_user_text: str
    """Text of the first user message (picks the script conversation)."""
    index: int
    """Assistant turns already in the history (picks the reply)."""
    seed: bytes
    """Bytes identifying the conversation (its first item), so ids differ across conversations."""


def make_id(prefix: str, seed: bytes, *parts: object, length: int = 24) -> str:
    """Return ``prefix`` + hex digest of ``seed`` and ``parts``: deterministic, distinct ids."""
    text = ":".join(str(part) for part in parts).encode("utf-8")
    return prefix + hashlib.sha256(seed + b"|" + text).hexdigest()[:length]


def pieces(text: str) -> list[str]:
    """Split ``text`` into deltas of :data:`PIECE_CHARS` characters; ``""`` gives no piece."""
    return [text[i : i + PIECE_CHARS] for i in range(0, len(text), PIECE_CHARS)]


def event(data: Any, name: str | None = None) -> bytes:
    """Return one server-sent event: ``event: name`` (if given) and ``data: <json>``."""
    head = f"event: {name}\n".encode() if name else b""
    return head + b"data: " + jsonbytes.dumps(data) + b"\n\n"
