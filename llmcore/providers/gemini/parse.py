"""Gemini ``generateContent``: the response parser, JSON bodies and server-sent events (P1, M2, M4).

Response side (https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse):

* The first candidate is read. ``text`` parts become :class:`~llmcore.messages.Text`;
  ``functionCall`` parts become :class:`~llmcore.messages.ToolCall` whose ``arguments`` are the
  exact byte span of ``args`` in the body (or in the stream chunk that held the part; M2), ``{}``
  when the call has none. A call without ``id`` gets :func:`~.encode.synthetic_id` of its
  position among the response's calls (never sent back, :mod:`.encode`).
* Thoughts (``"thought": true`` parts) never enter the history, and neither do thought
  signatures (M4). When any part holds one, ``ParsedResponse.carry`` holds every part of the
  response as raw JSON, exactly as received (a stream's parts chunk by chunk), to be sent back
  in place of the message's own parts for the rest of the turn: the API requires each signature
  back in the part it came with (https://ai.google.dev/gemini-api/docs/thought-signatures).
* Streams (``:streamGenerateContent?alt=sse``): each ``data:`` event is one
  ``GenerateContentResponse`` chunk; text is concatenated, each ``functionCall`` arrives whole.
  The stream is complete once a chunk has a ``finishReason`` (or ``promptFeedback.blockReason``);
  without one it is truncated (:class:`~llmcore.errors.ResponseParseError`).
* Usage (U1, https://ai.google.dev/api/generate-content#UsageMetadata): ``promptTokenCount``
  includes ``cachedContentTokenCount``, so ``input`` = prompt − cached (+
  ``toolUsePromptTokenCount``), ``cache_read`` = cached, ``output`` = ``candidatesTokenCount`` +
  ``thoughtsTokenCount``; no cache writes are reported (explicit caches are written by the
  ``cachedContents`` call).
* ``finishReason``: ``STOP`` → ``end_turn`` (``tool_use`` when the response holds calls),
  ``MAX_TOKENS`` → ``max_tokens``, ``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
  ``PROHIBITED_CONTENT``, ``SPII``, ``IMAGE_SAFETY`` and a prompt ``blockReason`` → ``refusal``,
  others → ``other``.
* Errors: ``{"error": {"code", "message", "status"}}``; ``status`` (``INVALID_ARGUMENT``, …) is
  the error type (https://ai.google.dev/gemini-api/docs/troubleshooting).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.errors import APIStatusError, ResponseParseError
from llmcore.messages import Text, ToolCall
from llmcore.providers import _parse_common as pc
from llmcore.providers._jsonspan import find_span
from llmcore.providers._sse import SSEEvent
from llmcore.providers.base import Endpoint, ParsedResponse, StopReason
from llmcore.providers.gemini.encode import synthetic_id
from llmcore.usage import Usage

ENDPOINT: Final = Endpoint(
    base_url="https://generativelanguage.googleapis.com/v1beta",
    path="/models/{model}:generateContent",
    stream_path="/models/{model}:streamGenerateContent?alt=sse",
    api_key_env="GEMINI_API_KEY",
    auth="x-goog-api-key",
    fallback_key_envs=("GOOGLE_API_KEY",),
    bearer_hosts=("aiplatform.googleapis.com",),
    bearer_key_env="GOOGLE_OAUTH_ACCESS_TOKEN",
)
"""The AI Studio endpoint (https://ai.google.dev/api/generate-content); a Vertex AI base URL
(:func:`llmcore.providers.gemini.vertex_base_url`) takes a bearer token instead."""

_NAME: Final = "gemini"
_REFUSED: Final = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)
_SKIPPED_PARTS: Final = ("executableCode", "codeExecutionResult", "fileData", "inlineData")


class _Reader:
    """Collects the parts of one response (one body, or a stream's chunks)."""

    def __init__(self) -> None:
        self.content: list[Text | ToolCall] = []
        self.raw_parts: list[str] = []
        self.provider_only = False
        self.calls = 0
        self.notes: list[str] = []

    def parts(self, data: bytes, obj: dict[str, Any], at: str) -> None:
        """Read ``candidates[0].content.parts`` of one parsed object whose bytes are ``data``."""
        candidates = obj.get("candidates")
        if candidates is None:
            return
        if not isinstance(candidates, list):
            raise ResponseParseError(f"{at}.candidates must be an array", provider=_NAME)
        if not candidates:
            return
        first = candidates[0]
        if not isinstance(first, dict):
            raise ResponseParseError(f"{at}.candidates[0] must be an object", provider=_NAME)
        content = first.get("content")
        if not isinstance(content, dict):
            return
        parts = content.get("parts") or []
        if not isinstance(parts, list):
            raise ResponseParseError(
                f"{at}.candidates[0].content.parts must be an array", provider=_NAME
            )
        for index, part in enumerate(parts):
            path: tuple[str | int, ...] = ("candidates", 0, "content", "parts", index)
            self.part(data, part, path, f"{at}.candidates[0].content.parts[{index}]")

    def part(self, data: bytes, part: Any, path: tuple[str | int, ...], at: str) -> None:
        if not isinstance(part, dict):
            raise ResponseParseError(f"{at} must be an object", provider=_NAME)
        begin, end = find_span(data, path)
        self.raw_parts.append(data[begin:end].decode("utf-8"))
        if part.get("thought") is True or "thoughtSignature" in part:
            self.provider_only = True
        if part.get("thought") is True:
            return
        if "functionCall" in part:
            self.content.append(self.call(data, part["functionCall"], path, at))
        elif "text" in part:
            text = part["text"]
            if not isinstance(text, str):
                raise ResponseParseError(f"{at}.text must be a string", provider=_NAME)
            self.text(text)
        elif any(key in part for key in _SKIPPED_PARTS):
            kind = next(key for key in _SKIPPED_PARTS if key in part)
            self.notes.append(f"{at}: left out a {kind} part (provider-only, M4)")

    def text(self, text: str) -> None:
        if not text:
            return
        last = self.content[-1] if self.content else None
        if isinstance(last, Text):
            self.content[-1] = Text(text=last.text + text)
        else:
            self.content.append(Text(text=text))

    def call(self, data: bytes, call: Any, path: tuple[str | int, ...], at: str) -> ToolCall:
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ResponseParseError(f"{at}.functionCall needs a string name", provider=_NAME)
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            call_id = synthetic_id(self.calls)
        self.calls += 1
        if "args" in call:
            if not isinstance(call["args"], dict):
                raise ResponseParseError(
                    f"{at}.functionCall.args must be an object", provider=_NAME
                )
            begin, end = find_span(data, (*path, "functionCall", "args"))
            arguments = data[begin:end]
        else:
            arguments = b"{}"
        return ToolCall(id=call_id, name=call["name"], arguments=arguments)


def parse_response(body: bytes) -> ParsedResponse:
    """Parse a non-streamed ``GenerateContentResponse`` body (status 200).

    Raises:
        ResponseParseError: Not JSON, or malformed fields.
        APIStatusError: The body is an error object.
    """
    obj = pc.load_object(body, _NAME, "response body")
    if "error" in obj:
        raise _error_in_body(obj)
    reader = _Reader()
    reader.parts(body, obj, "$")
    return _finish(reader, obj, _finish_reason(obj), obj.get("usageMetadata"))


def _finish_reason(obj: Mapping[str, Any]) -> str | None:
    candidates = obj.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        reason = candidates[0].get("finishReason")
        if isinstance(reason, str):
            return reason
    feedback = obj.get("promptFeedback")
    if isinstance(feedback, dict) and isinstance(feedback.get("blockReason"), str):
        return str(feedback["blockReason"])
    return None


def _finish(
    reader: _Reader, obj: Mapping[str, Any], raw_stop: str | None, usage: Any
) -> ParsedResponse:
    calls = any(isinstance(part, ToolCall) for part in reader.content)
    model = obj.get("modelVersion")
    rid = obj.get("responseId")
    return ParsedResponse(
        content=tuple(reader.content),
        carry=tuple(reader.raw_parts) if reader.provider_only else (),
        stop_reason=map_finish_reason(raw_stop, calls=calls),
        raw_stop_reason=raw_stop,
        usage=parse_usage(usage if isinstance(usage, dict) else {}),
        model=model if isinstance(model, str) else None,
        response_id=rid if isinstance(rid, str) else None,
        notes=tuple(reader.notes),
    )


class GeminiStreamParser:
    """Builds a :class:`ParsedResponse` from ``streamGenerateContent?alt=sse`` chunks."""

    def __init__(self) -> None:
        self._reader = _Reader()
        self._head: dict[str, Any] = {}
        self._usage: Any = None
        self._stop: str | None = None
        self._chunks = 0

    def feed(self, event: SSEEvent) -> None:
        """Take the next event.

        Raises:
            ResponseParseError: Invalid JSON or an unknown event name.
            APIStatusError: An error object in the stream.
        """
        if event.event not in ("message", "error"):
            raise ResponseParseError(f"unknown stream event type {event.event!r}", provider=_NAME)
        data = event.data.encode("utf-8")
        chunk = pc.load_object(data, _NAME, "stream chunk")
        if "error" in chunk:
            raise _error_in_body(chunk)
        self._head = self._head or chunk
        if isinstance(chunk.get("usageMetadata"), dict):
            self._usage = chunk["usageMetadata"]
        self._reader.parts(data, chunk, f"chunk[{self._chunks}]")
        self._chunks += 1
        self._stop = _finish_reason(chunk) or self._stop

    def finish(self) -> ParsedResponse:
        """Return the response.

        Raises:
            ResponseParseError: No chunk carried a ``finishReason`` (truncated).
        """
        if self._stop is None:
            raise ResponseParseError(
                "event stream ended before a finishReason (truncated)", provider=_NAME
            )
        return _finish(self._reader, self._head, self._stop, self._usage)


def parse_usage(usage: Mapping[str, Any]) -> Usage:
    """Normalize ``usageMetadata`` (U1; the module doc gives the rule).

    Raises:
        ResponseParseError: A count is not a non-negative integer.
    """
    at = "usageMetadata"
    prompt = pc.opt_int(usage, "promptTokenCount", _NAME, at)
    cached = pc.opt_int(usage, "cachedContentTokenCount", _NAME, at)
    tool_prompt = pc.opt_int(usage, "toolUsePromptTokenCount", _NAME, at)
    output = pc.opt_int(usage, "candidatesTokenCount", _NAME, at)
    thoughts = pc.opt_int(usage, "thoughtsTokenCount", _NAME, at)
    return Usage(
        input=max(0, prompt - cached) + tool_prompt,
        output=output + thoughts,
        cache_read=min(cached, prompt) if prompt else cached,
    )


def map_finish_reason(reason: str | None, *, calls: bool = False) -> StopReason:
    """Map a ``finishReason`` (or prompt ``blockReason``) to the neutral :data:`StopReason`."""
    if reason == "STOP":
        return "tool_use" if calls else "end_turn"
    if reason == "MAX_TOKENS":
        return "max_tokens"
    if reason in _REFUSED or reason in ("OTHER_BLOCK", "BLOCK_REASON_UNSPECIFIED"):
        return "refusal"
    return "other"


_STATUS_CODES: Final = {
    "INVALID_ARGUMENT": 400,
    "FAILED_PRECONDITION": 400,
    "UNAUTHENTICATED": 401,
    "PERMISSION_DENIED": 403,
    "NOT_FOUND": 404,
    "RESOURCE_EXHAUSTED": 429,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DEADLINE_EXCEEDED": 504,
}


def _error_fields(obj: Mapping[str, Any]) -> tuple[str | None, str | None, int | None]:
    error = obj.get("error")
    if isinstance(error, list) and error and isinstance(error[0], dict):
        error = error[0].get("error")  # a streamed error can arrive as a one-item array
    if not isinstance(error, dict):
        return None, None, None
    status, message, code = error.get("status"), error.get("message"), error.get("code")
    return (
        status if isinstance(status, str) else None,
        message if isinstance(message, str) else None,
        code if isinstance(code, int) and not isinstance(code, bool) else None,
    )


def _error_in_body(obj: dict[str, Any]) -> APIStatusError:
    status, message, code = _error_fields(obj)
    number = code if code is not None and code >= 400 else _STATUS_CODES.get(status or "", 500)
    return pc.error_in_body(_NAME, number, obj, status, message)


def error_from_body(status: int, body: bytes, headers: Mapping[str, str]) -> APIStatusError:
    """Return the typed error for an HTTP error status and its body (never raises).

    ``{"error": {"code", "message", "status"}}`` (a one-item array of it too); the status name
    is the error type.
    """
    try:
        loaded: Any = jsonbytes.loads(body)
    except (ValueError, RecursionError):
        loaded = {}
    obj: Mapping[str, Any] = {}
    if isinstance(loaded, dict):
        obj = loaded
    elif isinstance(loaded, list) and loaded and isinstance(loaded[0], dict):
        obj = loaded[0]
    kind, message, _ = _error_fields(obj)
    return pc.api_error(
        provider=_NAME,
        status=status,
        body=body,
        headers=headers,
        error_type=kind,
        message=message,
        request_id=pc.header(headers, "x-request-id"),
    )
