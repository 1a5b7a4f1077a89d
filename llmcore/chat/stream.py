"""Streamed text for the chat: text deltas read off a response's server-sent events.

:class:`Tapped` wraps a provider module so that its stream parser also hands each event's text
delta to a callback while the response is still arriving; everything else (encoding, parsing,
the history) is the wrapped provider's, unchanged. :func:`text_delta` knows three event shapes:
Anthropic ``content_block_delta`` with a ``text_delta``, OpenAI Chat ``choices[].delta.content``
(also OpenRouter) and OpenAI Responses ``response.output_text.delta``. Anything else — tool-call
arguments, thinking, reasoning — shows nothing. It leaves out how the text is displayed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from llmcore import jsonbytes
from llmcore.providers._sse import SSEEvent
from llmcore.providers.base import ParsedResponse, Provider, StreamParser

__all__ = ["Tapped", "text_delta"]


def _choices_text(choices: list[Any]) -> str:
    parts = []
    for choice in choices:
        delta = choice.get("delta") if isinstance(choice, dict) else None
        content = delta.get("content") if isinstance(delta, dict) else None
        if isinstance(content, str):
            parts.append(content)
    return "".join(parts)


def text_delta(event: SSEEvent) -> str:
    """Return the text ``event`` adds to the answer, or ``""`` (see the module doc)."""
    if '"delta"' not in event.data:
        return ""
    try:
        data = jsonbytes.loads(event.data)
    except ValueError:
        return ""
    if not isinstance(data, dict):
        return ""
    kind, delta = data.get("type"), data.get("delta")
    if kind == "content_block_delta" and isinstance(delta, dict):
        text = delta.get("text") if delta.get("type") == "text_delta" else None
        return text if isinstance(text, str) else ""
    if kind == "response.output_text.delta":
        return delta if isinstance(delta, str) else ""
    choices = data.get("choices")
    return _choices_text(choices) if isinstance(choices, list) else ""


class _TapParser:
    """A stream parser that shows each event's text after the real parser took it."""

    def __init__(self, inner: StreamParser, on_text: Callable[[str], None]) -> None:
        self.inner = inner
        self.on_text = on_text

    def feed(self, event: SSEEvent) -> None:
        self.inner.feed(event)
        if text := text_delta(event):
            self.on_text(text)

    def finish(self) -> ParsedResponse:
        return self.inner.finish()


class Tapped:
    """``provider`` whose streamed responses call ``on_text(delta)`` as text arrives.

    Use :meth:`of` to get it typed as a :class:`~llmcore.providers.base.Provider`.
    """

    def __init__(self, provider: Provider, on_text: Callable[[str], None]) -> None:
        self._inner = provider
        self._on_text = on_text

    @classmethod
    def of(cls, provider: Provider, on_text: Callable[[str], None]) -> Provider:
        """Return the wrapped provider."""
        return cast(Provider, cls(provider, on_text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def stream_parser(self) -> StreamParser:
        """The wrapped provider's parser, tapped."""
        return _TapParser(self._inner.stream_parser(), self._on_text)
