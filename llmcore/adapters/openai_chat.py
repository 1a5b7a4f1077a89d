"""OpenAI Chat message lists ↔ llmcore history (the form LiteLLM and ``openai`` users hold).

The framework form is a list of plain dicts as given to ``client.chat.completions.create(
messages=…)`` or ``litellm.completion(messages=…)``; SDK message objects (anything with a
pydantic ``model_dump``, e.g. ``response.choices[0].message``) are read too.

:func:`to_history` reads the list with the Chat importer of
:mod:`llmcore.providers.openai_chat` (the one that ``llmcore import`` uses), so the same
messages are accepted, refused (:class:`~llmcore.errors.UnsupportedContentError`) and noted
(reasoning fields dropped, SPEC M4), with three differences for held lists: empty text parts
are kept (so a history holding them comes back equal), a tool message's ``name`` (which LiteLLM
writes) is read as the tool name when no earlier call names it, and no request fields are
needed. Errors name
the JSON path of the list: ``$.messages[3].content[0]``.

:func:`from_history` writes (the inverse, lossless for the four content cases, SPEC M2):

* the system prompt as the leading ``system`` message: one block as a string, several as text
  parts;
* a user message of one non-empty text as a string, otherwise an array of ``text`` and
  ``image_url`` parts (``data:<mime>;base64,…`` URLs);
* an assistant message as ``content`` (one non-empty text as a string, several texts as parts,
  ``None`` when it has none) and ``tool_calls`` whose ``arguments`` string is the argument bytes
  decoded as UTF-8, verbatim — never parsed, never wrapped, so they come back byte for byte;
* each tool result as one ``role: "tool"`` message with ``tool_call_id`` as stored; an error
  result's content is the parts ``[{"type": "text", "text": "[tool error]"}, <text>]``, the
  convention of :data:`~llmcore.providers.openai_chat.TOOL_ERROR_TEXT` (Chat has no error flag),
  any other result's content a string.

What the Chat form cannot hold, and so does not come back equal: consecutive ``tool`` messages
come back as one (Chat has one message per result either way); text after a tool call in an
assistant message moves before the calls (noted); an omitted image (M3) becomes its
placeholder text and bytes that are not UTF-8 become U+FFFD (both noted). A tool result's
``tool_name`` is read back from the call with its id.
"""

from __future__ import annotations

import base64
import dataclasses
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
from llmcore.providers import _import_common as imp
from llmcore.providers.openai_chat import importer as chat
from llmcore.providers.openai_chat.encode import TOOL_ERROR_TEXT

__all__ = ["from_history", "to_history"]

_ROOT: Final = "$"
_NESTED: Final = ("content", "tool_calls")


class _Reader(chat._Importer):
    """The Chat importer for held lists: empty text parts kept, a tool message's ``name`` read."""

    def content(self, content: Any, at: str) -> list[MessageContent]:
        if isinstance(content, list):
            return [self.part(part, f"{at}[{index}]") for index, part in enumerate(content)]
        return super().content(content, at)

    def tool_result(self, obj: dict[str, Any], at: str) -> ToolResult:
        if "name" not in obj:
            return super().tool_result(obj, at)
        name = obj["name"]
        if not isinstance(name, str):
            raise imp.bad("expected a string", f"{at}.name")
        result = super().tool_result({k: v for k, v in obj.items() if k != "name"}, at)
        if result.tool_name:
            return result
        return dataclasses.replace(result, tool_name=name)


def to_history(messages: Iterable[Any]) -> History:
    """Read an OpenAI Chat message list into llmcore's history.

    Args:
        messages: Chat messages (dicts, or SDK objects with ``model_dump``), system first.

    Returns:
        The system prompt (leading ``system`` / ``developer`` messages), the history and the
        notes.

    Raises:
        RequestFileError: A malformed message; names ``$.messages[i]`` and the key.
        UnsupportedContentError: Content outside the four cases (audio, files, URL images,
            legacy function calls, a system message after the conversation started, …).
    """
    body = {"messages": [plain(item, _NESTED) for item in listed(messages, "messages")]}
    reader = _Reader()
    system = reader.system(body, _ROOT)
    history = tuple(reader.messages(body, _ROOT))
    return History(system=system, messages=history, notes=tuple(reader.notes))


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _texts_content(texts: list[str]) -> str | list[dict[str, Any]] | None:
    if not texts:
        return None
    if len(texts) == 1 and texts[0]:
        return texts[0]
    return [_text_part(text) for text in texts]


def _user(message: Message, at: str, note: Note) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for index, part in enumerate(message.content):
        if isinstance(part, Text):
            parts.append(_text_part(omitted_image_text(part, f"{at}.content[{index}]", note)))
        elif isinstance(part, Image):
            data = base64.b64encode(part.data).decode("ascii")
            url = f"data:{part.mime_type};base64,{data}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
    if len(parts) == 1 and parts[0]["type"] == "text" and parts[0]["text"]:
        return {"role": "user", "content": parts[0]["text"]}
    return {"role": "user", "content": parts}


def _assistant(message: Message, at: str, note: Note) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for index, part in enumerate(message.content):
        where = f"{at}.content[{index}]"
        if isinstance(part, Text):
            if calls:
                note(f"{where}: text after a tool call moved before the calls")
            texts.append(omitted_image_text(part, where, note))
        elif isinstance(part, ToolCall):
            arguments = utf8_text(part.arguments, f"{where}.arguments", note)
            function = {"name": part.name, "arguments": arguments}
            calls.append({"id": part.id, "type": "function", "function": function})
    out: dict[str, Any] = {"role": "assistant", "content": _texts_content(texts)}
    if calls:
        out["tool_calls"] = calls
    return out


def _tool(result: ToolResult, where: str, note: Note) -> dict[str, Any]:
    text = utf8_text(result.content, f"{where}.content", note)
    content: str | list[dict[str, Any]] = text
    if result.is_error:
        content = [_text_part(TOOL_ERROR_TEXT)] + ([_text_part(text)] if text else [])
    return {"role": "tool", "tool_call_id": result.call_id, "content": content}


def _wire(message: Message, at: str, note: Note) -> list[dict[str, Any]]:
    match message.role:
        case "user":
            return [_user(message, at, note)]
        case "assistant":
            return [_assistant(message, at, note)]
        case "tool":
            return [
                _tool(part, f"{at}.content[{index}]", note)
                for index, part in enumerate(message.content)
                if isinstance(part, ToolResult)
            ]
        case _:
            assert_never(message.role)


def from_history(
    messages: Iterable[Message], *, system: Sequence[str] = ()
) -> Converted[dict[str, Any]]:
    """Write llmcore's history as an OpenAI Chat message list (rules in the module docstring).

    Args:
        messages: The history.
        system: The system prompt blocks; none sends no ``system`` message.

    Returns:
        The Chat messages (fresh dicts) and the notes; notes name ``messages[i].content[j]``.
    """
    notes: list[str] = []
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": _texts_content(list(system))})
    for index, message in enumerate(messages):
        out.extend(_wire(message, f"messages[{index}]", notes.append))
    return Converted(messages=out, notes=tuple(notes))
