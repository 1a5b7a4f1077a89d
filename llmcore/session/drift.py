"""The file manifest and drift detection (SPEC S1, S4, S6).

A session tracks a set of workspace files (the agent spec file and whatever the agent loop
tells :meth:`~llmcore.session.Session.track`). At each save, :func:`build_manifest` stores
``{relative path: SHA-256 hex}`` of those that exist; on resume, :func:`detect_drift` compares
each manifest entry with the file now: unchanged (counted), ``<file>: modified``,
``<file>: deleted``. Files that are not in the manifest are not detected (that would need a
scan of the whole workspace).

Safety (S6): a path is checked by :func:`~llmcore.session.paths.safe_relative` before any I/O
(absolute paths and ``..`` are skipped and reported as skipped); the file is then opened one
component at a time from the workspace folder with ``O_NOFOLLOW`` (``openat``), so no symlink
is ever followed — a file or folder replaced by a symlink reads as deleted — and nothing
outside the workspace is read.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from .paths import safe_relative

__all__ = ["Drift", "build_manifest", "detect_drift", "file_sha256", "read_inside"]

_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_CHUNK: Final = 1 << 20


def read_inside(workspace: Path, relative: PurePosixPath) -> bytes | None:
    """Return the bytes of regular file ``workspace/relative``, never following a symlink.

    Returns ``None`` when any component is missing, is a symlink, or is not a folder (last: not
    a regular file), or cannot be read.
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW
    try:
        folder = os.open(workspace, flags | _DIRECTORY)
    except OSError:
        return None
    try:
        for part in relative.parts[:-1]:
            inner = os.open(part, flags | _DIRECTORY, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = os.open(relative.parts[-1], flags | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return None
    finally:
        os.close(folder)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def file_sha256(workspace: Path, path: str) -> str | None:
    """Return the SHA-256 hex of workspace file ``path``, or ``None`` (unsafe, missing, link)."""
    relative = safe_relative(path)
    if relative is None:
        return None
    data = read_inside(workspace, relative)
    return None if data is None else hashlib.sha256(data).hexdigest()


def build_manifest(workspace: Path, paths: Iterable[str]) -> dict[str, str]:
    """Return ``{path: sha256}`` of the tracked files that exist now (unsafe paths skipped)."""
    manifest: dict[str, str] = {}
    for path in sorted(set(paths)):
        relative = safe_relative(path)
        if relative is None:
            continue
        digest = file_sha256(workspace, str(relative))
        if digest is not None:
            manifest[str(relative)] = digest
    return manifest


@dataclass(frozen=True, slots=True, kw_only=True)
class Drift:
    """What changed in the tracked files since the session was saved (SPEC S4)."""

    unchanged: int = 0
    """Files whose SHA-256 still matches."""
    modified: tuple[str, ...] = ()
    """Files that exist with another SHA-256, sorted."""
    deleted: tuple[str, ...] = ()
    """Files that are gone, unreadable, or now a symlink, sorted."""
    skipped: tuple[str, ...] = ()
    """Manifest paths refused before any I/O (absolute, ``..``), sorted (S6)."""

    def lines(self) -> list[str]:
        """Return the block's lines: the unchanged count, then each modified and deleted file."""
        out = []
        if self.unchanged:
            plural = "file" if self.unchanged == 1 else "files"
            out.append(f"{self.unchanged} tracked {plural} unchanged")
        out.extend(f"{path}: modified" for path in self.modified)
        out.extend(f"{path}: deleted" for path in self.deleted)
        return out


def detect_drift(workspace: Path, manifest: Mapping[str, str]) -> Drift:
    """Compare each manifest entry with the workspace now (SPEC S4, S6)."""
    unchanged = 0
    modified: list[str] = []
    deleted: list[str] = []
    skipped: list[str] = []
    for path, digest in sorted(manifest.items()):
        if safe_relative(path) is None:
            skipped.append(path)
            continue
        now = file_sha256(workspace, path)
        if now is None:
            deleted.append(path)
        elif now == digest:
            unchanged += 1
        else:
            modified.append(path)
    return Drift(
        unchanged=unchanged,
        modified=tuple(modified),
        deleted=tuple(deleted),
        skipped=tuple(skipped),
    )
