"""Anthropic ``MessageParam`` lists (and the ``system`` parameter) ↔ llmcore history.

The framework form is what ``client.messages.create(system=…, messages=…)`` takes: a list of
``{"role", "content"}`` dicts whose content is a string or a list of blocks (SDK objects with a
pydantic ``model_dump`` are read too, e.g. ``response.content`` blocks).

:func:`to_history` reads the list with the Messages importer of
:mod:`llmcore.providers.anthropic` (the one that ``llmcore import`` uses): the same blocks are
accepted and refused (:class:`~llmcore.errors.UnsupportedContentError`: documents, server tools,
URL images, …); ``thinking`` and ``redacted_thinking`` blocks, signatures included, are dropped
with a note (SPEC M4); ``cache_control`` markers are dropped (llmcore places its own, P3). A
``user`` message of tool results and other content becomes a ``tool`` message then a ``user``
message. Errors name the JSON path: ``$.messages[3].content[0]``.

Tool-call arguments (SPEC M2): a ``tool_use`` block's ``input`` is a JSON object, not bytes.
:func:`from_history` writes it as a :class:`ToolInput` — a ``dict`` (what the SDK takes) that
also remembers the exact argument bytes it was made from; :func:`to_history` gives those bytes
back as long as the dict still holds what they parse to. A plain ``dict`` (one built by hand, or
a :class:`ToolInput` changed since) becomes compact JSON in its own key order (llmcore's byte
writer: ``,`` and ``:`` separators, non-ASCII as is). Bytes that are not a JSON object are held
as llmcore's providers send them (``{}`` for empty bytes, else ``{"raw_arguments": "<text>"}``,
:func:`~llmcore.providers.base.arguments_json`), and still come back exactly.

:func:`from_history` writes (lossless for the four content cases): ``system`` as one text block
per system block; each message as a block list — ``text``, ``image`` (base64 source), ``tool_use``
and, for a ``tool`` message, a ``user`` message of ``tool_result`` blocks whose ``content`` is the
result text and ``is_error`` is present when true. Ids are kept as stored. An omitted image (M3)
becomes its placeholder text and result bytes that are not UTF-8 become U+FFFD, both noted. A
tool result's ``tool_name`` is read back from the call with its id.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from typing import Any, Final, assert_never

from llmcore.adapters._common import (
    Converted,
    History,
    Note,
    listed,
    omitted_image_text,
    plain,
    utf8_text,
)
from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.providers.anthropic import importer as messages_api
from llmcore.providers.base import arguments_json

__all__ = ["ToolInput", "from_history", "to_history"]

_ROOT: Final = "$"
_NESTED: Final = ("content",)


class ToolInput(dict[str, Any]):
    """A ``tool_use`` ``input`` object that remembers the argument bytes it was made from.

    It is a ``dict`` holding what :func:`~llmcore.providers.base.arguments_json` makes of the
    bytes, parsed; :attr:`raw` is the bytes themselves (SPEC M2).
    """

    raw: bytes
    """The tool call's argument bytes, exactly as stored in the history."""

    def __init__(self, raw: bytes) -> None:
        super().__init__(json.loads(arguments_json(raw)))
        self.raw = raw

    def unchanged(self) -> bool:
        """Whether the dict still holds what :attr:`raw` parses to."""
        parsed: dict[str, Any] = json.loads(arguments_json(self.raw))
        return dict(self) == parsed


class _Reader(messages_api._Importer):
    """The Messages importer, taking a :class:`ToolInput`'s bytes as the arguments."""

    def block(self, block: Any, at: str) -> MessageContent | None:
        part = super().block(block, at)
        value = block.get("input") if isinstance(part, ToolCall) else None
        if isinstance(part, ToolCall) and isinstance(value, ToolInput) and value.unchanged():
            return ToolCall(id=part.id, name=part.name, arguments=value.raw)
        return part


def to_history(messages: Iterable[Any], *, system: str | Iterable[Any] | None = None) -> History:
    """Read an Anthropic ``MessageParam`` list and ``system`` parameter into llmcore's history.

    Args:
        messages: The messages (dicts, or SDK objects with ``model_dump``).
        system: The ``system`` parameter: a string, a list of text blocks, or ``None``.

    Returns:
        The system prompt blocks, the history and the notes (dropped thinking, M4).

    Raises:
        RequestFileError: A malformed message or block; names ``$.messages[i]`` and the key.
        UnsupportedContentError: Content outside the four cases (documents, server tools, URL
            images, a ``system`` role inside the conversation, …).
    """
    body: dict[str, Any] = {
        "messages": [plain(item, _NESTED) for item in listed(messages, "messages")]
    }
    if system is not None:
        body["system"] = (
            system
            if isinstance(system, str)
            else [plain(block, ()) for block in listed(system, "system")]
        )
    reader = _Reader()
    blocks = reader.system(body, _ROOT)
    history = tuple(reader.messages(body, _ROOT))
    return History(system=blocks, messages=history, notes=tuple(reader.notes))


def _block(part: MessageContent, where: str, note: Note) -> dict[str, Any]:
    match part:
        case Text():
            return {"type": "text", "text": omitted_image_text(part, where, note)}
        case Image(data=data, mime_type=mime):
            encoded = base64.b64encode(data).decode("ascii")
            return {
                "type": "image",
                "source": {"type": "base64", "media_type": mime, "data": encoded},
            }
        case ToolCall(id=call_id, name=name, arguments=arguments):
            return {"type": "tool_use", "id": call_id, "name": name, "input": ToolInput(arguments)}
        case ToolResult(call_id=call_id, content=content, is_error=is_error):
            text = utf8_text(content, f"{where}.content", note)
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
            if is_error:
                block["is_error"] = True
            return block
        case _:
            assert_never(part)


def from_history(
    messages: Iterable[Message], *, system: Sequence[str] = ()
) -> Converted[dict[str, Any]]:
    """Write llmcore's history as Anthropic ``MessageParam`` dicts (rules in the module docstring).

    Args:
        messages: The history.
        system: The system prompt blocks.

    Returns:
        ``messages`` (fresh dicts), ``system`` (text blocks; empty when there is none: then pass
        no ``system``) and the notes, which name ``messages[i].content[j]``.
    """
    notes: list[str] = []
    out: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        at = f"messages[{index}]"
        content = [
            _block(part, f"{at}.content[{position}]", notes.append)
            for position, part in enumerate(message.content)
        ]
        out.append({"role": "user" if message.role == "tool" else message.role, "content": content})
    blocks = [{"type": "text", "text": text} for text in system]
    return Converted(messages=out, notes=tuple(notes), system=blocks)
