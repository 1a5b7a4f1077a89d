"""JSONL inputs for the auditor: one body per line, or an envelope (SPEC V1).

Read through :mod:`llmcore.audit.inputs`, which re-exports :data:`ENVELOPE_KEYS` and
:func:`envelope_key`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.audit._values import _kind, _timestamp, _utf8
from llmcore.audit.live import record_uri
from llmcore.audit.report import AuditInput, AuditInputError
from llmcore.audit.usage import usage_of
from llmcore.errors import EncodingError

__all__ = ["fast_loads", "jsonl_line"]

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a core dependency with a fallback
    _orjson = None  # type: ignore[assignment]


def _jsonl(path: Path, data: bytes) -> list[AuditInput]:
    out = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        line = line.removesuffix(b"\r")
        if line.strip():
            out.append(jsonl_line(line, str(path), number))
    return out


ENVELOPE_KEYS: Final = frozenset(
    {"body", "conversation", "status", "usage", "time", "provider", "path", "response_id"}
)
"""A JSONL line that is an object with a ``"body"`` is an envelope, read by these fields:

* ``body`` (required): the request body as a JSON string (its exact bytes) or object (written
  back compactly, in its key order);
* ``conversation``: a string, the line's conversation key (:attr:`AuditInput.conversation_key`);
* ``status``: the HTTP status the server answered (an integer), or ``null`` for a request that
  got no response; a status ≥ 400 or ``null`` makes the request :attr:`Verdict.REJECTED`;
* ``usage``: the response's ``usage`` (or Gemini ``usageMetadata``) object in its provider's
  shape (:func:`llmcore.audit.usage.usage_of`);
* ``time``: when it was sent, ISO 8601 text or seconds since the epoch (enables TTLs);
* ``path`` and ``provider``: the request path and the provider name, which together decide the
  wire shape (:attr:`AuditInput.uri`), as the record of ``llmcore proxy --record`` and
  ``llmcore emulate --record`` writes them (:mod:`llmcore.audit.live`);
* ``response_id``: the answer's id, a string (OpenAI Responses' ``resp_…``): a later line whose
  body's ``previous_response_id`` names it continues this line's conversation, as for a
  cassette's recorded response id.

No request body of any shape has a top-level ``body``, so the line is never read as one; a
line with ``body`` and any other key is refused (ambiguous), naming ``file:line``."""


def envelope_key(line: bytes) -> str | None:
    """The ``conversation`` of a JSONL line that is an envelope, else ``None``, without the rest.

    The key :func:`read_path` gives the line's input (:attr:`AuditInput.conversation_key`) for
    every line it reads without error, found by one parse (orjson where it reads the line,
    else :func:`llmcore.jsonbytes.loads`); ``llmcore audit --jobs`` partitions a keyed log by
    it. Never raises: a line :func:`read_path` refuses gets ``None`` (its error comes from the
    worker that reads it).
    """
    if b'"body"' not in line:
        return None
    try:
        value = fast_loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "body" not in value:
        return None
    key = value.get("conversation")
    return key if isinstance(key, str) else None


def fast_loads(line: bytes) -> Any:
    """``line``'s JSON value, read by orjson where it can.

    Where orjson refuses the line (a lone surrogate, an integer past 64 bits),
    :func:`llmcore.jsonbytes.loads` reads it and decides.

    Raises:
        ValueError: The line is not JSON, or not UTF-8 (:func:`llmcore.jsonbytes.loads`).
        RecursionError: It nests deeper than the interpreter's recursion limit.
    """
    if _orjson is not None:
        try:
            return _orjson.loads(line)
        except _orjson.JSONDecodeError:
            pass  # a lone surrogate, a huge integer: the strict reader decides
    return jsonbytes.loads(line)


def jsonl_line(line: bytes, file: str, number: int) -> AuditInput:
    """One JSONL line: a request body as written, or an envelope (:data:`ENVELOPE_KEYS`).

    Raises:
        AuditInputError: A line with ``body`` and a key that is not an envelope field, or an
            envelope field of the wrong type (names ``file:line``).
    """
    plain = AuditInput(body=line, source=f"{file}:{number}", file=file, position=number)
    if b'"body"' not in line:
        return plain
    try:
        value = jsonbytes.loads(line)
    except (ValueError, RecursionError):
        return plain  # the auditor names the bad JSON
    if not isinstance(value, dict) or "body" not in value:
        return plain
    where = f"{file}:{number}"
    other = [k for k in value if k not in ENVELOPE_KEYS]
    if other:
        raise AuditInputError(
            f"ambiguous line: 'body' beside {', '.join(repr(k) for k in other[:3])}: an "
            f"envelope holds only {', '.join(sorted(ENVELOPE_KEYS))}, and no request body has "
            "a top-level 'body'",
            location=where,
        )
    return _envelope(plain, value, where)


def _envelope(plain: AuditInput, value: dict[str, Any], where: str) -> AuditInput:
    """Read an envelope's fields (:data:`ENVELOPE_KEYS`) into the input."""
    body, key = value["body"], value.get("conversation")
    if key is not None and not isinstance(key, str):
        raise AuditInputError(
            f"envelope 'conversation' is {_kind(key)}, not a string", location=where
        )
    if isinstance(body, str):
        data = _utf8(body, f"{where}: body")
    elif isinstance(body, dict):
        try:
            data = jsonbytes.dumps(body)
        except EncodingError as exc:
            raise AuditInputError(f"cannot write 'body': {exc.message}", location=where) from None
    else:
        raise AuditInputError(
            f"envelope 'body' is {_kind(body)}, not a string or object", location=where
        )
    status = value.get("status", 0)
    if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
        raise AuditInputError(
            f"envelope 'status' is {_kind(status)}, not an integer or null", location=where
        )
    usage = None
    if value.get("usage") is not None:  # null: the answer carried none
        usage = usage_of(value["usage"])
        if usage is None:
            raise AuditInputError(
                "envelope 'usage' is not a usage object of a known provider shape",
                location=where,
            )
    path, provider = value.get("path"), value.get("provider")
    if path is not None and not isinstance(path, str):
        raise AuditInputError(f"envelope 'path' is {_kind(path)}, not a string", location=where)
    provider = provider if isinstance(provider, str) else None
    response_id = value.get("response_id")
    if response_id is not None and not isinstance(response_id, str):
        raise AuditInputError(
            f"envelope 'response_id' is {_kind(response_id)}, not a string", location=where
        )
    return replace(
        plain,
        body=data,
        conversation_key=key,
        status=status or None,
        answered="status" not in value or status is not None,
        usage=usage,
        timestamp=_timestamp(value.get("time"), f"{where}: time"),
        uri=record_uri(provider, path) if path else None,
        response_id=response_id,
    )
