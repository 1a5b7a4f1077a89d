"""Helpers shared by the response sides of the provider modules (SPEC P1).

JSON loading with typed errors, checked field access, ``retry-after`` reading and the building
of :class:`~llmcore.errors.APIStatusError` values. Each provider module keeps its own wire
shapes; this holds only what is the same everywhere.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.errors import APIStatusError, ResponseParseError

__all__ = [
    "api_error",
    "header",
    "load_object",
    "need_int",
    "need_list",
    "need_obj",
    "opt_int",
    "parse_retry_after",
    "snippet",
]

_SNIPPET: Final = 300


def snippet(body: bytes | str) -> str:
    """Return the first 300 characters of ``body`` as text, for error messages."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    return text[:_SNIPPET] + ("…" if len(text) > _SNIPPET else "")


def load_object(data: bytes | str, provider: str, what: str) -> dict[str, Any]:
    """Parse ``data`` as a JSON object.

    Args:
        data: The JSON text or UTF-8 bytes.
        provider: The provider name, for the error.
        what: What the text is (``"response body"``, ``"event message_start"``), for the error.

    Raises:
        ResponseParseError: Not valid JSON, or not an object.
    """
    try:
        value = jsonbytes.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ResponseParseError(
            f"{what} is not valid JSON ({exc}): {snippet(data)!r}", provider=provider
        ) from exc
    if not isinstance(value, dict):
        raise ResponseParseError(
            f"{what} is a JSON {type(value).__name__}, not an object", provider=provider
        )
    return value


def need_obj(obj: Mapping[str, Any], key: str, provider: str, at: str) -> dict[str, Any]:
    """Return ``obj[key]`` when it is an object.

    Raises:
        ResponseParseError: Missing or not an object; the message names ``at.key``.
    """
    value = obj.get(key)
    if not isinstance(value, dict):
        raise ResponseParseError(f"{at}.{key} must be an object", provider=provider)
    return value


def need_list(obj: Mapping[str, Any], key: str, provider: str, at: str) -> list[Any]:
    """Return ``obj[key]`` when it is an array.

    Raises:
        ResponseParseError: Missing or not an array; the message names ``at.key``.
    """
    value = obj.get(key)
    if not isinstance(value, list):
        raise ResponseParseError(f"{at}.{key} must be an array", provider=provider)
    return value


def need_int(obj: Mapping[str, Any], key: str, provider: str, at: str) -> int:
    """Return ``obj[key]`` when it is a non-negative integer.

    Raises:
        ResponseParseError: Missing, not an integer, or negative.
    """
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ResponseParseError(
            f"{at}.{key} must be a non-negative integer, not {value!r}", provider=provider
        )
    return value


def opt_int(obj: Mapping[str, Any] | None, key: str, provider: str, at: str) -> int:
    """Return ``obj[key]`` as a token count, 0 when ``obj`` or the key is absent or ``null``.

    Raises:
        ResponseParseError: Present but not a non-negative integer.
    """
    if obj is None or obj.get(key) is None:
        return 0
    return need_int(obj, key, provider, at)


def header(headers: Mapping[str, str], name: str) -> str | None:
    """Return a header's value by case-insensitive name, else ``None``."""
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Return the seconds a response asks to wait, else ``None``.

    Reads ``retry-after-ms`` (milliseconds, sent by OpenAI and Anthropic), then ``retry-after``
    as seconds or as an HTTP date (RFC 9110 §10.2.3). Negative waits become 0.
    """
    millis = header(headers, "retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = header(headers, "retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # an HTTP date is rare; the module costs a third of `llmcore body`'s start

    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


def api_error(
    *,
    provider: str,
    status: int,
    body: bytes,
    headers: Mapping[str, str],
    error_type: str | None,
    message: str | None,
    request_id: str | None,
) -> APIStatusError:
    """Return the typed HTTP error, with a one-line message naming status, type and text."""
    text = message if message else snippet(body) or "(empty body)"
    kind = f" {error_type}" if error_type else ""
    rid = f" (request id {request_id})" if request_id else ""
    return APIStatusError(
        f"{provider} answered HTTP {status}{kind}: {text}{rid}",
        provider=provider,
        status=status,
        error_type=error_type,
        request_id=request_id,
        body=body,
        retry_after=parse_retry_after(headers),
    )
