"""Shared pieces of the provider modules: reading recorded bodies back, and common body fields.

Import (recorded body → neutral :class:`~llmcore.request.Request`) checks every value it reads
and raises :class:`~llmcore.errors.RequestFileError` naming the JSON path (``$.messages[3]``) or
:class:`~llmcore.errors.UnsupportedContentError` naming the feature. The provider modules own
their wire shapes; this module holds only what is the same for all of them.
"""

from __future__ import annotations

import base64
import binascii
import warnings
from collections.abc import Callable, Iterable
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.errors import (
    EncodingError,
    InvalidMessageError,
    InvalidRequestError,
    RequestFileError,
    UnsupportedContentError,
)
from llmcore.messages import Image, Message, MessageContent, ToolResult, clean_text
from llmcore.providers._jsonspan import find_span
from llmcore.providers.base import ImportResult, validate_pairing
from llmcore.request import CacheMode, CacheTtl, Params, Request, Tool, ToolChoice

__all__ = [
    "CacheMode",
    "CacheTtl",
    "Importer",
    "Tool",
    "ToolChoice",
    "b64decode",
    "bad",
    "extra_fields",
    "find_cache_ttls",
    "json_text",
    "join_text_blocks",
    "make_message",
    "make_tool",
    "make_params",
    "need_list",
    "need_obj",
    "need_str",
    "put_extra",
    "put_sampling",
    "split_parts",
    "text_blocks",
    "text_bytes",
    "unsupported",
]


def bad(message: str, at: str) -> RequestFileError:
    """Return a :class:`RequestFileError` for ``message`` at JSON path ``at``."""
    return RequestFileError(message, location=at)


def unsupported(feature: str, at: str) -> UnsupportedContentError:
    """Return the error for what llmcore's model cannot hold (SPEC M2, R2 ``import``).

    Content outside the four content cases, and tool or message fields beyond a function tool's
    name, description, schema and ``strict`` or a message's modeled fields.
    """
    return UnsupportedContentError(feature, f"{feature} {_NO_PLACE}", location=at)


_NO_PLACE: Final = (
    "has no place in llmcore's model (four content cases; function tools with a name, "
    "description, schema and strict)"
)


def typed(kind: Any, noun: str) -> str:
    """Name an object by its ``type`` for errors: ``"input_audio part"``, ``"part with no 'type'"``.

    A missing or non-string ``type`` is said as such, never printed as ``None``.
    """
    if isinstance(kind, str) and kind:
        return f"{kind} {noun}"
    if kind is None:
        return f"{noun} with no 'type'"
    return f"{noun} with 'type' {kind!r}"


def need_obj(value: Any, at: str) -> dict[str, Any]:
    """Return ``value`` if it is a JSON object, else raise naming ``at``."""
    if not isinstance(value, dict):
        raise bad(f"expected an object, found {_kind(value)}", at)
    return value


def _missing(obj: dict[str, Any], key: str, at: str) -> None:
    if key not in obj:
        raise bad(f"missing key {key!r}", f"{at}.{key}")


def need_list(obj: dict[str, Any], key: str, at: str) -> list[Any]:
    """Return ``obj[key]`` if it is an array, else raise naming ``at.key`` (and a missing key)."""
    _missing(obj, key, at)
    value = obj.get(key)
    if not isinstance(value, list):
        raise bad(f"expected an array, found {_kind(value)}", f"{at}.{key}")
    return value


def tool_list(body: dict[str, Any], at: str) -> list[Any]:
    """Return the body's ``tools`` array (empty when absent), else raise naming ``at.tools``."""
    raw = body.get("tools")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise bad("expected an array", f"{at}.tools")
    return raw


def need_str(obj: dict[str, Any], key: str, at: str) -> str:
    """Return ``obj[key]`` if it is a string, else raise naming ``at.key`` (and a missing key)."""
    _missing(obj, key, at)
    value = obj.get(key)
    if not isinstance(value, str):
        raise bad(f"expected a string, found {_kind(value)}", f"{at}.{key}")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null or nothing"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )


def text_bytes(text: str) -> bytes:
    r"""Return the UTF-8 bytes of a string read from a body, lone surrogates as U+FFFD.

    A body's ``\ud800`` escape parses to a lone surrogate, which has no UTF-8 form; the
    message model's one treatment (:func:`~llmcore.messages.clean_text`) applies wherever import
    turns a string into tool-call or tool-result bytes.
    """
    return clean_text(text).encode("utf-8")


def json_text(value: Any, at: str) -> str:
    """Return ``value`` as compact JSON text, lone surrogates as U+FFFD.

    Raises:
        RequestFileError: The value cannot be written (nested too deeply); names ``at``.
    """
    try:
        return clean_text(jsonbytes.dumps_text(value))
    except EncodingError as exc:
        raise bad(exc.message, at) from None


def value_span(
    raw: bytes | None, path: tuple[str | int, ...], value: Any, present: bool, at: str
) -> bytes:
    """Return the bytes of the JSON value at ``path`` in ``raw``: its exact span (M2, P2).

    The span is taken where the body's bytes are known and hold this value there (they parse to
    ``value``); otherwise, and for a missing value, compact JSON of ``value``.
    """
    if raw is not None and present:
        try:
            begin, end = find_span(raw, path)
        except (KeyError, ValueError, IndexError):
            begin = end = 0
        span = raw[begin:end]
        if span and _parses_to(span, value):
            return span
    return json_text(value, at).encode("utf-8")


def _parses_to(span: bytes, value: Any) -> bool:
    try:
        return bool(jsonbytes.loads(span) == value)
    except (ValueError, RecursionError):
        return False


def b64decode(text: str, at: str) -> bytes:
    """Decode standard base64 strictly, raising naming ``at`` on bad input."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise bad("invalid base64", at) from exc


def make_message(role: str, parts: tuple[MessageContent, ...], at: str) -> Message:
    """Return ``Message(role, parts)``, re-raising model errors with the JSON path."""
    try:
        return Message(role=role, content=parts)  # type: ignore[arg-type]
    except InvalidMessageError as exc:
        where = f"{at}.{exc.location}" if exc.location else at
        raise bad(exc.message, where) from exc


def split_parts(role: str, parts: list[MessageContent], at: str) -> list[Message]:
    """Turn one wire message's parts into neutral messages.

    A user wire message may hold tool results and other content; the results become a ``tool``
    message and the rest a ``user`` message after it (the rebuilt body then has two messages:
    import normalization "tool results split from user content").
    """
    if role not in ("user", "assistant"):
        raise bad(f"unknown role {role!r}", f"{at}.role")
    results = tuple(p for p in parts if isinstance(p, ToolResult))
    rest = tuple(p for p in parts if not isinstance(p, ToolResult))
    out: list[Message] = []
    if results:
        out.append(make_message("tool", results, at))
    if rest and any(getattr(p, "text", None) != "" for p in rest):
        out.append(make_message(role, rest, at))
    return out


def text_blocks(value: Any, at: str) -> list[str]:
    """Return the texts of an array of ``{"type": "text", "text": …}`` blocks."""
    if not isinstance(value, list):
        raise bad(f"expected an array of text blocks, found {_kind(value)}", at)
    texts = []
    for index, block in enumerate(value):
        where = f"{at}[{index}]"
        obj = need_obj(block, where)
        kind = obj.get("type")
        if kind not in ("text", "input_text", "output_text"):
            raise unsupported(typed(kind, "block"), where)
        texts.append(need_str(obj, "text", where))
    return texts


def join_text_blocks(value: Any, at: str) -> str:
    """Join an array of text blocks into one string (normalization "text blocks joined")."""
    return "".join(text_blocks(value, at))


def find_cache_ttls(value: Any) -> set[str]:
    """Return the TTLs (``5m``/``1h``) of every ``cache_control`` marker found in ``value``."""
    found: set[str] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            marker = item.get("cache_control")
            if isinstance(marker, dict):
                found.add("1h" if marker.get("ttl") == "1h" else "5m")
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def extra_fields(body: dict[str, Any], modeled: Iterable[str], at: str) -> list[tuple[str, str]]:
    """Return the body's unmodeled top-level fields as (key, JSON text), in body order.

    ``stream`` other than ``true`` is kept here too, so a recorded ``"stream": false`` survives.
    """
    known = set(modeled)
    out: list[tuple[str, str]] = []
    for key, value in body.items():
        if key not in known or (key == "stream" and value is not True):
            out.append((key, json_text(value, f"{at}.{key}")))
    return out


def choice_and_extra(
    body: dict[str, Any],
    modeled: Iterable[str],
    at: str,
    read_choice: Callable[[Any], ToolChoice | None],
) -> tuple[ToolChoice | None, list[tuple[str, str]]]:
    """Return the body's tool choice, when it has a neutral form, and its unmodeled fields.

    A ``tool_choice`` that ``read_choice`` cannot map stays in the extra fields as it is.
    """
    choice = body.get("tool_choice")
    tool_choice = read_choice(choice)
    extra = extra_fields(body, modeled, at)
    if choice is not None and tool_choice is None:
        extra.append(("tool_choice", json_text(choice, f"{at}.tool_choice")))
    return tool_choice, extra


def _number(body: dict[str, Any], key: str, at: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(f"expected a number, found {_kind(value)}", f"{at}.{key}")
    return value


def _stops(body: dict[str, Any], key: str, at: str) -> tuple[str, ...] | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise bad("expected a string or an array of strings", f"{at}.{key}")


def make_params(
    body: dict[str, Any],
    at: str,
    *,
    max_tokens_key: str,
    stop_key: str,
    tool_choice: ToolChoice | None,
    cache: tuple[CacheMode, CacheTtl],
    extra: list[tuple[str, str]],
) -> Params:
    """Return the neutral parameters read from a recorded body's top-level fields."""
    max_tokens = body.get(max_tokens_key)
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
        raise bad("expected an integer", f"{at}.{max_tokens_key}")
    return Params(
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", at),
        top_p=_number(body, "top_p", at),
        stop_sequences=_stops(body, stop_key, at),
        tool_choice=tool_choice,
        cache_mode=cache[0],
        cache_ttl=cache[1],
        stream=body.get("stream") is True,
        extra=tuple(extra),
    )


def put_sampling(body: dict[str, Any], params: Params, *, stop_key: str) -> None:
    """Write ``temperature``, ``top_p`` and the stop sequences (under ``stop_key``) when set."""
    if params.temperature is not None:
        body["temperature"] = params.temperature
    if params.top_p is not None:
        body["top_p"] = params.top_p
    if params.stop_sequences is not None:
        body[stop_key] = list(params.stop_sequences)


def put_extra(body: dict[str, Any], params: Params) -> None:
    """Append ``params.extra`` verbatim after the modeled keys (SPEC R1).

    Raises:
        InvalidRequestError: An extra key collides with a key this body already writes.
    """
    for key, text in params.extra:
        if key in body:
            raise InvalidRequestError(
                f"params.extra key {key!r} collides with a field llmcore writes",
                location=f"params.extra.{key}",
            )
        body[key] = jsonbytes.Raw(text)


def make_tool(name: Any, description: Any, schema: Any, at: str, strict: Any = None) -> Tool:
    """Return a neutral tool, checking the values' types (``strict``: a boolean or ``None``)."""
    if strict is not None and not isinstance(strict, bool):
        raise bad("expected a boolean", f"{at}.strict")
    if not isinstance(name, str):
        raise bad("a tool needs a string name", f"{at}.name")
    if description is not None and not isinstance(description, str):
        raise bad("expected a string", f"{at}.description")
    if schema is None:
        schema = {}
    if not isinstance(schema, dict):
        raise bad("the input schema must be an object", at)
    text = json_text(schema, at)
    try:
        return Tool(name=name, description=description or "", input_schema=text, strict=strict)
    except InvalidRequestError as exc:
        field = exc.location not in (None, "input_schema")  # the schema is where ``at`` points
        raise bad(exc.message, f"{at}.{exc.location}" if field else at) from None


class Importer:
    """One import run: collects notes and tool names; subclasses read one provider's shapes."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self.call_names: dict[str, str] = {}

    def note(self, line: str) -> None:
        """Record something dropped or normalized."""
        self.notes.append(line)

    def make_image(self, data: bytes, mime_type: str, at: str) -> Image:
        """Return an :class:`Image`; a corrected type (A5) becomes a note, not a warning."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            image = Image(data=data, mime_type=mime_type)
        for warning in caught:
            self.note(f"{at}: {warning.message}")
        return image

    def run(self, body: Any, at: str) -> ImportResult:
        """Read ``body`` into an :class:`ImportResult`."""
        obj = need_obj(body, at)
        model = need_str(obj, "model", at)
        if not model:
            raise bad("needs a non-empty model name", f"{at}.model")
        system = self.system(obj, at)
        tools = self.tools(obj, at)
        messages = tuple(self.messages(obj, at))
        try:
            validate_pairing(messages)
        except InvalidRequestError as exc:
            # Real APIs have accepted such histories, but llmcore never builds one (issue 2).
            raise UnsupportedContentError(
                "unpaired tool call or result", exc.message, location=f"{at}.messages"
            ) from exc
        try:
            params = self.params(obj, at)
            request = Request(
                model=model, system=system, tools=tools, messages=messages, params=params
            )
        except InvalidRequestError as exc:
            # The neutral location (params.temperature, tools[1].name) goes in the message: the
            # body's own key differs by provider.
            where = f"{exc.location}: " if exc.location else ""
            raise bad(f"{where}{exc.message}", at) from None
        return ImportResult(request=request, notes=tuple(self.notes))

    def system(self, body: dict[str, Any], at: str) -> tuple[str, ...]:
        """Return the system prompt blocks."""
        raise NotImplementedError

    def tools(self, body: dict[str, Any], at: str) -> tuple[Tool, ...]:
        """Return the tool definitions."""
        raise NotImplementedError

    def messages(self, body: dict[str, Any], at: str) -> list[Message]:
        """Return the history."""
        raise NotImplementedError

    def params(self, body: dict[str, Any], at: str) -> Params:
        """Return the parameters, unmodeled fields in ``extra``."""
        raise NotImplementedError
