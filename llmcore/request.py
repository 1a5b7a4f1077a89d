"""The neutral request: model, system prompt, tools, history and parameters (SPEC P1, R1).

A :class:`Request` is what every provider module turns into body bytes. It is provider-neutral:
parameter names follow the request file of SPEC R1 (``maxTokens``, ``toolChoice``, ``cacheTtl``,
…) and each provider maps them. Provider-specific top-level fields ride in
:attr:`Params.extra` as raw JSON text, written after the modeled keys in their given order.

It leaves out sending (``llmcore.transport``) and the request file codec
(:mod:`llmcore.requestfile`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from llmcore import jsonbytes
from llmcore.errors import InvalidRequestError
from llmcore.messages import Message, clean_text

__all__ = [
    "CacheMode",
    "CacheTtl",
    "Params",
    "Request",
    "Tool",
    "ToolChoice",
    "ToolChoiceName",
]

CacheTtl: TypeAlias = Literal["5m", "1h"]
CacheMode: TypeAlias = Literal["breakpoints", "automatic", "off"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolChoiceName:
    """Force the model to call the named tool."""

    name: str
    """The tool's name."""


ToolChoice: TypeAlias = Literal["auto", "none", "any"] | ToolChoiceName
"""``auto`` (the model decides), ``none`` (no tool), ``any`` (some tool), or one named tool."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool definition: name, description and the JSON Schema of its input.

    ``input_schema`` is stored as compact JSON text in the order it was given, so the tool is a
    hashable value and always writes the same bytes. Build one from a schema dict with
    :meth:`from_schema`.
    """

    name: str
    """The tool's name."""
    description: str
    """What the tool does, for the model; may be empty (then not sent)."""
    input_schema: str
    """The JSON Schema (an object) as compact JSON text."""
    strict: bool | None = None
    """Ask the provider to enforce the schema exactly (OpenAI and Anthropic ``strict``);
    ``None`` sends nothing where the field is optional (Responses requires it: ``false``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", clean_text(self.name))
        object.__setattr__(self, "description", clean_text(self.description))

    @classmethod
    def from_schema(
        cls, name: str, description: str, schema: dict[str, Any], *, strict: bool | None = None
    ) -> Tool:
        """Return a tool whose schema is ``schema`` written in its own key order.

        Raises:
            EncodingError: The schema holds a value JSON cannot carry.
        """
        text = jsonbytes.dumps_text(schema)
        return cls(name=name, description=description, input_schema=text, strict=strict)

    def schema(self) -> dict[str, Any]:
        """Return the input schema parsed (a fresh dict each call)."""
        value: dict[str, Any] = jsonbytes.loads(self.input_schema)
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Params:
    """Sampling and caching parameters, named neutrally (SPEC R1 ``params``).

    ``None`` means "not sent" (no optional field is ever sent as ``null``), except
    ``max_tokens``, which providers that require it fill from the per-model default table.
    """

    max_tokens: int | None = None
    """Maximum output tokens; Anthropic requires it, Chat sends ``max_completion_tokens``."""
    temperature: float | None = None
    """Sampling temperature."""
    top_p: float | None = None
    """Nucleus sampling mass."""
    stop_sequences: tuple[str, ...] | None = None
    """Sequences that end generation."""
    tool_choice: ToolChoice | None = None
    """How the model may use tools; ``None`` leaves the provider default."""
    cache_ttl: CacheTtl = "5m"
    """TTL of explicit cache breakpoints (SPEC P3)."""
    cache_mode: CacheMode = "breakpoints"
    """``breakpoints`` (P3's four), ``automatic`` (Anthropic top-level), or ``off``."""
    stream: bool = False
    """Ask for a server-sent-event stream."""
    extra: tuple[tuple[str, str], ...] = ()
    """Provider-specific top-level fields: (key, JSON text), written in this order at the end."""

    def __post_init__(self) -> None:
        if self.cache_ttl not in ("5m", "1h"):
            raise InvalidRequestError(f"cacheTtl must be '5m' or '1h', not {self.cache_ttl!r}")
        if self.cache_mode not in ("breakpoints", "automatic", "off"):
            raise InvalidRequestError(
                f"cacheMode must be breakpoints, automatic or off, not {self.cache_mode!r}"
            )
        keys = [key for key, _ in self.extra]
        if len(set(keys)) != len(keys):
            raise InvalidRequestError("params.extra repeats a key")


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """Everything a provider needs to build one request body (SPEC P1).

    The system prompt and tools belong here, not to the history (M1).
    """

    model: str
    """The provider's model name."""
    system: tuple[str, ...] = ()
    """System prompt blocks, in order; empty strings are dropped when a body is built."""
    tools: tuple[Tool, ...] = ()
    """Tool definitions, in order."""
    messages: tuple[Message, ...] = ()
    """The conversation history plus the new messages."""
    params: Params = field(default_factory=Params)
    """Sampling and caching parameters."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "system", tuple(clean_text(s) for s in self.system))
        object.__setattr__(self, "tools", tuple(self.tools))
        object.__setattr__(self, "messages", tuple(self.messages))
