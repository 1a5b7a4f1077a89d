"""The saved sessions of a project, newest first (``llmcore chat --list``, ``--session ID``).

:func:`list_sessions` reads every ``<12-hex-id>.json`` of the project's session folder
through :meth:`~llmcore.session.store.SessionStore.load` (so the S6 checks apply: no symlink
followed, bounded reads) and returns one :class:`SessionInfo` per readable file, most recently
active first, with the files it could not read. :func:`user_prompts` counts the turns of a
history, the number a session's turn counter continues from after a resume.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from llmcore._words import plural
from llmcore.errors import SessionError, SessionNotFoundError, SessionReadError
from llmcore.messages import Message, Text

from .paths import SESSION_ID_PATTERN
from .record import SessionRecord
from .resume import display_time
from .store import SessionStore, check_readable_folder, shown_name

__all__ = ["MAX_LISTED", "SessionInfo", "SessionListing", "list_sessions", "user_prompts"]

MAX_LISTED: Final = 1000
"""Most session files a listing reads (the first ids in sorted order; past them, one problem
line says how many were left out)."""
SUMMARY_CHARS: Final = 72
"""Longest summary line shown; a longer one ends with ``…``."""


def user_prompts(history: Sequence[Message]) -> int:
    """Return how many user turns ``history`` holds: user messages with text (not results)."""
    return sum(
        1 for m in history if m.role == "user" and any(isinstance(c, Text) for c in m.content)
    )


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1] + "…"


def _summary_line(record: SessionRecord) -> str:
    """The record's summary, else its first user prompt, else ``""`` — one line."""
    if record.summary:
        return _first_line(record.summary)
    for message in record.recent_messages:
        if message.role == "user":
            texts = [c.text for c in message.content if isinstance(c, Text)]
            if texts:
                return _first_line(" ".join(texts))
    return ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """One saved session, as ``llmcore chat --list`` shows it."""

    session_id: str
    """12 lowercase hex digits."""
    updated_at: str
    """When it was last saved (the stored UTC timestamp)."""
    messages: int
    """Messages kept for a resume (``recent_messages``)."""
    turns: int
    """User turns among them (:func:`user_prompts`)."""
    summary: str
    """The extracted summary's first line, else the first user prompt, else ``""``."""
    saved_ns: int = 0
    """The file's modification time in nanoseconds (orders saves within the same second)."""

    def line(self) -> str:
        """``<id>  <YYYY-MM-DD HH:MM UTC>  <n> messages  <summary>``."""
        count = plural(self.messages, "message")
        return f"{self.session_id}  {display_time(self.updated_at)}  {count:>12}  {self.summary}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionListing:
    """The readable sessions, newest first, and one line per file that could not be read."""

    sessions: tuple[SessionInfo, ...]
    """Most recently active first."""
    problems: tuple[str, ...] = ()
    """Why a session file was left out (it is kept as it is)."""

    def ids(self) -> tuple[str, ...]:
        """The session ids, newest first."""
        return tuple(info.session_id for info in self.sessions)

    def not_found(self, session_id: str, where: str) -> SessionNotFoundError:
        """Return the error for an id that is not among the sessions (it names the known ids)."""
        known = ", ".join(self.ids()) or "none"
        return SessionNotFoundError(
            f"no saved session {shown_name(session_id)}; known sessions (newest first): {known}",
            location=where,
        )


def list_sessions(store: SessionStore) -> SessionListing:
    """Return the project's saved sessions, most recently active first.

    A missing session folder is an empty listing. A file that cannot be read (corrupt, a
    symlink, of a newer schema) is one line of :attr:`SessionListing.problems`.

    Raises:
        SessionReadError: The session folder itself is a symlink or cannot be listed.
    """
    folder = store.paths.sessions
    check_readable_folder(folder)
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return SessionListing(sessions=())
    except OSError as exc:
        raise SessionReadError(f"cannot be listed ({exc.strerror})", location=str(folder)) from exc
    ids = [n[:-5] for n in names if n.endswith(".json") and SESSION_ID_PATTERN.fullmatch(n[:-5])]
    found: list[SessionInfo] = []
    problems: list[str] = []
    for session_id in ids[:MAX_LISTED]:
        try:
            loaded = store.load(session_id)
        except SessionError as exc:
            problems.append(str(exc))
            continue
        if loaded is None:  # removed since the folder was listed
            continue
        record = loaded.record
        try:  # saves within one second: the file's time orders them
            stamp = os.lstat(store.paths.session_file(session_id)).st_mtime_ns
        except OSError:
            stamp = 0
        found.append(
            SessionInfo(
                session_id=record.session_id,
                updated_at=record.updated_at,
                messages=len(record.recent_messages),
                turns=user_prompts(record.recent_messages),
                summary=_summary_line(record),
                saved_ns=stamp,
            )
        )
    if len(ids) > MAX_LISTED:
        problems.append(f"{len(ids) - MAX_LISTED} more session files not read")
    found.sort(key=lambda info: (info.updated_at, info.saved_ns), reverse=True)
    return SessionListing(sessions=tuple(found), problems=tuple(problems))
