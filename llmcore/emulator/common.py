"""Small pieces the three wire modules share: the turn a request is at, ids, SSE framing."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

from llmcore import jsonbytes

__all__ = ["PIECE_CHARS", "Turn", "all_text", "event", "make_id", "pieces"]

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


def all_text(content: Any, kinds: frozenset[str]) -> str:
    """Return all the text of a message's ``content``, as a script's ``match`` reads it.

    Args:
        content: A string, or a list of blocks / parts.
        kinds: The block ``type`` values that carry ``text`` (``text``, ``input_text``).

    Returns:
        The string itself, or the texts of the blocks of those kinds joined by newlines.
    """
    if isinstance(content, str):
        return content
    texts = [
        str(block.get("text", ""))
        for block in content or ()
        if isinstance(block, dict) and block.get("type") in kinds
    ]
    return texts[0] if len(texts) == 1 else "\n".join(texts)


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
