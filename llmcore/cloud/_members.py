"""Top-level members of a JSON object body, dropped or added without touching the others' bytes.

The cloud endpoints send the existing writers' bodies with a documented difference at the top
level (Vertex AI and Bedrock: no ``model``, an ``anthropic_version``; Bedrock: no ``stream``),
and the emulator undoes it. :func:`rewrite` does that on the bytes: every member it keeps is
copied byte for byte (its key, its value and the whitespace inside them), members are joined
with ``,`` in their order, dropped (and read) ones are returned parsed, added ones go first or
last.

The body must be UTF-8 JSON whose top level is an object (as every writer's body is); the text
is decoded once and re-encoded, which gives the same bytes back for valid UTF-8. Values are
located with the standard library's C scanner, so the cost is one parse of the body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from llmcore import jsonbytes

__all__ = ["BodyShapeError", "Rewritten", "rewrite"]

_SPACE: Final = re.compile(r"[ \t\n\r]*")
_DECODER: Final = json.JSONDecoder()


class BodyShapeError(ValueError):
    """The body is not a UTF-8 JSON object, or an added key is already in it."""


@dataclass(frozen=True, slots=True)
class Rewritten:
    """The rewritten body and the values of the members it dropped."""

    body: bytes
    """The new body bytes."""
    values: dict[str, Any]
    """The parsed value of each dropped or read key that the body had."""


def _members(text: str) -> list[tuple[str, str, Any]]:
    """Return ``(key, member text, value)`` for each top-level member, in order."""
    pos = _SPACE.match(text, 0).end()  # type: ignore[union-attr]
    if text[pos : pos + 1] != "{":
        raise BodyShapeError("the body is not a JSON object")
    pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
    out: list[tuple[str, str, Any]] = []
    if text[pos : pos + 1] == "}":
        return out
    while True:
        start = pos
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        if not isinstance(key, str) or text[pos : pos + 1] != ":":
            raise BodyShapeError("a member of the body has no string key")
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
        value, pos = _DECODER.raw_decode(text, pos)
        out.append((key, text[start:pos], value))
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
        mark = text[pos : pos + 1]
        if mark == "}":
            return out
        if mark != ",":
            raise BodyShapeError("the body's members are not separated by commas")
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]


def rewrite(
    body: bytes,
    *,
    drop: frozenset[str] = frozenset(),
    read: frozenset[str] = frozenset(),
    prepend: Sequence[tuple[str, Any]] = (),
    append: Sequence[tuple[str, Any]] = (),
) -> Rewritten:
    """Return ``body`` without the ``drop`` members and with ``prepend`` / ``append`` added.

    Args:
        body: A UTF-8 JSON object.
        drop: Top-level keys to remove (absent ones are skipped).
        read: Top-level keys kept whose parsed values are returned too.
        prepend: Members written before the kept ones, in order (values written by
            :func:`llmcore.jsonbytes.dumps`).
        append: Members written after the kept ones, in order.

    Raises:
        BodyShapeError: ``body`` is not a UTF-8 JSON object, or a key to add is already in it
            (and not dropped).
    """
    try:
        members = _members(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BodyShapeError(f"the body is not UTF-8 JSON ({exc})") from exc
    kept = [(key, text) for key, text, _ in members if key not in drop]
    present = {key for key, _ in kept}
    for key, _ in (*prepend, *append):
        if key in present:
            raise BodyShapeError(f"the body already has {key!r}, which the endpoint sets")
    values = {key: value for key, _, value in members if key in drop or key in read}
    head = [_member(key, value) for key, value in prepend]
    tail = [_member(key, value) for key, value in append]
    joined = b",".join([*head, *(text.encode("utf-8") for _, text in kept), *tail])
    return Rewritten(body=b"{" + joined + b"}", values=values)


def _member(key: str, value: Any) -> bytes:
    return jsonbytes.dumps(key) + b":" + jsonbytes.dumps(value)
