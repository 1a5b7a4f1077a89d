"""Sessions for terminal agents: persist, resume, reset and checkpoint (SPEC S1–S6).

A terminal agent keeps one session per project under
``<config>/<app>/projects/<name>_<hash8>/sessions/``; :class:`Session` is the object its loop
drives (see :mod:`.session`). Modules: :mod:`.paths` (layout and id/path checks),
:mod:`.record` (schema 3 and its codec), :mod:`.store` (atomic files, pointers, conflicts),
:mod:`.scrub` (secrets), :mod:`.drift` (manifest and drift), :mod:`.resume` (the S3 block),
:mod:`.summary` (the tail and the extraction call), :mod:`.checkpoints`, :mod:`.startup`,
:mod:`.listing` (the saved sessions, ``llmcore chat --list``).
The ``llmcore chat`` command is not here.
"""

from __future__ import annotations

from .checkpoints import CheckpointInfo, Checkpoints
from .drift import Drift, build_manifest, detect_drift
from .listing import SessionInfo, SessionListing, list_sessions, user_prompts
from .paths import SESSION_ID_PATTERN, ProjectPaths, check_session_id, safe_relative
from .record import SCHEMA_VERSION, SessionRecord, decode_record, encode_record
from .resume import build_resume_block
from .scrub import PATTERNS, find_secrets, scrub, scrub_text
from .session import RESUME_QUESTION, SaveOutcome, Session
from .store import SessionStore
from .summary import EXTRACTION_PROMPT, RECENT_MESSAGES, Extraction, extract

__all__ = [
    "EXTRACTION_PROMPT",
    "PATTERNS",
    "RECENT_MESSAGES",
    "RESUME_QUESTION",
    "SCHEMA_VERSION",
    "SESSION_ID_PATTERN",
    "CheckpointInfo",
    "Checkpoints",
    "Drift",
    "Extraction",
    "ProjectPaths",
    "SaveOutcome",
    "Session",
    "SessionInfo",
    "SessionListing",
    "SessionRecord",
    "SessionStore",
    "build_manifest",
    "build_resume_block",
    "check_session_id",
    "decode_record",
    "detect_drift",
    "encode_record",
    "extract",
    "find_secrets",
    "list_sessions",
    "safe_relative",
    "scrub",
    "scrub_text",
    "user_prompts",
]
