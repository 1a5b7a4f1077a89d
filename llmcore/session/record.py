"""The session file, schema version 3: the value and its JSON codec (SPEC S1).

Fields, exactly S1: ``schema_version`` (3), ``session_id`` (12 hex), ``created_at`` and
``updated_at`` (UTC, ``YYYY-MM-DDTHH:MM:SSZ``), ``agent_spec_path`` (workspace-relative or
``null``), ``file_manifest`` {relative path: SHA-256 hex}, ``summary`` (string or ``null``),
``decisions`` [string], ``recent_messages`` (A3 messages: the compaction tail),
``compacted_history_summary`` (string or ``null``), ``checkpoint_count`` (the number of the
last checkpoint written; informational), ``phase`` (``design`` / ``code`` / ``deploy`` /
``null``).

Images are never written into a session file: an image in ``recent_messages`` is stored as an
``imageOmitted`` block (M3), so a resumed history holds the placeholder. Encoding sorts keys
(2-space indent) after passing every string through :func:`~llmcore.session.scrub.scrub`.
Decoding refuses anything else — unknown or missing keys, wrong types, a bad id, a newer
schema — with :class:`~llmcore.errors.SessionReadError`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

from llmcore import jsonbytes
from llmcore.blocks import decode_message, encode_message
from llmcore.errors import LLMCoreError, SessionIdError, SessionReadError
from llmcore.messages import Image, Message, MessageContent, Text

from .paths import check_session_id
from .scrub import scrub

__all__ = [
    "PHASES",
    "SCHEMA_VERSION",
    "Phase",
    "SessionRecord",
    "decode_record",
    "encode_record",
    "format_time",
    "parse_time",
]

SCHEMA_VERSION: Final = 3
"""The session file's ``schema_version``."""
PHASES: Final = ("design", "code", "deploy")
"""The values of ``phase`` besides ``null``."""
Phase = Literal["design", "code", "deploy"]
_TIME: Final = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
_SHA: Final = re.compile(r"[0-9a-f]{64}")
_KEYS: Final = frozenset(
    {
        "schema_version",
        "session_id",
        "created_at",
        "updated_at",
        "agent_spec_path",
        "file_manifest",
        "summary",
        "decisions",
        "recent_messages",
        "compacted_history_summary",
        "checkpoint_count",
        "phase",
    }
)


def format_time(moment: datetime) -> str:
    """Return ``moment`` in UTC as ``YYYY-MM-DDTHH:MM:SSZ``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    """Read a :func:`format_time` string back (UTC)."""
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecord:
    """One session as its file stores it (SPEC S1)."""

    session_id: str
    """12 lowercase hex digits."""
    created_at: str
    """When the session started (:func:`format_time`)."""
    updated_at: str
    """When it was last saved."""
    agent_spec_path: str | None = None
    """The agent specification file, workspace-relative, or ``None``."""
    file_manifest: tuple[tuple[str, str], ...] = ()
    """(relative path, SHA-256 hex) of each tracked file, sorted by path."""
    summary: str | None = None
    """The model-extracted narrative summary, or ``None``."""
    decisions: tuple[str, ...] = ()
    """The key decisions the model extracted."""
    recent_messages: tuple[Message, ...] = ()
    """The compaction tail: the history a resume rebuilds (after the summary, if any)."""
    compacted_history_summary: str | None = None
    """The summary of the older, compacted messages, or ``None``."""
    checkpoint_count: int = 0
    """The number of the last checkpoint written (informational)."""
    phase: Phase | None = None
    """The conversation phase, or ``None``."""
    schema_version: int = field(default=SCHEMA_VERSION)
    """Always :data:`SCHEMA_VERSION` when written."""

    @property
    def manifest(self) -> dict[str, str]:
        """The file manifest as a dict."""
        return dict(self.file_manifest)


def _omitted(image: Image) -> dict[str, Any]:
    return {"type": "imageOmitted", "mimeType": image.mime_type}


def encode_record(record: SessionRecord, environ: Mapping[str, str] | None = None) -> bytes:
    """Return the file bytes of ``record``: scrubbed, keys sorted, 2-space indent, final newline."""
    check_session_id(record.session_id)
    value = {
        "schema_version": SCHEMA_VERSION,
        "session_id": record.session_id,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "agent_spec_path": record.agent_spec_path,
        "file_manifest": dict(record.file_manifest),
        "summary": record.summary,
        "decisions": list(record.decisions),
        "recent_messages": [encode_message(m, image=_omitted) for m in record.recent_messages],
        "compacted_history_summary": record.compacted_history_summary,
        "checkpoint_count": record.checkpoint_count,
        "phase": record.phase,
    }
    return jsonbytes.dumps_sorted(scrub(value, environ), indent=2) + b"\n"


def _fail(message: str, where: str) -> SessionReadError:
    return SessionReadError(message, location=where)


def _expect(obj: Mapping[str, Any], key: str, kinds: tuple[type, ...], where: str) -> Any:
    value = obj[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise _fail(f"wrong type at {key!r}", f"{where}: $.{key}")
    return value


def _no_image(block: dict[str, Any], at: str) -> MessageContent:
    return Text.omitted_image(str(block.get("mimeType", "application/octet-stream")))


def _check_top(obj: Any, where: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise _fail("not a JSON object", where)
    version = obj.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        raise _fail(f"schema_version {version} is newer than this version reads (3)", where)
    if version != SCHEMA_VERSION:
        raise _fail(f"schema_version {version!r} cannot be read (expected 3)", where)
    if set(obj) != _KEYS:
        odd = sorted(set(obj) ^ _KEYS)
        raise _fail(f"unknown or missing keys: {', '.join(odd)}", where)
    return obj


def _manifest(obj: dict[str, Any], where: str) -> tuple[tuple[str, str], ...]:
    manifest = _expect(obj, "file_manifest", (dict,), where)
    for path, digest in manifest.items():
        if not isinstance(digest, str) or not _SHA.fullmatch(digest):
            raise _fail(f"not a SHA-256 for {path!r}", f"{where}: $.file_manifest")
    return tuple(sorted(manifest.items()))


def _strings(obj: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    items = _expect(obj, key, (list,), where)
    if not all(isinstance(item, str) for item in items):
        raise _fail(f"expected strings in {key!r}", f"{where}: $.{key}")
    return tuple(items)


def _times(obj: dict[str, Any], where: str) -> tuple[str, str]:
    times = []
    for key in ("created_at", "updated_at"):
        value = _expect(obj, key, (str,), where)
        if not _TIME.fullmatch(value):
            raise _fail(f"{key} is not YYYY-MM-DDTHH:MM:SSZ", f"{where}: $.{key}")
        times.append(value)
    return times[0], times[1]


def _messages(obj: dict[str, Any], where: str) -> tuple[Message, ...]:
    raw = _expect(obj, "recent_messages", (list,), where)
    try:
        return tuple(
            decode_message(m, f"$.recent_messages[{i}]", _no_image) for i, m in enumerate(raw)
        )
    except LLMCoreError as exc:
        raise _fail(exc.message, f"{where}: {exc.location}") from exc


def decode_record(data: bytes, where: str = "session file") -> SessionRecord:
    """Read a session file's bytes.

    Raises:
        SessionReadError: Not JSON, nested deeper than the parser reads (about 1,000 levels),
            a newer or unknown ``schema_version``, an unknown or missing key, a wrong type, or
            a session id that is not 12 hex digits.
    """
    try:
        obj = _check_top(jsonbytes.loads(data, finite=True, unique_keys=True), where)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _fail(f"not valid JSON ({exc})", where) from exc
    except RecursionError as exc:
        raise _fail("nested too deeply to be read", where) from exc
    try:
        session_id = check_session_id(obj["session_id"], f"{where}: $.session_id")
    except SessionIdError as exc:
        raise _fail(exc.message, exc.location or where) from exc
    created, updated = _times(obj, where)
    phase = obj["phase"]
    if phase is not None and phase not in PHASES:
        raise _fail(f"unknown phase {phase!r}", f"{where}: $.phase")
    count = _expect(obj, "checkpoint_count", (int,), where)
    return SessionRecord(
        session_id=session_id,
        created_at=created,
        updated_at=updated,
        agent_spec_path=_expect(obj, "agent_spec_path", (str, type(None)), where),
        file_manifest=_manifest(obj, where),
        summary=_expect(obj, "summary", (str, type(None)), where),
        decisions=_strings(obj, "decisions", where),
        recent_messages=_messages(obj, where),
        compacted_history_summary=_expect(
            obj, "compacted_history_summary", (str, type(None)), where
        ),
        checkpoint_count=max(0, count),
        phase=phase,
    )
