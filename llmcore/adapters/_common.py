"""What the three adapters share: the result type, the notes, and the bytes ↔ text rules.

Framework message types hold tool arguments and tool results as ``str``; the history holds
``bytes`` (SPEC M2). Valid UTF-8 goes both ways unchanged. Bytes that are not UTF-8 have no
``str`` form a framework can send, so they are decoded with U+FFFD replacements and a note says
so; an omitted image (SPEC M3) has no framework form, so it becomes its placeholder text with a
note. Everything else in the four content cases converts without loss.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from llmcore.errors import MissingDependencyError, RequestFileError
from llmcore.messages import Message, Text

__all__ = [
    "Converted",
    "History",
    "MissingDependencyError",
    "Note",
    "listed",
    "omitted_image_text",
    "plain",
    "utf8_text",
]

Note = Callable[[str], None]
"""Records one note (a dropped or normalized thing, where it was)."""

M = TypeVar("M")


@dataclass(frozen=True, slots=True, kw_only=True)
class History:
    """A framework's message list read into llmcore's history.

    Shapes: ``system`` is one string per system block, ``messages`` the history (SPEC M1), and
    ``notes`` one short line per thing dropped or normalized on the way (SPEC M4: thinking,
    signatures, reasoning), each naming where it was.
    """

    system: tuple[str, ...]
    """The system prompt blocks, in order (they belong to the request, not the history)."""
    messages: tuple[Message, ...]
    """The history."""
    notes: tuple[str, ...] = ()
    """What was dropped or normalized, for the user to read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Converted(Generic[M]):
    """llmcore's history written as a framework's message list.

    Shapes: ``messages`` is the framework's list, ready to hand to it; ``notes`` one short line
    per thing normalized on the way (an omitted image, bytes that are not UTF-8), naming the
    history index.
    """

    messages: list[M]
    """The framework's messages, in order."""
    notes: tuple[str, ...] = ()
    """What was normalized, for the user to read."""
    system: list[dict[str, Any]] = field(default_factory=list)
    """Forms that pass the system prompt apart from the messages (Anthropic ``system``): its
    blocks; empty for forms that hold it in ``messages`` or when there is none."""


def listed(items: Iterable[Any] | Any, where: str) -> list[Any]:
    """Return ``items`` (a list, tuple or other iterable of messages or blocks) as a list.

    Raises:
        RequestFileError: ``items`` is not such an iterable (``None``, a number, a string, a
            mapping), naming ``where``.
    """
    if isinstance(items, str | bytes | bytearray | dict) or not isinstance(items, Iterable):
        found = "None" if items is None else type(items).__name__
        raise RequestFileError(f"expected a list, found {found}", location=where)
    return list(items)


def plain(item: Any, nested: tuple[str, ...]) -> Any:
    """Return ``item`` as plain JSON values where it is an SDK object (a pydantic ``model_dump``).

    A dict is kept, with the SDK objects in its ``nested`` list keys (e.g. ``content`` blocks,
    ``tool_calls``) dumped; ``None`` fields of a dumped object are left out.
    """
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(item, dict) and any(isinstance(item.get(key), list) for key in nested):
        out = dict(item)
        for key in nested:
            if isinstance(out.get(key), list):
                out[key] = [plain(value, ()) for value in out[key]]
        return out
    return item


def utf8_text(data: bytes, where: str, note: Note) -> str:
    """Return ``data`` as text; bytes that are not UTF-8 become U+FFFD, with a note at ``where``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        note(f"{where}: bytes that are not UTF-8 were written as U+FFFD (a str cannot hold them)")
        return data.decode("utf-8", "replace")


def omitted_image_text(part: Text, where: str, note: Note) -> str:
    """Return a text case's text; an omitted image (SPEC M3) is noted as becoming plain text."""
    if part.is_omitted_image:
        note(f"{where}: an omitted image ({part.omitted_image_mime_type}) became its text")
    return part.text
