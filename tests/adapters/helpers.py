"""What a framework form can hold of a generated history, written independently of the adapters.

The adapters' documented limits: a ``str`` cannot hold bytes that are not UTF-8 (they come back
as U+FFFD), an omitted image comes back as its placeholder text, and in the Chat form
consecutive tool messages come back as one. Everything else must come back equal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import strategies as st

from llmcore.messages import Message, MessageContent, Text, ToolCall, ToolResult, clean_text
from tests.strategies import conversations


def _valid_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _replaced(data: bytes) -> bytes:
    return data.decode("utf-8", "replace").encode("utf-8")


def _held(part: MessageContent, *, arguments_as_text: bool) -> MessageContent:
    if isinstance(part, Text) and part.is_omitted_image:
        return Text(text=part.text)
    if isinstance(part, ToolCall) and arguments_as_text:
        return ToolCall(id=part.id, name=part.name, arguments=_replaced(part.arguments))
    if isinstance(part, ToolResult):
        return ToolResult(
            call_id=part.call_id,
            tool_name=part.tool_name,
            content=_replaced(part.content),
            is_error=part.is_error,
        )
    return part


def held(
    history: tuple[Message, ...], *, arguments_as_text: bool, merge_tool_messages: bool
) -> tuple[Message, ...]:
    """Return ``history`` as the framework form holds it (see the module docstring)."""
    out: list[Message] = []
    for message in history:
        content = tuple(_held(p, arguments_as_text=arguments_as_text) for p in message.content)
        if merge_tool_messages and message.role == "tool" and out and out[-1].role == "tool":
            out[-1] = Message(role="tool", content=out[-1].content + content)
        else:
            out.append(Message(role=message.role, content=content))
    return tuple(out)


def noted(history: tuple[Message, ...], *, arguments_as_text: bool) -> bool:
    """Whether converting ``history`` must say something: an omitted image or a non-UTF-8 str."""
    for message in history:
        for part in message.content:
            if isinstance(part, Text) and part.is_omitted_image:
                return True
            if isinstance(part, ToolResult) and not _valid_utf8(part.content):
                return True
            if isinstance(part, ToolCall) and arguments_as_text and not _valid_utf8(part.arguments):
                return True
    return False


def histories() -> st.SearchStrategy[tuple[tuple[str, ...], tuple[Message, ...]]]:
    """(system blocks, history) pairs from the shared conversation strategy.

    System blocks are cleaned as a request cleans them (lone surrogates become U+FFFD).
    """
    return conversations("anthropic").map(
        lambda c: (tuple(clean_text(s) for s in c.system), c.history())
    )


def check_round_trip(
    drawn: tuple[tuple[str, ...], tuple[Message, ...]],
    from_history: Callable[..., Any],
    to_history: Callable[[Any], Any],
    *,
    arguments_as_text: bool,
    merge_tool_messages: bool,
) -> None:
    """History → framework form → history gives back what the form holds, said in the notes.

    ``to_history`` takes the :class:`~llmcore.adapters.Converted` value ``from_history`` made.
    """
    system, history = drawn
    converted = from_history(history, system=system)
    back = to_history(converted)
    expected = held(
        history, arguments_as_text=arguments_as_text, merge_tool_messages=merge_tool_messages
    )
    assert back.messages == expected
    assert back.system == system
    assert bool(converted.notes) == noted(history, arguments_as_text=arguments_as_text)
    assert back.notes == ()


def check_refused(
    to_history: Callable[[Any], Any], messages: Any, error: type[Exception], location: str
) -> None:
    """Reading ``messages`` raises ``error`` whose location names the index and key."""
    with pytest.raises(error) as caught:
        to_history(messages)
    assert getattr(caught.value, "location", None) == location
