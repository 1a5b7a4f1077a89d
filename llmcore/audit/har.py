"""HTTP Archive (HAR 1.2) files as the auditor's input (SPEC V1, V6).

A HAR file (browser devtools' "Save all as HAR", Polly.js recordings of TypeScript clients) is
read like a cassette: one file is one scope, its ``log.entries`` in order, each entry's
``request`` (``method``, ``url``, ``postData.text``, ``headers``) and ``startedDateTime``, and
the recorded ``response.content.text`` (base64 when ``content.encoding`` says so) for the usage
and id (http://www.softwareishard.com/blog/har-12-spec/). :func:`as_cassette` turns the
document into the cassette form :mod:`llmcore.audit.inputs` reads, so the same entries are
skipped with the same reasons (not a POST to a model endpoint, no body).

Leaves out: reading the cassette form (:mod:`llmcore.audit.inputs`).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from llmcore.audit.report import AuditInputError

__all__ = ["as_cassette"]


def _headers(value: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for header in value if isinstance(value, list) else []:
        if isinstance(header, dict) and isinstance(header.get("name"), str):
            out.setdefault(header["name"], []).append(str(header.get("value", "")))
    return out


def _response_body(response: Any) -> Any:
    content = response.get("content") if isinstance(response, dict) else None
    if not isinstance(content, dict) or not isinstance(content.get("text"), str):
        return None
    text: str = content["text"]
    if content.get("encoding") == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return None
    return text


def _interaction(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict):
        raise AuditInputError("a HAR entry needs a 'request' object", location=where)
    request = entry["request"]
    post = request.get("postData")
    body = post.get("text") if isinstance(post, dict) else None
    return {
        "request": {
            "method": request.get("method"),
            "uri": request.get("url"),
            "body": body,
            "headers": _headers(request.get("headers")),
        },
        "response": {"body": _response_body(entry.get("response"))},
        "recorded_at": entry.get("startedDateTime"),
    }


def as_cassette(value: Any, file: str) -> dict[str, Any] | None:
    """The cassette document a parsed HAR file stands for, or ``None`` if it is not HAR.

    Raises:
        AuditInputError: An entry is not an object with a ``request`` (names its index).
    """
    log = value.get("log") if isinstance(value, dict) else None
    entries = log.get("entries") if isinstance(log, dict) else None
    if not isinstance(entries, list):
        return None
    return {
        "interactions": [
            _interaction(entry, f"{file}: log.entries[{index}]")
            for index, entry in enumerate(entries)
        ]
    }
