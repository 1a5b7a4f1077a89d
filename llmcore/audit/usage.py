"""Token usage and ids reported by recorded responses (SPEC V1, real token counts).

A cassette that holds the responses holds what the provider counted. Read from a response body
(JSON, or server-sent events), as the providers' API references name the fields:

* Anthropic Messages (https://docs.anthropic.com/en/api/messages): ``usage.input_tokens`` (not
  cached), ``cache_read_input_tokens``, ``cache_creation_input_tokens``; streamed, the
  ``message_start`` event's ``message.usage``, updated by any of those fields in
  ``message_delta``'s ``usage``;
* OpenAI Chat Completions (https://platform.openai.com/docs/api-reference/chat/object):
  ``usage.prompt_tokens`` (all input) and ``usage.prompt_tokens_details.cached_tokens``;
  streamed, the chunk that carries ``usage`` (the last one, with ``stream_options``);
* OpenAI Responses (https://platform.openai.com/docs/api-reference/responses/object):
  ``usage.input_tokens`` (all input) and ``usage.input_tokens_details.cached_tokens``, the
  response's ``id``; streamed, the ``response.completed`` event's ``response`` (the id also from
  ``response.created``).
* Gemini ``generateContent`` (https://ai.google.dev/api/generate-content#UsageMetadata):
  ``usageMetadata.promptTokenCount`` (all input) and ``cachedContentTokenCount``;
* Bedrock Converse (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_TokenUsage.html):
  ``usage.inputTokens`` (not cached), ``cacheReadInputTokens``, ``cacheWriteInputTokens``.

A recorded body may be text, bytes, base64 text, or gzip-compressed (vcrpy writes
``body: {string: !!binary …}`` beside ``content-encoding: gzip``). A body that cannot be read is
passed over: no usage, never an error.

Leaves out: matching responses to requests (:mod:`llmcore.audit.inputs`).
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["RecordedResponse", "RecordedUsage", "read_response", "usage_of"]

_GZIP_MAGIC: Final = b"\x1f\x8b"
_MAX_DECOMPRESSED: Final = 64 * 1024 * 1024
"""A compressed body expanding beyond this many bytes is passed over (a zip bomb)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedUsage:
    """Prompt tokens one recorded response reported, in one convention for every provider.

    Anthropic's ``input_tokens`` counts only the uncached part; here :attr:`input_tokens` is
    always the whole prompt (Anthropic: input + cache read + cache write; OpenAI: the reported
    total, which includes the cached tokens).
    """

    input_tokens: int
    """Every prompt token of the request."""
    cache_read_tokens: int
    """Tokens read from the prompt cache."""
    cache_write_tokens: int
    """Tokens written to the prompt cache (Anthropic; OpenAI does not report it: 0)."""

    @property
    def hit_rate(self) -> float:
        """``cache_read_tokens ÷ input_tokens`` (0.0 when there is no input)."""
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else 0.0

    @classmethod
    def total(cls, usages: Iterable[RecordedUsage]) -> RecordedUsage:
        """Return the field-by-field sum of ``usages``."""
        got = list(usages)
        return cls(
            input_tokens=sum(u.input_tokens for u in got),
            cache_read_tokens=sum(u.cache_read_tokens for u in got),
            cache_write_tokens=sum(u.cache_write_tokens for u in got),
        )

    def to_dict(self) -> dict[str, int]:
        """Return the counts as JSON-ready values."""
        return {
            "input_tokens": self.input_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedResponse:
    """What the auditor reads from one recorded response."""

    id: str | None = None
    """The response's ``id`` (Responses ``resp_…``, Anthropic ``msg_…``, Chat ``chatcmpl-…``)."""
    usage: RecordedUsage | None = None
    """Its reported prompt usage, when it has one."""


def _count(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53:
        return value
    return None


def _field(obj: Any, *keys: str) -> int:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return _count(obj) or 0


_TOTAL_SHAPES: Final = (
    ("prompt_tokens", "prompt_tokens_details", "cached_tokens"),  # OpenAI Chat Completions
    ("promptTokenCount", None, "cachedContentTokenCount"),  # Gemini usageMetadata
)
"""Shapes whose input count includes the cached tokens: (total, details object, cached)."""

_PARTS_SHAPES: Final = (
    ("inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens"),  # Bedrock Converse
    ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"),  # Anthropic
)
"""Shapes whose input count leaves out the cache reads and writes: (input, read, write)."""


def usage_of(obj: Any) -> RecordedUsage | None:
    """Read a ``usage`` object of any of the shapes above (``None`` when it is none of them)."""
    if not isinstance(obj, dict):
        return None
    if "input_tokens_details" in obj:  # OpenAI Responses: input_tokens includes the cached
        return _total(obj, "input_tokens", "input_tokens_details", "cached_tokens")
    for total, details, cached in _TOTAL_SHAPES:
        if total in obj:
            return _total(obj, total, details, cached)
    for fresh_key, read_key, write_key in _PARTS_SHAPES:
        if fresh_key in obj:
            fresh = _count(obj[fresh_key])
            if fresh is None:
                return None
            read, write = _field(obj, read_key), _field(obj, write_key)
            return RecordedUsage(
                input_tokens=fresh + read + write, cache_read_tokens=read, cache_write_tokens=write
            )
    return None


def _total(
    obj: dict[str, Any], total: str, details: str | None, cached: str
) -> RecordedUsage | None:
    count = _count(obj.get(total))
    if count is None:
        return None
    read = _field(obj, details, cached) if details else _field(obj, cached)
    # OpenRouter adds the cache writes the upstream provider reported to the Chat shape
    # (https://openrouter.ai/docs/features/prompt-caching): included in prompt_tokens.
    write = _field(obj, details, "cache_write_tokens") if details else 0
    return RecordedUsage(input_tokens=count, cache_read_tokens=read, cache_write_tokens=write)


def _text_id(obj: Any) -> str | None:
    value = obj.get("id") if isinstance(obj, dict) else None
    return value if isinstance(value, str) else None


def _decoded(data: bytes) -> bytes | None:
    """The body's bytes, gunzipped and base64-decoded as needed (``None``: unreadable)."""
    for _ in range(3):  # base64 of gzip at most: two layers, one more to read the result
        stripped = data.lstrip()
        if stripped[:1] in (b"{", b"[") or stripped.startswith((b"event:", b"data:", b":")):
            return data
        if data.startswith(_GZIP_MAGIC):
            try:
                inflater = zlib.decompressobj(wbits=31)
                data = inflater.decompress(data, _MAX_DECOMPRESSED)
            except zlib.error:
                return None
            if inflater.unconsumed_tail:
                return None
            continue
        try:
            data = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None
    return None


def _events(text: str) -> list[Any]:
    """The JSON ``data:`` payloads of a server-sent event stream, in order."""
    out = []
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == "[DONE]":
            continue
        try:
            out.append(json.loads(payload))
        except (ValueError, RecursionError):
            continue
    return out


def _from_events(events: list[Any]) -> RecordedResponse:
    rid: str | None = None
    usage: RecordedUsage | None = None
    for event in events:
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "message_start":  # Anthropic
            message = event.get("message")
            rid = rid or _text_id(message)
            usage = usage_of(message.get("usage")) if isinstance(message, dict) else usage
        elif kind == "message_delta" and usage is not None:
            usage = _updated(usage, event.get("usage"))
        elif kind in ("response.created", "response.completed"):  # Responses
            response = event.get("response")
            rid = rid or _text_id(response)
            if isinstance(response, dict) and response.get("usage") is not None:
                usage = usage_of(response["usage"]) or usage
        elif isinstance(event.get("usage"), dict):  # a Chat Completions chunk
            rid = rid or _text_id(event)
            usage = usage_of(event["usage"]) or usage
        else:
            rid = rid or (_text_id(event) if "choices" in event else None)
    return RecordedResponse(id=rid, usage=usage)


def _updated(usage: RecordedUsage, delta: Any) -> RecordedUsage:
    """Anthropic's ``message_delta`` usage may restate the input counts; they win."""
    if not isinstance(delta, dict) or "input_tokens" not in delta:
        return usage
    return usage_of(delta) or usage


def _from_object(value: dict[str, Any]) -> RecordedResponse:
    """A whole (not streamed) response object; Gemini's id is ``responseId``."""
    found = value.get("usage", value.get("usageMetadata"))
    rid = _text_id(value)
    if rid is None and isinstance(value.get("responseId"), str):
        rid = value["responseId"]
    return RecordedResponse(id=rid, usage=usage_of(found))


def _text(body: Any) -> str | None:
    """The body as text once base64 and gzip are undone (``None``: not readable)."""
    data = _decoded(body) if isinstance(body, bytes) else None
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_response(body: Any) -> RecordedResponse:
    """Read the id and usage of one recorded response body.

    Args:
        body: The body as a cassette holds it: ``str``, ``bytes``, a ``{string: …}`` mapping,
            or an already parsed JSON object (a YAML mapping); base64 and gzip are undone.

    Returns:
        The id and usage found; empty for a body that cannot be read (never raises).
    """
    if isinstance(body, dict) and "string" in body:
        body = body["string"]
    if isinstance(body, dict):
        return _from_object(body)
    if isinstance(body, str):
        try:
            body = body.encode("utf-8")
        except UnicodeEncodeError:
            return RecordedResponse()
    text = _text(body)
    if text is None:
        return RecordedResponse()
    if text.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return RecordedResponse()
        return _from_object(value) if isinstance(value, dict) else RecordedResponse()
    return _from_events(_events(text))
