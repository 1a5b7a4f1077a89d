"""Secret scrubbing: nothing that looks like an API key or token is written (SPEC S1, S6).

Every string of a session file (keys and values, messages included) passes :func:`scrub`
before it is encoded, so a key pasted into the chat, printed by a tool or held in a tool's
arguments never reaches the disk. Two layers:

* the **environment**: the value of every environment variable whose name ends in
  ``API_KEY``, ``_KEY``, ``_TOKEN``, ``_SECRET`` or ``PASSWORD`` (8 characters or longer) is
  replaced wherever it occurs, whatever it looks like — so the provider key the agent runs
  with is never written;
* the **patterns** of :data:`PATTERNS`, one per kind of credential, each replaced by
  ``[REDACTED:<name>]``.

A maintained detector such as ``detect-secrets`` scans files line by line for review and
reports candidates with entropy heuristics; a writer must instead replace exact spans, so this
module keeps its own documented list, each pattern with its own test
(``tests/session/test_scrub.py``). Secrets in shapes not listed (a bare random string with no
prefix, outside an assignment) are not recognized.

Bytes stored as base64 — the value of any object key ending in ``Base64`` (``contentBase64``,
``argumentsBase64``: tool data that is not UTF-8) — are decoded and scanned too: the bytes are
read as UTF-8 with undecodable bytes kept as they are (``surrogateescape``), scrubbed, and
written back as base64 only if something was replaced, so the other bytes stay exact. A value
that is not valid base64 is scrubbed as text. The same scrub serves the chat's prompt history
(:func:`scrub_text`, one line at a time).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "ENV_NAME_SUFFIXES",
    "PATTERNS",
    "find_secrets",
    "scrub",
    "scrub_base64",
    "scrub_text",
]

PATTERNS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    (
        "private-key",
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    ),
    ("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}")),
    ("openrouter-key", re.compile(r"sk-or-v1-[A-Za-z0-9]{20,}")),
    ("openai-key", re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("google-api-key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("huggingface-token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer-token", re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/-]{16,}=*")),
    (
        "secret-assignment",
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(?:[A-Za-z0-9_]*(?:api[_-]?key|secret|token|passw(?:or)?d))"
            r"[\"']?\s*[:=]\s*[\"']?"
            r"(?!\[REDACTED)(?P<value>[^\s\"',;]{8,})"
        ),
    ),
)
"""(name, pattern) of each credential shape replaced by ``[REDACTED:<name>]``.

``secret-assignment`` replaces only the value of ``api_key=…``, ``"token": "…"``,
``password: …`` and the like (8 characters or more), keeping the name for context.
"""

ENV_NAME_SUFFIXES: Final = ("API_KEY", "_KEY", "_TOKEN", "_SECRET", "PASSWORD")
"""Environment variables whose values are scrubbed wherever they occur."""
_ENV_MIN: Final = 8
_PASSES: Final = 8


def _env_secrets(environ: Mapping[str, str]) -> list[str]:
    found = {
        value
        for name, value in environ.items()
        if name.upper().endswith(ENV_NAME_SUFFIXES) and len(value) >= _ENV_MIN
    }
    return sorted(found, key=len, reverse=True)


def _replace(name: str, match: re.Match[str]) -> str:
    if "value" in match.groupdict() and match.group("value") is not None:
        start = match.start("value") - match.start()
        return match.group(0)[:start] + f"[REDACTED:{name}]"
    return f"[REDACTED:{name}]"


def scrub_text(text: str, environ: Mapping[str, str] | None = None) -> str:
    """Return ``text`` with environment secrets and :data:`PATTERNS` replaced."""
    for value in _env_secrets(os.environ if environ is None else environ):
        text = text.replace(value, "[REDACTED:environment]")
    for _ in range(_PASSES):  # a redaction can expose a neighbour (a new word boundary)
        before = text
        for name, pattern in PATTERNS:
            text = pattern.sub(lambda m, n=name: _replace(n, m), text)  # type: ignore[misc]
        if text == before:
            break
    return text


def scrub_base64(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Return base64 ``value`` with the secrets in the bytes it holds replaced (module doc).

    Bytes with nothing to replace give ``value`` back unchanged; a value that is not base64 is
    scrubbed as text.
    """
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return scrub_text(value, environ)
    text = data.decode("utf-8", "surrogateescape")
    clean = scrub_text(text, environ)
    if clean == text:
        return value
    return base64.b64encode(clean.encode("utf-8", "surrogateescape")).decode("ascii")


def _scrub_member(key: str, value: Any, env: Mapping[str, str]) -> Any:
    if isinstance(value, str) and key.endswith("Base64"):
        return scrub_base64(value, env)
    return scrub(value, env)


def scrub(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """Return a JSON value with every string (object keys too) passed through :func:`scrub_text`.

    The string value of a key ending in ``Base64`` goes through :func:`scrub_base64`.
    """
    env = os.environ if environ is None else environ
    if isinstance(value, str):
        return scrub_text(value, env)
    if isinstance(value, dict):
        return {scrub_text(k, env): _scrub_member(k, v, env) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, env) for v in value]
    return value


def find_secrets(text: str) -> list[str]:
    """Return the names of the :data:`PATTERNS` found in ``text`` (a redaction is no hit)."""
    hits = []
    for name, pattern in PATTERNS:
        for match in pattern.finditer(text):
            if "REDACTED" not in match.group(0):
                hits.append(name)
                break
    return hits
