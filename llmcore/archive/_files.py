"""The archive folder's files: paths, checks, atomic durable writes, undo and cleanup (A5, A9).

:class:`_ArchiveFiles` is the base of :class:`~llmcore.archive.store.ArchiveStore`: every step
that touches a file of the folder, through its :class:`~llmcore.archive.fs.FileSystem`.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from llmcore.errors import ArchiveWriteError
from llmcore.messages import Image
from llmcore.safeio import file_kind

from ._document import Document
from .format import IMAGES_DIR
from .fs import FileSystem
from .images import verified
from .lock import LOCK_FILE


@dataclass(slots=True)
class _Txn:
    """What one save created before its commit point, to undo on failure."""

    temps: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    dirs: list[Path] = field(default_factory=list)
    written: int = 0
    committing: bool = False
    """The rename of ``conversation.json`` was attempted."""
    committed_ino: int = -1
    """The inode of the file renamed to ``conversation.json`` (``-1``: none yet)."""
    unsynced: list[Path] = field(default_factory=list)
    """Images renamed into place whose fsync comes with the commit (see ``_write_file``)."""


_NUL = "the archive path contains a NUL byte, which no file system accepts"


_IMAGE_NAME: Final = re.compile(r"[0-9a-f]{64}\.(?:png|jpg|gif|webp|bin)")
"""An image file llmcore writes (A5): ``<sha256 lowercase hex>.<ext>``."""


_HEX64: Final = re.compile(rb"[0-9a-f]{64}")
"""Every hash a ``conversation.json`` may name (a superset of its image references)."""


_TEMP_SUFFIX: Final = r"\.[0-9]+-[0-9a-f]+\.tmp"


_DOC_TEMP: Final = re.compile(r"\.conversation\.json" + _TEMP_SUFFIX)
"""A temporary ``conversation.json`` of an interrupted save (see ``_write_file``)."""


_IMAGE_TEMP: Final = re.compile(r"\.[0-9a-f]{64}\.(?:png|jpg|gif|webp|bin)" + _TEMP_SUFFIX)
"""A temporary image file of an interrupted save, in ``images/``."""


def _folder_problem(info: os.stat_result | None) -> str | None:
    """What makes the archive folder unusable, or ``None`` (absent or a real directory)."""
    if info is None or stat.S_ISDIR(info.st_mode):
        return None
    if stat.S_ISLNK(info.st_mode):
        return "the archive folder is a symbolic link; llmcore does not follow links"
    return "the archive folder is not a folder (a file is in its place)"


class _Gone(Exception):
    """The archive folder vanished under a save before its lock was taken."""


def _quietly(call: Callable[[Path], None], path: Path) -> None:
    try:
        call(path)
    except OSError:
        pass


def _is_owned_image(name: str, wanted: Collection[str]) -> bool:
    """Whether ``images/<name>`` is llmcore's to remove: a temporary or an unwanted image."""
    if _IMAGE_TEMP.fullmatch(name):
        return True
    return _IMAGE_NAME.fullmatch(name) is not None and name not in wanted


_UNKNOWN: Final = (-1, -1, -1)
"""The signature of a file this store has not written or verified (no inode matches it)."""


def _signature(info: os.stat_result) -> tuple[int, int, int]:
    return (info.st_size, info.st_mtime_ns, info.st_ino)


class _ArchiveFiles:
    """The files of one archive folder: its paths, checks, and the steps of a save or deletion.

    The base of :class:`~llmcore.archive.store.ArchiveStore`, which sets these attributes.
    """

    folder: Path
    fs: FileSystem
    _good: dict[str, tuple[int, int, int]]
    _paths: dict[str, Path]

    if TYPE_CHECKING:  # the paths, as ArchiveStore gives them

        @property
        def conversation_file(self) -> Path: ...

        @property
        def images_dir(self) -> Path: ...

        @property
        def lock_file(self) -> Path: ...

    def _images_dir_problem(self) -> str | None:
        """Why ``images`` cannot be read from: ``None`` for a real folder or none at all."""
        info = self.fs.lstat(self.images_dir)
        if info is None or stat.S_ISDIR(info.st_mode):
            return None
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
        return f"{self.images_dir}: images is {kind}; llmcore does not follow links"

    def _verified_file(self, name: str, sha256: str) -> bytes | None | OSError:
        """Read ``images/<name>``: its bytes if they match, ``None`` if gone or wrong.

        An ``OSError`` other than "no such file" (or a symlink in its place) is returned, not
        raised: the file may be fine and must not be taken as gone.
        """
        path = self.images_dir / name
        try:
            info = self.fs.lstat(path)
            if info is None or not stat.S_ISREG(info.st_mode):
                return None
            data = self.fs.read_bytes(path)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                return None  # removed, or replaced by a symlink, while we looked
            return exc
        if not verified(data, sha256):
            return None
        self._good[name] = _signature(info)
        return data

    def _write_error(self, exc: OSError, *, unchanged: bool = True) -> ArchiveWriteError:
        outcome = (
            "the previous archive is unchanged"
            if unchanged
            else "check the folder: its conversation.json could not be confirmed unchanged"
        )
        return ArchiveWriteError(
            f"could not save the conversation ({exc.strerror or exc}); {outcome}",
            location=str(self.folder),
        )

    def _refuse(self, what: str) -> ArchiveWriteError:
        return ArchiveWriteError(
            f"{what}; nothing was saved and nothing was changed", location=str(self.folder)
        )

    def _check_folder(self) -> None:
        """Refuse a folder that is a symlink or a file, or a path with a NUL byte."""
        if "\0" in str(self.folder):
            raise ArchiveWriteError(_NUL, location=repr(str(self.folder)))
        problem = _folder_problem(self.fs.lstat(self.folder))
        if problem is not None:
            raise self._refuse(problem)

    def _check_document(self) -> None:
        """Refuse a ``conversation.json`` that is a folder or a symlink (never replaced)."""
        info = self.fs.lstat(self.conversation_file)
        if info is None or stat.S_ISREG(info.st_mode):
            return
        if stat.S_ISLNK(info.st_mode):
            raise self._refuse(
                "conversation.json is a symbolic link; llmcore neither follows nor replaces links"
            )
        raise self._refuse(
            f"conversation.json is {file_kind(info.st_mode)} llmcore did not create; "
            "llmcore replaces only a regular file"
        )

    def _check_images_dir(self) -> None:
        """Refuse an archive with images when ``images`` is not a real folder (not followed)."""
        info = self.fs.lstat(self.images_dir)
        if info is not None and not stat.S_ISDIR(info.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
            raise self._refuse(f"images is {kind}; llmcore keeps images only in a real folder")

    def _current_bytes(self) -> bytes | None:
        """The bytes of ``conversation.json`` now; ``None`` if there is none.

        Raises:
            OSError: It exists but cannot be read (then a save cannot check for conflicts).
        """
        try:
            return self.fs.read_bytes(self.conversation_file)
        except FileNotFoundError:
            return None

    def _disk_is(self, data: bytes | Document | None) -> bool:
        """Whether ``conversation.json`` holds exactly ``data`` (``None``: no file); no raise."""
        try:
            disk = self._current_bytes()
        except OSError:
            return False
        return data.equals(disk) if isinstance(data, Document) else disk == data

    def _image_path(self, name: str) -> Path:
        """``images/<name>``, made once per name the latest save used (paths are slow to make)."""
        path = self._paths.get(name)
        if path is None:
            path = self._paths[name] = self.images_dir / name
        return path

    def _missing(
        self, files: tuple[tuple[str, Image], ...], listing: dict[str, int]
    ) -> list[tuple[str, Image]]:
        """The ``files`` to write: those not in ``images/`` or not matching their name.

        A file this store wrote or verified is taken as it is while the listing of ``images/``
        shows it as the same regular file (its inode), with no call; any other is checked by
        :meth:`_image_ok`.
        """
        good = self._good
        return [
            (name, image)
            for name, image in files
            if good.get(name, _UNKNOWN)[2] != listing.get(name, -2)  # -1 and -2: no inode
            and not self._image_ok(name, listing)
        ]

    def _image_ok(self, name: str, listing: dict[str, int]) -> bool:
        """Whether ``images/<name>``, not known by its inode, is intact: checked by its bytes.

        A file whose size, time and inode are those this store saw when it wrote or verified
        it is not read again.
        """
        if name not in listing:
            return False
        info = self.fs.lstat(self._image_path(name))
        if info is None or not stat.S_ISREG(info.st_mode):
            return False
        if self._good.get(name) == _signature(info):
            return True
        got = self._verified_file(name, name.split(".", 1)[0])
        return isinstance(got, bytes)  # unreadable now: rewritten from the bytes in memory

    def _leftovers(
        self, wanted: Collection[str], listing: dict[str, int] | None = None
    ) -> list[Path]:
        """Return the files llmcore created that a clean archive would not hold.

        Only temporary files of an interrupted save (by their name pattern) and image files
        named ``<sha256>.<ext>`` that ``wanted`` does not name; regular files only. Anything
        else in the folder is not llmcore's and is left alone. ``listing`` is ``images/`` as
        :meth:`FileSystem.regular_files` gave it (read now when ``None``).
        """
        out = [
            self.folder / name
            for name in self.fs.listdir(self.folder)
            if _DOC_TEMP.fullmatch(name) and self.fs.is_file(self.folder / name)
        ]
        if listing is None:
            listing = self.fs.regular_files(self.images_dir)
        unwanted = sorted(name for name in listing if name not in wanted)
        out.extend(self.images_dir / name for name in unwanted if _is_owned_image(name, wanted))
        return out

    def _make_folder(self, txn: _Txn) -> None:
        if not self.fs.is_dir(self.folder):
            try:
                self.fs.mkdir(self.folder)
            except FileExistsError:
                self._check_folder()  # another process made it (or a file or link appeared)
                return
            txn.dirs.append(self.folder)
            self.fs.fsync_dir(self.folder.parent)

    def _ensure_images_dir(self, txn: _Txn, *, images: bool) -> None:
        if images and not self.fs.is_dir(self.images_dir):
            self.fs.mkdir(self.images_dir)
            txn.dirs.append(self.images_dir)
            self.fs.fsync_dir(self.folder)

    def _write_images(self, txn: _Txn, missing: list[tuple[str, Image]]) -> None:
        for name, image in missing:
            target = self.images_dir / name
            existed = self.fs.lstat(target) is not None
            self._write_file(txn, target, image.data, durable=False)
            if not existed:
                txn.files.append(target)
            info = self.fs.lstat(target)
            if info is not None:
                self._good[name] = _signature(info)

    def _write_file(
        self,
        txn: _Txn,
        target: Path,
        data: bytes | Document,
        *,
        commit: bool = False,
        images: bool = False,
        durable: bool = True,
    ) -> None:
        """Write ``data`` to a temporary file beside ``target``, make it durable, rename it.

        ``commit`` marks the rename of ``conversation.json``: before it, every image renamed
        into place by this save (``durable`` off: its write-back only started, see
        :meth:`FileSystem.start_writeback`) is fsynced, then ``images/`` when ``images`` is set,
        so the images are durable before the commit point (A9). Those fsyncs come after the
        file's own, which on a journaling file system has already committed the journal with
        the images' data and renames, so there they only flush; one journal commit serves the
        images and the file.
        """
        temp = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        fd = self.fs.open_write(temp)
        txn.temps.append(temp)
        try:
            self.fs.write(fd, data.chunks if isinstance(data, Document) else data)
            if durable:
                self.fs.fsync(fd)
            else:
                self.fs.start_writeback(fd)
        finally:
            self.fs.close(fd)
        if commit:
            for image in txn.unsynced:
                self.fs.fsync_file(image)
        if images:
            self.fs.fsync_dir(self.images_dir)
        if commit:
            written = self.fs.lstat(temp)
            txn.committed_ino = -1 if written is None else written.st_ino
        txn.committing = commit
        self.fs.rename(temp, target)
        txn.temps.remove(temp)
        txn.written += len(data)
        if not durable:
            txn.unsynced.append(target)

    def _undo(self, txn: _Txn) -> None:
        """Best effort: remove what a failed save created; what stays is cleaned next time.

        Never removes an image the ``conversation.json`` on disk refers to (nor any image when
        that file cannot be read).
        """
        referenced = self._disk_references()
        for path in txn.temps:
            _quietly(self.fs.unlink, path)
        for path in txn.files:
            if referenced is not None and path.name.split(".", 1)[0] not in referenced:
                _quietly(self.fs.unlink, path)
        for path in reversed(txn.dirs):
            if path == self.folder:
                continue  # with its lock file: _undo_folder, once the save is over
            _quietly(self.fs.rmdir, path)

    def _undo_folder(self, txn: _Txn) -> None:
        """Remove the folder a failed first save created (its lock file first), if empty."""
        if self.folder in txn.dirs and not self.fs.is_file(self.conversation_file):
            _quietly(self.fs.unlink, self.lock_file)
            _quietly(self.fs.rmdir, self.folder)
            txn.dirs.remove(self.folder)

    def _disk_references(self) -> frozenset[str] | None:
        """Every 64-hex string in ``conversation.json`` on disk; ``None`` if it cannot be read.

        The strings are a superset of the hashes of the images it refers to.
        """
        try:
            data = self._current_bytes()
        except OSError:
            return None
        if data is None:
            return frozenset()
        return frozenset(match.decode() for match in _HEX64.findall(data))

    def _after_commit(
        self, wanted: set[str], data: Document, txn: _Txn, listing: dict[str, int]
    ) -> tuple[str, ...]:
        """Step 4; every failure is reported, none raised (the new archive stands)."""
        problems: list[str] = []
        try:
            self.fs.fsync_dir(self.folder)
        except OSError as exc:
            problems.append(f"{self.folder}: folder not made durable ({exc.strerror or exc})")
        try:
            problems.extend(self._clean(wanted, data, txn, listing))
        except OSError as exc:
            problems.append(f"{self.folder}: leftovers not removed ({exc.strerror or exc})")
        return tuple(problems)

    def _clean(
        self, wanted: set[str], data: Document, txn: _Txn, listing: dict[str, int]
    ) -> list[str]:
        """Remove leftovers; images ``conversation.json`` on disk names are never removed.

        ``conversation.json`` is read back only when it is no longer the file this save
        renamed into place (its inode and size). The removals are not made durable: an image
        a crash brings back is a leftover the next save removes (A9).

        Raises:
            OSError: The folder cannot be listed or ``conversation.json`` read back.
        """
        info = self.fs.lstat(self.conversation_file)
        if info is None or (info.st_ino, info.st_size) != (txn.committed_ino, len(data)):
            disk = self._current_bytes()
            if not data.equals(disk):  # another writer, not llmcore: keep everything it refers to
                hashes = {match.decode() for match in _HEX64.findall(disk or b"")}
                keep = {name for name in self.fs.listdir(self.images_dir) if name[:64] in hashes}
                wanted = wanted | keep
            listing = self.fs.regular_files(self.images_dir)
        problems: list[str] = []
        for path in self._leftovers(wanted, listing):
            try:
                self._remove(path)
            except OSError as exc:
                problems.append(f"{path}: leftover not removed ({exc.strerror or exc})")
        return problems

    def _remove(self, path: Path) -> None:
        """Remove one file llmcore created (never a directory tree, never through a symlink)."""
        self.fs.unlink(path)
        self._good.pop(path.name, None)

    def _remove_owned(self) -> tuple[str, ...]:
        """Remove llmcore's files, then ``images/`` and the folder if empty; return the rest."""
        for path in self._leftovers(set()):
            self._remove(path)
        kept: list[str] = []
        images = self.fs.is_dir(self.images_dir)
        if images:
            rest = self.fs.listdir(self.images_dir)
            kept.extend(f"{IMAGES_DIR}/{name}" for name in rest)
            if not rest:
                self.fs.rmdir(self.images_dir)
        kept.extend(
            name
            for name in self.fs.listdir(self.folder)
            if name != LOCK_FILE and not (images and name == IMAGES_DIR)
        )
        if self.fs.is_file(self.lock_file):
            self.fs.unlink(self.lock_file)
        if not kept:
            self.fs.rmdir(self.folder)
            self.fs.fsync_dir(self.folder.parent)
        else:
            self.fs.fsync_dir(self.folder)
        return tuple(sorted(kept))
