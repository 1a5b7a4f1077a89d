"""Where sessions live, and the checks made before any path is built (SPEC S1, S6).

Layout::

    <config>/<app>/projects/<name>_<hash8>/sessions/
        <12-hex-id>.json          one file per session
        <12-hex-id>.checkpoints/  that session's checkpoints (llmcore.session.checkpoints)
        active_<pid>.json         pointer: the session of terminal process <pid>

``<config>`` is the platform's user configuration folder as :mod:`platformdirs` gives it
(``$XDG_CONFIG_HOME`` or ``~/.config`` on Linux, ``~/Library/Application Support`` on macOS,
``%APPDATA%`` on Windows), or the caller's override. ``<name>`` is the workspace folder's name
with every character outside ``[A-Za-z0-9._-]`` replaced by ``_`` (at most 40 characters);
``<hash8>`` is the first 8 hex digits of the SHA-256 of the resolved workspace path, so two
folders with the same name never share sessions.

Session ids must match :data:`SESSION_ID_PATTERN` before a path is built from them
(:func:`check_session_id`); manifest paths are checked by :func:`safe_relative` (relative, no
``..``, no NUL) before any I/O. It leaves out reading and writing (:mod:`.store`).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

import platformdirs

from llmcore.errors import SessionIdError

__all__ = [
    "SESSION_ID_PATTERN",
    "ProjectPaths",
    "check_session_id",
    "config_root",
    "new_session_id",
    "project_dir_name",
    "safe_relative",
]

SESSION_ID_PATTERN: Final = re.compile(r"[a-f0-9]{12}")
"""A session id: 12 lowercase hex digits (``^[a-f0-9]{12}$``, matched in full)."""
_NAME_CHARS: Final = re.compile(r"[^A-Za-z0-9._-]")
_NAME_LENGTH: Final = 40


def check_session_id(value: object, where: str = "session id") -> str:
    """Return ``value`` if it is a session id, else raise (SPEC S6).

    Raises:
        SessionIdError: ``value`` is not a string of exactly 12 lowercase hex digits; the
            message quotes at most 40 characters of it.
    """
    if isinstance(value, str) and SESSION_ID_PATTERN.fullmatch(value):
        return value
    shown = repr(value)[:40]
    raise SessionIdError(
        f"refused session id {shown}: it must be 12 lowercase hex digits", location=where
    )


def new_session_id(token: Callable[[int], str] = secrets.token_hex) -> str:
    """Return a fresh random session id (``token`` is injected by tests)."""
    return check_session_id(token(6), "new session id")


def config_root(app: str, override: Path | None = None) -> Path:
    """Return ``<config>/<app>``: the override, or the platform's user config folder."""
    if not app or _NAME_CHARS.search(app) or app in (".", ".."):
        raise SessionIdError(f"refused app name {app!r}", location="app")
    base = override if override is not None else Path(platformdirs.user_config_dir())
    return base / app


def project_dir_name(workspace: Path) -> str:
    """Return ``<name>_<hash8>`` for ``workspace`` (resolved first)."""
    resolved = workspace.resolve()
    name = _NAME_CHARS.sub("_", resolved.name)[:_NAME_LENGTH].strip(".") or "workspace"
    digest = hashlib.sha256(str(resolved).encode("utf-8", "surrogateescape")).hexdigest()
    return f"{name}_{digest[:8]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectPaths:
    """The session folder of one project and the names inside it."""

    sessions: Path
    """``<config>/<app>/projects/<name>_<hash8>/sessions``."""

    @classmethod
    def for_workspace(
        cls, workspace: Path, *, app: str, config: Path | None = None
    ) -> ProjectPaths:
        """Return the paths of ``workspace``'s project under ``config`` (default: platform)."""
        root = config_root(app, config)
        return cls(sessions=root / "projects" / project_dir_name(workspace) / "sessions")

    def session_file(self, session_id: str) -> Path:
        """Return ``<id>.json``; the id is checked first (S6)."""
        return self.sessions / f"{check_session_id(session_id)}.json"

    def checkpoints_dir(self, session_id: str) -> Path:
        """Return ``<id>.checkpoints``; the id is checked first (S6)."""
        return self.sessions / f"{check_session_id(session_id)}.checkpoints"

    def pointer_file(self, pid: int) -> Path:
        """Return ``active_<pid>.json``."""
        if isinstance(pid, bool) or not isinstance(pid, int) or pid < 0:
            raise SessionIdError(f"refused process id {pid!r}", location="pid")
        return self.sessions / f"active_{pid}.json"


def safe_relative(path: str) -> PurePosixPath | None:
    """Return ``path`` as a workspace-relative path, or ``None`` if it may leave the workspace.

    Refused (``None``): empty, absolute (``/x``, ``C:x``), holding a ``..``
    component, a backslash or a NUL. ``.`` components are dropped. Nothing is read: symlinks
    are handled when the file is opened (:func:`llmcore.session.drift.read_inside`).
    """
    if not path or "\x00" in path or "\\" in path or re.match(r"[A-Za-z]:", path):
        return None
    pure = PurePosixPath(path)
    if pure.is_absolute() or any(part == ".." for part in pure.parts):
        return None
    parts = [p for p in pure.parts if p != "."]
    return PurePosixPath(*parts) if parts else None
