"""What llmcore accepts but providers reject or change, said before a request is sent.

llmcore's model holds any bytes (SPEC M2, P2), so some requests it builds are refused or
rewritten by the providers. :func:`check_request` lists them; :meth:`llmcore.runner.Runner.run_turn`
and ``llmcore body`` run it before sending or writing a body:

- an image whose bytes carry no known signature (PNG, JPEG, GIF, WebP; A5) — providers answer
  400 (Anthropic: "Could not process image");
- a tool name outside ``^[a-zA-Z0-9_-]{1,64}$`` — Anthropic's documented pattern for
  ``tools[].name`` (https://docs.anthropic.com/en/api/messages, read 2026-11), and OpenAI's
  function names allow the same characters and length;
- tool-call arguments that are not a JSON object — every provider is sent
  ``{"raw_arguments": "<the text>"}`` in their place
  (:func:`~llmcore.providers.base.arguments_json`);
- tool-result bytes that are not UTF-8 — sent with U+FFFD in place of each invalid sequence;
- a tool call with no result before the next assistant message, or a result with no call.

By default each finding is a :class:`~llmcore.errors.ProviderRejectsWarning` (the request is
still built and sent). Under :func:`strict` (a context manager) or with ``LLMCORE_STRICT=1`` in
the environment each is a :class:`~llmcore.errors.ProviderRejectsError`, raised before anything
is sent.

It leaves out what the request builders already refuse (unpaired histories are refused when a
body is built; an empty message when it is made).
"""

from __future__ import annotations

import contextlib
import operator
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Final

from llmcore import jsonbytes
from llmcore.errors import ProviderRejectsError, ProviderRejectsWarning
from llmcore.messages import Image, Message, ToolCall, ToolResult, sniff_image_type
from llmcore.request import Request, Tool

__all__ = [
    "STRICT_ENV",
    "TOOL_NAME_PATTERN",
    "check_request",
    "is_strict",
    "report",
    "strict",
    "UnpairedScan",
    "unpaired",
]

STRICT_ENV: Final = "LLMCORE_STRICT"
"""The environment variable that turns every finding into an error (``1``, ``true``, ``yes``)."""
TOOL_NAME_PATTERN: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
"""Tool names the providers accept (matched whole)."""

_STRICT: ContextVar[bool] = ContextVar("llmcore_strict", default=False)


@contextlib.contextmanager
def strict() -> Iterator[None]:
    """Within the block, what providers reject raises :class:`ProviderRejectsError`."""
    token = _STRICT.set(True)
    try:
        yield
    finally:
        _STRICT.reset(token)


def is_strict() -> bool:
    """Whether findings are errors: inside :func:`strict`, or ``LLMCORE_STRICT`` is set on."""
    value = os.environ.get(STRICT_ENV, "").strip().lower()
    return _STRICT.get() or value in ("1", "true", "yes", "on")


def check_request(
    request: Request, *, first: int = 0, pairing: bool = True
) -> list[tuple[str, str]]:
    """Return what providers would reject or change in ``request``: ``(location, problem)``.

    Locations are the request's neutral paths (``tools[1].name``,
    ``messages[3].content[0]``).

    Args:
        request: The request.
        first: Check only ``messages[first:]`` (those added since the last check); pairing is
            checked only when it is 0.
        pairing: Check the pairing of tool calls and results (a body builder refuses an
            unpaired history itself, with its own error).
    """
    found = [_tool_name(index, tool) for index, tool in enumerate(request.tools)]
    out = [finding for finding in found if finding is not None]
    for index, message in enumerate(request.messages[first:], start=first):
        for part_index, part in enumerate(message.content):
            problem = _part(part)
            if problem is not None:
                out.append((f"messages[{index}].content[{part_index}]", problem))
    if first == 0 and pairing:
        out.extend(unpaired(request.messages))
    return out


def report(findings: Sequence[tuple[str, str]], *, stacklevel: int = 2) -> None:
    """Warn about each finding, or raise the first as an error under :func:`is_strict`.

    Raises:
        ProviderRejectsError: In strict mode, for the first finding.
    """
    if findings and is_strict():
        location, problem = findings[0]
        raise ProviderRejectsError(problem, location=location)
    for location, problem in findings:
        warnings.warn(f"{location}: {problem}", ProviderRejectsWarning, stacklevel=stacklevel + 1)


def _tool_name(index: int, tool: Tool) -> tuple[str, str] | None:
    if TOOL_NAME_PATTERN.fullmatch(tool.name):
        return None
    problem = f"tool name {tool.name!r} is outside the providers' pattern ^[a-zA-Z0-9_-]{{1,64}}$"
    return f"tools[{index}].name", problem


def _part(part: object) -> str | None:
    if isinstance(part, Image) and sniff_image_type(part.data) is None:
        return (
            f"the image bytes (declared {part.mime_type}) carry no PNG, JPEG, GIF or WebP "
            "signature; providers refuse them"
        )
    if isinstance(part, ToolCall) and not _is_object(part.arguments):
        return (
            f"tool call {part.id!r}: the arguments are not a JSON object; providers are sent "
            '{"raw_arguments": "…"} in their place'
        )
    if isinstance(part, ToolResult):
        try:
            part.content.decode("utf-8")
        except UnicodeDecodeError:
            return (
                f"tool result {part.call_id!r}: the content is not UTF-8; it is sent with U+FFFD "
                "in place of each invalid sequence"
            )
    return None


def _is_object(arguments: bytes) -> bool:
    if not arguments.strip():
        return True  # sent as {} (arguments_json), which every provider accepts
    try:
        return isinstance(jsonbytes.loads(arguments), dict)
    except (ValueError, RecursionError):
        return False


def unpaired(messages: Sequence[Message]) -> list[tuple[str, str]]:
    """Return the unpaired tool calls and results as ``(location, problem)``.

    A call is unpaired with no result before the next assistant message (or the end of
    ``messages``); a result, when it answers no open call.
    """
    return UnpairedScan()(messages)


class UnpairedScan:
    """:func:`unpaired`, reading only the messages that follow the previous call's as they were.

    A history that grows by a turn is scanned for that turn only: the scan keeps where it
    stood after the previous call's messages (the findings so far and the open calls), and
    takes it again when they are the same objects at the start of the new ones.
    """

    __slots__ = ("_messages", "_open", "_out")

    def __init__(self) -> None:
        self._messages: Sequence[Message] = ()  # held, so ``is`` below compares live objects
        self._out: list[tuple[str, str]] = []
        self._open: dict[str, int] = {}

    def __call__(self, messages: Sequence[Message]) -> list[tuple[str, str]]:
        """Return :func:`unpaired` of ``messages``."""
        start = len(self._messages)
        if len(messages) < start or any(map(operator.is_not, self._messages, messages)):
            start, self._out, self._open = 0, [], {}
        out, open_calls = self._out, self._open
        for index in range(start, len(messages)):
            message = messages[index]
            if message.role == "assistant":
                out.extend(_unanswered(open_calls))
                open_calls = {p.id: index for p in message.content if isinstance(p, ToolCall)}
            for part in message.content:
                if isinstance(part, ToolResult) and open_calls.pop(part.call_id, None) is None:
                    problem = f"tool result for {part.call_id!r} answers no open tool call"
                    out.append((f"messages[{index}]", problem))
        self._messages, self._out, self._open = messages, out, open_calls
        return out + _unanswered(open_calls)


def _unanswered(open_calls: dict[str, int]) -> list[tuple[str, str]]:
    return [
        (f"messages[{index}]", f"tool call {call_id!r} has no result before the next reply")
        for call_id, index in open_calls.items()
    ]
