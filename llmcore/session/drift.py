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
outside the workspace is read. A tracked file is hashed in a stream (constant memory; one over
64 MiB by its size, modification time and first and last MiB: constant time); a FIFO, device
or socket in its place reads as deleted and is never opened (:mod:`llmcore.safeio`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Final

from llmcore.safeio import read_regular, sha256_regular

from .paths import safe_relative

__all__ = ["Drift", "build_manifest", "detect_drift", "file_sha256", "open_folder", "read_inside"]

_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_FOLDER_FLAGS: Final = os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW | _DIRECTORY


def open_folder(workspace: Path, parts: tuple[str, ...]) -> int:
    """Open folder ``workspace/<parts…>`` one component at a time, following no symlink.

    Returns:
        The folder's descriptor (the caller closes it).

    Raises:
        OSError: A component is missing, a symlink (``ELOOP``) or not a folder (``ENOTDIR``).
        ValueError: A component holds a NUL or cannot be encoded (a lone surrogate).
    """
    folder = os.open(workspace, _FOLDER_FLAGS)
    try:
        for part in parts:
            inner = os.open(part, _FOLDER_FLAGS, dir_fd=folder)
            os.close(folder)
            folder = inner
    except BaseException:
        os.close(folder)
        raise
    return folder


def read_inside(workspace: Path, relative: PurePosixPath, *, limit: int) -> bytes:
    """Return the bytes of regular file ``workspace/relative``, never following a symlink.

    The file is read by :func:`llmcore.safeio.read_regular` with ``single_link``: a FIFO,
    device or socket is refused without being opened, a file over ``limit`` bytes before any
    byte is read, and a file with another hard link (which may be outside the workspace).

    Raises:
        FileRefusedError: Not a regular file, over ``limit``, or hard-linked.
        OSError: A component is missing, a symlink, not a folder, or unreadable.
        ValueError: A component holds a NUL or cannot be encoded.
    """
    folder = open_folder(workspace, relative.parts[:-1])
    try:
        return read_regular(
            relative.parts[-1], limit=limit, dir_fd=folder, name=str(relative), single_link=True
        )
    finally:
        os.close(folder)


def file_sha256(workspace: Path, path: str) -> str | None:
    """Return the SHA-256 hex of workspace file ``path``, or ``None`` (unsafe, missing, link).

    The file is hashed in 1 MiB chunks (:func:`llmcore.safeio.sha256_regular`): memory stays
    constant whatever its size, and a file over :data:`~llmcore.safeio.MAX_HASHED` is hashed by
    its size, modification time and ends, so a save never reads gigabytes. A FIFO, device or
    socket is ``None`` without being opened. A hard-linked file is hashed: only its digest is
    kept, never its bytes, and it is not written.
    """
    relative = safe_relative(path)
    if relative is None:
        return None
    try:
        folder = open_folder(workspace, relative.parts[:-1])
    except (OSError, ValueError):
        return None
    try:
        return sha256_regular(relative.parts[-1], dir_fd=folder, name=str(relative))
    except (OSError, ValueError):
        return None
    finally:
        os.close(folder)


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
