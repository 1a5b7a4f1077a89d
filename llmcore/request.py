"""The neutral request: model, system prompt, tools, history and parameters (SPEC P1, R1).

A :class:`Request` is what every provider module turns into body bytes. It is provider-neutral:
parameter names follow the request file of SPEC R1 (``maxTokens``, ``toolChoice``, ``cacheTtl``,
…) and each provider maps them. Provider-specific top-level fields ride in
:attr:`Params.extra` as raw JSON text, written after the modeled keys in their given order.

Every value is checked and cleaned when it is made (``__post_init__``): wrong types, a
non-positive ``max_tokens``, non-finite sampling numbers (ranges are left to the provider),
``extra`` values or an ``input_schema`` that are not JSON text, two tools with one name, and a
named tool choice that names no tool raise :class:`~llmcore.errors.InvalidRequestError` whose
``location`` is the request-file path relative to ``$`` (``params.temperature``,
``tools[1].name``), except a :class:`Tool`'s own checks, which name its Python argument
(``input_schema``; the request-file reader reports it as ``inputSchema``). Lone surrogates in
every string, JSON text included, become U+FFFD (:func:`~llmcore.messages.clean_text`, the
message model's one treatment).

It leaves out sending (``llmcore.transport``) and the request file codec
(:mod:`llmcore.requestfile`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Final, Literal, TypeAlias

from llmcore import jsonbytes
from llmcore.errors import InvalidRequestError
from llmcore.jsonbytes import integer_size
from llmcore.messages import Message, clean_text

__all__ = [
    "CacheMode",
    "CacheTtl",
    "MAX_JSON_INTEGER",
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

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", _text(self.name, "params.toolChoice.name"))


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
        # Errors name the Python argument (``input_schema``); the request-file reader maps it
        # back to the file's key (``inputSchema``).
        object.__setattr__(self, "name", _text(self.name, "name"))
        if not self.name:
            raise InvalidRequestError("a tool needs a non-empty name", location="name")
        object.__setattr__(self, "description", _text(self.description, "description"))
        if not isinstance(self.input_schema, str):
            hint = "; Tool.from_schema(name, description, schema) takes a dict"
            raise InvalidRequestError(
                f"expected the schema as JSON text (a str), not {type(self.input_schema).__name__}"
                + hint * isinstance(self.input_schema, dict),
                location="input_schema",
            )
        schema = _json_text(self.input_schema, "input_schema", need_object=True)
        object.__setattr__(self, "input_schema", schema)
        if self.strict is not None and not isinstance(self.strict, bool):
            raise InvalidRequestError("strict must be a bool or None", location="strict")

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
        if self.max_tokens is not None:
            _check_max_tokens(self.max_tokens)
        _check_number(self.temperature, "params.temperature")
        _check_number(self.top_p, "params.topP")
        if self.stop_sequences is not None:
            object.__setattr__(self, "stop_sequences", _stops(self.stop_sequences))
        object.__setattr__(self, "tool_choice", _choice(self.tool_choice))
        if self.cache_ttl not in ("5m", "1h"):
            raise InvalidRequestError(
                f"cacheTtl must be '5m' or '1h', not {self.cache_ttl!r}", location="params.cacheTtl"
            )
        if self.cache_mode not in ("breakpoints", "automatic", "off"):
            raise InvalidRequestError(
                f"cacheMode must be breakpoints, automatic or off, not {self.cache_mode!r}",
                location="params.cacheMode",
            )
        if not isinstance(self.stream, bool):
            raise InvalidRequestError("stream must be a bool", location="params.stream")
        object.__setattr__(self, "extra", _extra(self.extra))


def _text(value: object, at: str) -> str:
    if not isinstance(value, str):
        raise InvalidRequestError(f"expected a str, not {type(value).__name__}", location=at)
    return clean_text(value)


def _json_text(value: object, at: str, *, need_object: bool = False) -> str:
    """Return JSON text cleaned of lone surrogates, refusing text that does not parse."""
    text = _text(value, at)
    try:
        parsed = jsonbytes.loads(text, finite=True)
    except ValueError as exc:
        raise InvalidRequestError(f"not valid JSON text ({exc})", location=at) from None
    except RecursionError:
        raise InvalidRequestError("JSON text nested too deeply", location=at) from None
    if need_object and not isinstance(parsed, dict):
        raise InvalidRequestError("expected the JSON text of an object", location=at)
    return text


MAX_JSON_INTEGER: Final = 2**53 - 1
"""Largest integer ``maxTokens`` may be: 9,007,199,254,740,991. RFC 8259 §6: "numbers that are
integers and are in the range [-(2**53)+1, (2**53)-1] are interoperable in the sense that
implementations will agree exactly on their numeric values" (read 2026-12-02); a provider
reading a larger one may read another value or refuse the body."""


def _check_max_tokens(value: object) -> None:
    at = "params.maxTokens"
    if isinstance(value, bool) or not isinstance(value, int):
        kind = type(value).__name__
        raise InvalidRequestError(f"expected an int, not {kind}", location=at)
    if value < 1:
        shown = integer_size(value) if value < -MAX_JSON_INTEGER else str(value)
        raise InvalidRequestError(f"must be at least 1, not {shown}", location=at)
    if value > MAX_JSON_INTEGER:
        raise InvalidRequestError(
            f"{integer_size(value)} is over {MAX_JSON_INTEGER:,}, the largest integer JSON "
            "readers agree on (RFC 8259 §6)",
            location=at,
        )


def _check_number(value: object, at: str) -> None:
    # Ranges are the provider's to enforce: they differ (Anthropic temperature <= 1, OpenAI <= 2)
    # and recorded bodies hold values outside them. Only values with no JSON form are refused,
    # and integers no JSON number reader (IEEE 754 binary64, RFC 8259 §6) can hold.
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRequestError(f"expected a number, not {type(value).__name__}", location=at)
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            raise InvalidRequestError(
                f"{integer_size(value)} is too large for a JSON number (IEEE 754 binary64 "
                "holds at most about 1.8e308, RFC 8259 §6)",
                location=at,
            ) from None
    elif not math.isfinite(value):
        raise InvalidRequestError(f"{value!r} is not a finite number", location=at)


def _stops(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list):
        kind = type(value).__name__
        raise InvalidRequestError(
            f"expected a tuple of str, not {kind}", location="params.stopSequences"
        )
    return tuple(_text(s, f"params.stopSequences[{i}]") for i, s in enumerate(value))


def _choice(value: object) -> ToolChoice | None:
    if value is None or isinstance(value, ToolChoiceName) or value in ("auto", "none", "any"):
        return value
    raise InvalidRequestError(
        f"expected 'auto', 'none', 'any' or a ToolChoiceName, not {value!r}",
        location="params.toolChoice",
    )


def _extra(value: object) -> tuple[tuple[str, str], ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list):
        raise InvalidRequestError(
            "expected a tuple of (key, JSON text) pairs", location="params.extra"
        )
    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for pair in value:
        if not (isinstance(pair, tuple | list) and len(pair) == 2 and isinstance(pair[0], str)):
            raise InvalidRequestError(
                f"expected a (key, JSON text) pair, not {pair!r}", location="params.extra"
            )
        key = clean_text(pair[0])
        if key in seen:
            raise InvalidRequestError(f"repeats the key {key!r}", location="params.extra")
        seen.add(key)
        out.append((key, _json_text(pair[1], f"params.extra.{key}")))
    return tuple(out)


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
        object.__setattr__(self, "model", _text(self.model, "model"))
        system = _sequence(self.system, "system")
        object.__setattr__(
            self, "system", tuple(_text(s, f"system[{i}]") for i, s in enumerate(system))
        )
        object.__setattr__(self, "tools", _sequence(self.tools, "tools"))
        object.__setattr__(self, "messages", _sequence(self.messages, "messages"))
        if not all(map(isinstance, self.messages, repeat(Message))):  # one C loop per request
            index, message = next(
                (i, m) for i, m in enumerate(self.messages) if not isinstance(m, Message)
            )
            kind = type(message).__name__
            raise InvalidRequestError(
                f"expected a Message, not {kind}", location=f"messages[{index}]"
            )
        if not isinstance(self.params, Params):
            raise InvalidRequestError("expected a Params", location="params")
        _check_tools(self.tools, self.params.tool_choice)


def _sequence(value: object, at: str) -> tuple[Any, ...]:
    if type(value) is tuple:  # a subclass is copied: the encode cache compares these tuples
        return value
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise InvalidRequestError(f"expected a tuple, not {type(value).__name__}", location=at)
    return tuple(value)


def _check_tools(tools: tuple[Any, ...], choice: ToolChoice | None) -> None:
    """Refuse a non-tool, two tools with one name, or a tool choice naming no tool.

    Both providers reject these (Anthropic: "Tool names must be unique"; OpenAI: a
    ``tool_choice`` function must be one of ``tools``).
    """
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if not isinstance(tool, Tool):
            kind = type(tool).__name__
            raise InvalidRequestError(f"expected a Tool, not {kind}", location=f"tools[{index}]")
        if tool.name in seen:
            raise InvalidRequestError(
                f"a second tool is named {tool.name!r} (tool names must be unique)",
                location=f"tools[{index}].name",
            )
        seen.add(tool.name)
    if isinstance(choice, ToolChoiceName) and choice.name not in seen:
        raise InvalidRequestError(
            f"toolChoice names {choice.name!r}, which is not one of the tools",
            location="params.toolChoice.name",
        )
