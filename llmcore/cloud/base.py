"""What a cloud endpoint gives the transport: :class:`WireRequest` and :class:`CloudEndpoint`.

A cloud endpoint serves an existing wire API (Anthropic Messages, OpenAI Chat Completions,
OpenAI Responses) from another host, with its own URL, authentication and a documented
top-level difference in the body. The transport asks it, for every attempt, how to send the
body a provider module built (:meth:`CloudEndpoint.prepare`), so signatures and tokens are
fresh on a retry. Endpoints: :class:`llmcore.cloud.anthropic.AnthropicVertex`,
:class:`llmcore.cloud.anthropic.AnthropicBedrock`, :class:`llmcore.cloud.azure.AzureOpenAI`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol
from urllib.parse import quote

from llmcore.cloud._members import BodyShapeError, Rewritten, rewrite
from llmcore.errors import APIStatusError, InvalidRequestError

if TYPE_CHECKING:
    from llmcore.providers._eventstream import EventMessage
    from llmcore.providers._sse import SSEEvent

__all__ = ["USER_AGENT", "CloudEndpoint", "WireRequest", "path_segment", "rewrite_body"]

USER_AGENT: Final = "llmcore/0.1.0"


@dataclass(frozen=True, slots=True, kw_only=True)
class WireRequest:
    """One attempt's request: where, with which headers, and how to read an AWS event stream."""

    url: str
    """The full URL (query included)."""
    headers: Mapping[str, str]
    """Every header to send (they may be signed: none may be added after)."""
    body: bytes
    """The body bytes to send."""
    event_stream: Callable[[EventMessage], Iterable[SSEEvent]] | None = None
    """Turns each message of an ``application/vnd.amazon.eventstream`` answer into the
    server-sent events the provider's stream parser reads; ``None``: no such answer expected."""
    error: Callable[[int, bytes, Mapping[str, str]], APIStatusError] | None = None
    """Turns an error response into the typed error; ``None``: the provider module's own."""


class CloudEndpoint(Protocol):
    """A cloud host of existing wire APIs (see the module doc)."""

    @property
    def providers(self) -> frozenset[str]:
        """The provider names (wire APIs) whose bodies this endpoint takes."""
        ...

    def prepare(self, provider: str, body: bytes, *, stream: bool) -> WireRequest:
        """Return how to send ``body``, built by provider ``provider``, on this endpoint.

        Args:
            provider: The provider's registry name (one of :attr:`providers`).
            body: The exact bytes the provider module built.
            stream: Whether the answer is to be streamed.

        Raises:
            InvalidRequestError: The body cannot go to this endpoint (no model, a key the
                endpoint sets is already there).
            CloudSetupError: The endpoint lacks its region, project or resource.
            MissingCredentialsError: No credentials.
        """
        ...


def rewrite_body(
    provider: str,
    body: bytes,
    *,
    drop: frozenset[str],
    read: frozenset[str] = frozenset(),
    prepend: tuple[tuple[str, object], ...] = (),
    append: tuple[tuple[str, object], ...] = (),
) -> Rewritten:
    """:func:`llmcore.cloud._members.rewrite` with a typed error naming the provider.

    Raises:
        InvalidRequestError: The body is not a JSON object, or has a key the endpoint sets.
    """
    try:
        return rewrite(body, drop=drop, read=read, prepend=prepend, append=append)
    except BodyShapeError as exc:
        raise InvalidRequestError(f"{provider}: {exc}", location="body") from exc


def path_segment(value: object, *, provider: str, what: str, safe: str) -> str:
    """Return ``value`` (a model or deployment name) quoted as one URL path segment.

    Raises:
        InvalidRequestError: ``value`` is not a non-empty string, or is ``.`` / ``..``.
    """
    if not isinstance(value, str) or value in ("", ".", ".."):
        raise InvalidRequestError(
            f"{provider}: the body's {what} must be a non-empty name, got {value!r}",
            location=f"body: $.{what}",
        )
    return quote(value, safe=safe)
