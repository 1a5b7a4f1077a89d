"""pydantic-ai ``ModelMessage`` lists ↔ llmcore history (needs the ``pydantic-ai`` extra).

Importing this module without pydantic-ai installed raises
:class:`~llmcore.adapters.MissingDependencyError`; nothing else in llmcore imports it.

:func:`to_history` reads (``ModelRequest`` parts in order; a run of tool returns is one ``tool``
message, each user prompt one ``user`` message):

* ``SystemPromptPart`` → a system prompt block (one placed after the conversation started is
  moved to the system prompt, with a note);
* ``UserPromptPart`` → a user message: ``str`` items as text, ``BinaryContent`` images and
  ``ImageUrl`` ``data:`` URLs as images; a ``CachePoint`` is dropped with a note (llmcore places
  its own cache breakpoints, P3); other files refused;
* ``ToolReturnPart`` → a tool result whose content is the text pydantic-ai shows the model
  (``model_response_str(wrap_if_error=False)``: a ``str`` as is, other values as JSON); outcomes
  ``failed`` and ``retried`` are error results (``is_error``, pydantic-ai's ``ERROR_OUTCOMES``),
  ``denied`` and ``interrupted`` ordinary ones, as pydantic-ai sends them; files in a return are
  refused (a result is bytes; an image goes in the next user message, SPEC M2);
* ``RetryFeedbackPart`` (a retry answering no tool call) → a user text of what the model is
  shown, with a note; a hand-built deprecated ``RetryPromptPart`` → an error result (its
  ``content``; validation errors as JSON) when it names a tool, else user text, with a note;
* ``TextPart`` → text; ``ToolCallPart`` → a tool call whose arguments are ``args`` exactly when
  it is a ``str`` (the bytes the model produced, SPEC M2); a ``dict`` becomes compact JSON in its
  own key order (llmcore's byte writer: ``,`` and ``:`` separators, non-ASCII as is); ``None``
  becomes empty bytes;
* ``ThinkingPart`` (signatures included), native (server-side) tool calls and returns → dropped
  with a note (SPEC M4), as are ``ModelRequest.instructions`` (pydantic-ai renders them again on
  every run) and message metadata (timestamps, usage, provider ids and details).

Any other part (speech, compaction, instruction and capability state) raises
:class:`~llmcore.errors.UnsupportedContentError` naming ``messages[i].parts[j]`` and its
``part_kind``; a value that is not a message raises
:class:`~llmcore.errors.RequestFileError`.

:func:`from_history` writes the inverse: the system prompt as ``SystemPromptPart`` s opening the
first ``ModelRequest``; consecutive user and tool messages share one ``ModelRequest`` (a tool
message right after another starts a new one, so the split comes back); a user message of one
text as a ``str`` prompt, else a list of ``str`` and ``BinaryContent``; results as
``ToolReturnPart`` (outcome ``failed`` for errors, else ``success``) with ``str`` content;
assistant messages as ``ModelResponse`` s of ``TextPart`` and ``ToolCallPart`` whose ``args`` is
the argument bytes as a ``str``. An omitted image (M3) becomes its placeholder text and bytes
that are not UTF-8 become U+FFFD, both noted.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Sequence
from typing import Any, Final, assert_never

from llmcore.adapters._common import (
    Converted,
    History,
    MissingDependencyError,
    Note,
    listed,
    omitted_image_text,
    utf8_text,
)
from llmcore.errors import RequestFileError, UnsupportedContentError
from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.providers import _import_common as imp

try:
    from pydantic_ai import messages as pm
except ImportError as exc:  # pragma: no cover - exercised with the module hidden
    raise MissingDependencyError(
        "the pydantic-ai adapter needs pydantic-ai: pip install 'llmcore[pydantic-ai]'"
    ) from exc

__all__ = ["from_history", "to_history"]

_DROPPED_RESPONSE_PARTS: Final = (pm.ThinkingPart, pm.NativeToolCallPart, pm.NativeToolReturnPart)


def _refused(part: Any, at: str) -> UnsupportedContentError:
    kind = getattr(part, "part_kind", type(part).__name__)
    return UnsupportedContentError(
        str(kind), f"pydantic-ai part {kind!r} has no llmcore form", location=at
    )


class _Reader(imp.Importer):
    """One read of a message list (notes and image type corrections as in ``llmcore import``)."""

    def __init__(self) -> None:
        super().__init__()
        self.system_blocks: list[str] = []
        self.out: list[Message] = []

    def read(self, messages: Iterable[Any]) -> History:
        for index, message in enumerate(listed(messages, "messages")):
            at = f"messages[{index}]"
            if isinstance(message, pm.ModelRequest):
                self.request(message, at)
            elif isinstance(message, pm.ModelResponse):
                self.response(message, at)
            else:
                kind = type(message).__name__
                raise RequestFileError(
                    f"expected a ModelRequest or ModelResponse, found {kind}", location=at
                )
        return History(
            system=tuple(self.system_blocks), messages=tuple(self.out), notes=tuple(self.notes)
        )

    def request(self, message: pm.ModelRequest, at: str) -> None:
        if message.instructions is not None:
            self.note(f"{at}.instructions: not kept (pydantic-ai renders them on every run)")
        results: list[ToolResult] = []
        for index, part in enumerate(listed(message.parts, f"{at}.parts")):
            where = f"{at}.parts[{index}]"
            if isinstance(part, pm.ToolReturnPart):
                results.append(self.tool_result(part, where))
                continue
            if isinstance(part, pm.RetryPromptPart) and part.tool_name is not None:
                results.append(self.legacy_retry(part, where))
                continue
            if results:
                self.out.append(imp.make_message("tool", tuple(results), where))
                results = []
            self.request_part(part, where)
        if results:
            self.out.append(imp.make_message("tool", tuple(results), f"{at}.parts"))

    def request_part(self, part: Any, at: str) -> None:
        if isinstance(part, pm.SystemPromptPart):
            if self.out:
                self.note(f"{at}: a system prompt part was moved to the system prompt")
            if not isinstance(part.content, str):
                found = type(part.content).__name__
                raise RequestFileError(
                    f"expected a string, found {found}", location=f"{at}.content"
                )
            self.system_blocks.append(part.content)
        elif isinstance(part, pm.UserPromptPart):
            self.out.append(imp.make_message("user", self.user_content(part, at), at))
        elif isinstance(part, pm.RetryFeedbackPart | pm.RetryPromptPart):
            self.note(f"{at}: retry feedback sent as user text")
            self.out.append(imp.make_message("user", (Text(text=part.model_response()),), at))
        else:
            raise _refused(part, at)

    def user_content(self, part: pm.UserPromptPart, at: str) -> tuple[MessageContent, ...]:
        if isinstance(part.content, str):
            return (Text(text=part.content),)
        out: list[MessageContent] = []
        for index, item in enumerate(listed(part.content, f"{at}.content")):
            where = f"{at}.content[{index}]"
            if isinstance(item, str):
                out.append(Text(text=item))
            elif isinstance(item, pm.BinaryContent) and item.is_image:
                out.append(self.make_image(item.data, item.media_type, where))
            elif isinstance(item, pm.ImageUrl):
                out.append(self.image_url(item.url, where))
            elif isinstance(item, pm.CachePoint):
                self.note(f"{where}: dropped a CachePoint (llmcore places its own breakpoints)")
            else:
                raise _refused(item, where)
        return tuple(out)

    def image_url(self, url: str, at: str) -> Image:
        head, sep, data = url.partition(",")
        if not (sep and head.startswith("data:") and head.endswith(";base64")):
            raise UnsupportedContentError(
                "image URL", "an image URL that is not a base64 data: URL", location=at
            )
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise RequestFileError("invalid base64", location=f"{at}.url") from exc
        return self.make_image(raw, head[len("data:") : -len(";base64")], at)

    def tool_result(self, part: pm.ToolReturnPart, at: str) -> ToolResult:
        if part.files:
            raise UnsupportedContentError(
                "file in a tool return",
                "a tool result holds bytes; put the file in the next user prompt",
                location=f"{at}.content",
            )
        text = part.model_response_str(wrap_if_error=False)
        return ToolResult(
            call_id=part.tool_call_id,
            tool_name=part.tool_name,
            content=imp.text_bytes(text),
            is_error=part.outcome in pm.ERROR_OUTCOMES,
        )

    def legacy_retry(self, part: pm.RetryPromptPart, at: str) -> ToolResult:
        content = part.content
        text = content if isinstance(content, str) else imp.json_text(content, f"{at}.content")
        self.note(f"{at}: a deprecated RetryPromptPart read as an error result")
        return ToolResult(
            call_id=part.tool_call_id,
            tool_name=str(part.tool_name),
            content=imp.text_bytes(text),
            is_error=True,
        )

    def response(self, message: pm.ModelResponse, at: str) -> None:
        parts: list[MessageContent] = []
        for index, part in enumerate(listed(message.parts, f"{at}.parts")):
            where = f"{at}.parts[{index}]"
            if isinstance(part, pm.TextPart):
                parts.append(Text(text=part.content))
            elif isinstance(part, pm.ToolCallPart):
                arguments = self.arguments(part.args, f"{where}.args")
                parts.append(
                    ToolCall(id=part.tool_call_id, name=part.tool_name, arguments=arguments)
                )
            elif isinstance(part, _DROPPED_RESPONSE_PARTS):
                self.note(f"{where}: dropped a {part.part_kind} part (provider-only data, M4)")
            else:
                raise _refused(part, where)
        if all(isinstance(p, Text) and not p.text for p in parts):
            self.note(f"{at}: a response with no text or tool call left no message")
            return
        self.out.append(imp.make_message("assistant", tuple(parts), at))

    def arguments(self, args: object, at: str) -> bytes:
        if args is None:
            return b""
        if isinstance(args, str):
            return imp.text_bytes(args)
        if isinstance(args, dict):
            return imp.json_text(args, at).encode("utf-8")
        raise RequestFileError(
            f"expected a str, a dict or None, found {type(args).__name__}", location=at
        )


def to_history(messages: Iterable[Any]) -> History:
    """Read a pydantic-ai message list (e.g. ``result.all_messages()``) into llmcore's history.

    Args:
        messages: ``ModelRequest`` and ``ModelResponse`` values, in order.

    Returns:
        The system prompt blocks, the history and the notes (rules in the module docstring).

    Raises:
        UnsupportedContentError: A part with no llmcore form; names ``messages[i].parts[j]``.
        RequestFileError: A value that is not a message, or an image with bad base64.
    """
    return _Reader().read(messages)


def _user_part(message: Message, at: str, note: Note) -> pm.UserPromptPart:
    items: list[pm.UserContent] = []
    for index, part in enumerate(message.content):
        if isinstance(part, Text):
            items.append(omitted_image_text(part, f"{at}.content[{index}]", note))
        elif isinstance(part, Image):
            items.append(pm.BinaryContent(data=part.data, media_type=part.mime_type))
    if len(items) == 1 and isinstance(items[0], str):
        return pm.UserPromptPart(content=items[0])
    return pm.UserPromptPart(content=items)


def _return_part(result: ToolResult, at: str, note: Note) -> pm.ToolReturnPart:
    return pm.ToolReturnPart(
        tool_name=result.tool_name,
        content=utf8_text(result.content, f"{at}.content", note),
        tool_call_id=result.call_id,
        outcome="failed" if result.is_error else "success",
    )


def _response(message: Message, at: str, note: Note) -> pm.ModelResponse:
    parts: list[pm.ModelResponsePart] = []
    for index, part in enumerate(message.content):
        where = f"{at}.content[{index}]"
        match part:
            case Text():
                parts.append(pm.TextPart(content=omitted_image_text(part, where, note)))
            case ToolCall(id=call_id, name=name, arguments=arguments):
                args = utf8_text(arguments, f"{where}.arguments", note)
                parts.append(pm.ToolCallPart(tool_name=name, args=args, tool_call_id=call_id))
            case Image() | ToolResult():  # pragma: no cover - an assistant message holds neither
                raise AssertionError(part)
            case _:
                assert_never(part)
    return pm.ModelResponse(parts=parts)


def from_history(
    messages: Iterable[Message], *, system: Sequence[str] = ()
) -> Converted[pm.ModelMessage]:
    """Write llmcore's history as a pydantic-ai message list (rules in the module docstring).

    Pass the result's ``messages`` as an agent's ``message_history``.

    Args:
        messages: The history.
        system: The system prompt blocks.

    Returns:
        The pydantic-ai messages and the notes, which name ``messages[i].content[j]``.
    """
    notes: list[str] = []
    out: list[pm.ModelMessage] = []
    pending: list[pm.ModelRequestPart] = [pm.SystemPromptPart(content=text) for text in system]
    previous: str | None = None
    for index, message in enumerate(listed(messages, "messages")):
        at = f"messages[{index}]"
        if pending and (message.role == "assistant" or previous == message.role == "tool"):
            out.append(pm.ModelRequest(parts=pending))
            pending = []
        if message.role == "assistant":
            out.append(_response(message, at, notes.append))
        elif message.role == "user":
            pending.append(_user_part(message, at, notes.append))
        else:
            pending.extend(
                _return_part(part, f"{at}.content[{position}]", notes.append)
                for position, part in enumerate(message.content)
                if isinstance(part, ToolResult)
            )
        previous = message.role
    if pending:
        out.append(pm.ModelRequest(parts=pending))
    return Converted(messages=out, notes=tuple(notes))
