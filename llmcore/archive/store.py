"""The archive folder on disk: opening, and atomic, durable, locked saves (SPEC A5–A12).

An :class:`ArchiveStore` owns one folder (e.g. ``Poster.silverpoint/agent/``)::

    agent/
      conversation.json
      images/<sha256-hex>.<ext>
      .llmcore.lock

**Opening** (:meth:`ArchiveStore.load`, :meth:`ArchiveStore.open`) reads under a shared lock
(:mod:`llmcore.archive.lock`), so it never sees a save half done. No folder, or no
``conversation.json`` → an empty conversation and no notice. A file this version cannot read
(A8: not JSON, a duplicated key, an unknown field, a newer format) → an empty conversation, one
:class:`Notice`, and the folder is kept byte-for-byte by every save until a turn runs or a new
conversation is confirmed. An image file that is missing, or whose bytes do not match its name,
reads as an omitted image (A7). An image file that exists but cannot be read (``EIO``,
``EACCES``, …), or an ``images`` that is not a real folder, is **not** taken as gone: the image
reads as omitted for this session but keeps its hash
(:attr:`~llmcore.messages.Text.unread_image_sha256`), :attr:`Loaded.image_notice` says so, and
saves keep its ``image`` block and its file until the bytes are really gone or wrong. Opening
never raises because of the folder's contents or its path: an ``OSError`` (a name too long, a
symlink loop, no permission) or a lock held longer than the timeout is one notice like an
unreadable file.

**Symbolic links are never followed** (as for session files, SPEC S6): an archive folder that is
a symlink (or a file), or a ``conversation.json`` that is a symlink, opens as unreadable with
one notice naming it; a save that would write there (after a turn ran) raises
:class:`~llmcore.errors.ArchiveWriteError` saying so, and a deletion leaves it in place and lists
it in :attr:`SaveResult.kept`. An ``images`` that is a symlink or a file is never written into:
its images read as unread (above) and a save that needs it is refused the same way.

**llmcore removes only what it created**: its own temporary files (``.conversation.json.<pid>-
<hex>.tmp`` and ``images/.<sha256>.<ext>.<pid>-<hex>.tmp``), its lock file, and image files named
``<64 lowercase hex>.<png|jpg|gif|webp|bin>`` in ``images/`` that neither the archive being saved
nor the ``conversation.json`` on disk refers to (A5). Any other entry of the folder (a user's
notes, a subfolder, a file of another tool) is left alone and is no reason for a save to fail.
Where SPEC A11/A12 say "delete the folder" (``keep_conversation`` off, a confirmed new
conversation), llmcore deletes ``conversation.json`` (the commit point), its images, temporaries
and lock file, then ``images/`` and the folder only if they are empty; foreign entries stay and
are listed in :attr:`SaveResult.kept`.

**Two processes** (A9): a save holds the folder's exclusive lock from its first check to its
last cleanup, and a save of a conversation opened from a ``conversation.json`` that has changed
on disk since (another process saved) raises :class:`~llmcore.errors.ArchiveConflictError`
and changes nothing — unless the disk already holds exactly what it would write. A
:class:`Conversation` made without :meth:`ArchiveStore.open` is not checked on its first save
(:data:`~llmcore.archive.conversation.UNBOUND`). Deletions are the user's explicit choice and
are not checked.

**Saving** (:meth:`ArchiveStore.save`) follows A12's precedence: ``keep_conversation`` off →
delete the folder; else an unreadable folder is kept as it is; else an empty conversation
writes nothing (and deletes the folder only after a confirmed new conversation); else the
archive is written, and a save whose result equals the disk with nothing to clean makes no
mutating file-system call at all. A write goes:

1. the folder is created if missing (its parent fsynced), and its lock taken;
2. each image the archive needs that is missing or damaged is written to a temporary file in
   ``images/``, flushed, fsynced and renamed into place (an image this store wrote or verified
   counts as intact while one listing of ``images/`` shows the same file, by its inode; any
   other is checked by its bytes);
3. ``conversation.json`` is written to a temporary file and fsynced, then ``images/`` is
   fsynced (when step 2 wrote an image), then the file is renamed: **that rename is the commit
   point**;
4. the folder is fsynced, and unreferenced images and leftovers (temporary files of an
   interrupted save) are removed, without an fsync (a removal a crash undoes leaves a
   leftover the next save removes).

A save reads and hashes only what it has not read or written before: the encoded messages
(:class:`~llmcore.archive.fragments.FragmentCache`), the history's images and unread images
(:class:`~llmcore.archive.media.MediaIndex`) and the unpaired-tool-call scan
(:class:`~llmcore.checks.UnpairedScan`) are kept from the previous save or from the open, so a
save after one more turn looks at that turn and copies the rest.

A failure in steps 1–3 removes what this save created — never an image the
``conversation.json`` on disk refers to — and raises :class:`~llmcore.errors.ArchiveWriteError`:
the previous archive stands byte-identical (the message says so only after checking it). A
rename of ``conversation.json`` that reports an error but took effect (possible on network file
systems) is recognised by reading the file back and counts as committed. Every failure after the
commit point, whatever ``OSError`` it is, leaves the new archive and is reported in
:attr:`SaveResult.problems`; the next save cleans up. The same holds for deletion, whose commit
point is removing ``conversation.json``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, Protocol

from llmcore import checks
from llmcore.errors import (
    ArchiveBusyError,
    ArchiveConflictError,
    ArchiveReadError,
    ArchiveWriteError,
)
from llmcore.messages import Image
from llmcore.safeio import file_kind

from .codec import UNREAD, FragmentCache, Unread, decode, encode
from .conversation import UNBOUND, UNKNOWN, Conversation
from .format import CONVERSATION_FILE, IMAGES_DIR
from .fs import FileSystem
from .images import (
    IMAGE_BUDGET,
    DigestCache,
    ImagePlan,
    image_file_name,
    kept_images,
    omitted_images,
    verified,
)
from .lock import (
    DEFAULT_LOCK_TIMEOUT,
    LOCK_FILE,
    FolderGone,
    LockState,
    LockTimeout,
    LockUnavailable,
    create_lock_file,
    folder_lock,
)
from .media import MediaIndex
from .state import ConversationState

__all__ = ["ArchiveStore", "Encoder", "Loaded", "Notice", "SaveResult", "version_of"]


class Encoder(Protocol):
    """Turns a conversation into the bytes of ``conversation.json`` (:func:`codec.encode`)."""

    def __call__(
        self,
        state: ConversationState,
        *,
        kept_images: Collection[str] | None = None,
        digest: Callable[[Image], str] | None = None,
        fragments: FragmentCache | None = None,
        kept_unread: Collection[str] = (),
    ) -> bytes:
        """Return the file's bytes."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """A message for the host's panel about the saved conversation (SPEC A7, A8)."""

    message: str
    """One line for the user."""
    reason: str
    """What was wrong and where (file and JSON path), for a details view or a log."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """What :meth:`ArchiveStore.load` found."""

    state: ConversationState
    """The conversation; empty when there was none or it was unreadable."""
    notice: Notice | None = None
    """Set when the folder holds a conversation this version cannot read (A8)."""
    error: ArchiveReadError | None = None
    """The read error behind :attr:`notice`."""
    image_notice: Notice | None = None
    """Set when image files exist but could not be read; they are kept (see the module)."""
    omitted_notice: Notice | None = None
    """Set when the history holds omitted images (the budget of A6, or a missing file, A7):
    the next body sends placeholder text where the open conversation sent the images."""
    version: str | None = UNKNOWN
    """What ``conversation.json`` held: SHA-256 hex of its bytes, ``None`` for no file, or
    :data:`~llmcore.archive.conversation.UNKNOWN` when it could not be read."""

    @property
    def notices(self) -> tuple[Notice, ...]:
        """Every notice, for the panel."""
        notices = (self.notice, self.image_notice, self.omitted_notice)
        return tuple(n for n in notices if n is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class SaveResult:
    """What :meth:`ArchiveStore.save` did."""

    action: Literal["written", "unchanged", "deleted", "kept_unreadable", "nothing"]
    """``written`` (committed a new archive), ``unchanged`` (disk already equal: no write),
    ``deleted`` (folder removed), ``kept_unreadable`` (A8), ``nothing`` (no folder needed)."""
    bytes_written: int = 0
    """Bytes of files written (images and ``conversation.json``)."""
    images_omitted: int = 0
    """Image positions the budget saved as ``imageOmitted`` (A6)."""
    problems: tuple[str, ...] = ()
    """Failures after the commit point; the new archive stands and the next save cleans up."""
    kept: tuple[str, ...] = ()
    """A deletion: entries of the folder llmcore did not create, left in place (relative
    paths, sorted); the folder stays while they are there."""
    version: str | None = None
    """SHA-256 hex of ``conversation.json`` after a ``written`` or ``unchanged`` save."""


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


_UNREADABLE = "The saved conversation could not be read; it is kept unchanged."
_OMITTED = (
    "{count} of the saved conversation's images {were} omitted to keep it within the 20 MiB "
    "image budget (or {their} file is missing); the model is sent placeholder text instead."
)
_OMITTED_REASON = (
    "The history holds {count} imageOmitted block{s}, the first in message {first} (SPEC A6, "
    "A7). If the last save omitted {them}, the next request differs from the one sent before "
    "the save from that message on, and the prompt cache misses from there once; "
    "`llmcore verify` reports it unless given --allow-omitted."
)


def _omitted_notice(state: ConversationState) -> Notice | None:
    count, first = omitted_images(state.history)
    if not count:
        return None
    one = count == 1
    words = {"were": "was" if one else "were", "their": "its" if one else "their"}
    message = _OMITTED.format(count=count, **words)
    them = "it" if one else "them"
    reason = _OMITTED_REASON.format(count=count, s="" if one else "s", first=first, them=them)
    return Notice(message=message, reason=reason)


_NUL = "the archive path contains a NUL byte, which no file system accepts"
_UNREAD_IMAGES = (
    "{count} of the saved conversation's images could not be read; they are kept and "
    "will be back when the archive is opened again."
)

_IMAGE_NAME: Final = re.compile(r"[0-9a-f]{64}\.(?:png|jpg|gif|webp|bin)")
"""An image file llmcore writes (A5): ``<sha256 lowercase hex>.<ext>``."""
_HEX64: Final = re.compile(rb"[0-9a-f]{64}")
"""Every hash a ``conversation.json`` may name (a superset of its image references)."""
_TEMP_SUFFIX: Final = r"\.[0-9]+-[0-9a-f]+\.tmp"
_DOC_TEMP: Final = re.compile(r"\.conversation\.json" + _TEMP_SUFFIX)
"""A temporary ``conversation.json`` of an interrupted save (see ``_write_file``)."""
_IMAGE_TEMP: Final = re.compile(r"\.[0-9a-f]{64}\.(?:png|jpg|gif|webp|bin)" + _TEMP_SUFFIX)
"""A temporary image file of an interrupted save, in ``images/``."""


def version_of(data: bytes | None) -> str | None:
    """Return the version token of ``conversation.json`` bytes: SHA-256 hex, ``None`` if absent."""
    return None if data is None else hashlib.sha256(data).hexdigest()


def _folder_problem(info: os.stat_result | None) -> str | None:
    """What makes the archive folder unusable, or ``None`` (absent or a real directory)."""
    if info is None or stat.S_ISDIR(info.st_mode):
        return None
    if stat.S_ISLNK(info.st_mode):
        return "the archive folder is a symbolic link; llmcore does not follow links"
    return "the archive folder is not a folder (a file is in its place)"


class ArchiveStore:
    """One archive folder: open it, save conversations into it (SPEC A5–A12).

    Args:
        folder: The folder that holds (or will hold) ``conversation.json``; its parent must
            exist when a save writes.
        keep_conversation: The host setting (A11), or a callable read at every save and change.
        template: The document is a template or design-system package: no folder, ever (A9).
        fs: The file-system layer (tests inject faults through it).
        image_budget: Bytes of images kept on disk (A6).
        encoder: Writes ``conversation.json`` (``llmcore verify`` injects a faulty one in tests).
        lock_timeout: Seconds an open or a save waits for another process's lock.
    """

    def __init__(
        self,
        folder: Path,
        *,
        keep_conversation: bool | Callable[[], bool] = True,
        template: bool = False,
        fs: FileSystem | None = None,
        image_budget: int = IMAGE_BUDGET,
        encoder: Encoder = encode,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.folder = Path(folder)
        self._keep = keep_conversation
        self.template = template
        self.fs = fs or FileSystem()
        self.image_budget = image_budget
        self.encoder = encoder
        self.lock_timeout = lock_timeout
        self._digests = DigestCache()
        self._fragments = FragmentCache()
        self._media = MediaIndex(self._digests)
        self._unpaired = checks.UnpairedScan()
        self._known: tuple[bytes, str | None] | None = None  # the latest bytes read or written
        self._paths: dict[str, Path] = {}
        self._good: dict[str, tuple[int, int, int]] = {}
        self._committed: str | None = None

    @property
    def conversation_file(self) -> Path:
        """The path of ``conversation.json``."""
        return self.folder / CONVERSATION_FILE

    @property
    def images_dir(self) -> Path:
        """The path of ``images/``."""
        return self.folder / IMAGES_DIR

    @property
    def lock_file(self) -> Path:
        """The path of the folder's lock file (:mod:`llmcore.archive.lock`)."""
        return self.folder / LOCK_FILE

    def keep_conversation(self) -> bool:
        """Read the ``keep_conversation`` setting now (A11)."""
        return self._keep() if callable(self._keep) else self._keep

    # ------------------------------------------------------------------------------ opening

    def load(self) -> Loaded:
        """Read the folder under its shared lock, changing nothing but the lock file (A7, A8).

        Returns:
            The conversation, or an empty one with a notice when the file cannot be read, the
            folder or ``conversation.json`` is a symlink, the path cannot be used (a name too
            long, a symlink loop: any ``OSError``), or another process held the lock longer
            than :attr:`lock_timeout`. Never raises because of what the folder holds or where
            it is.
        """
        if "\0" in str(self.folder):
            return self._unreadable(ArchiveReadError(_NUL), where=repr(str(self.folder)))
        try:
            info = self.fs.lstat(self.folder)
            problem = _folder_problem(info)
            if problem is not None:
                return self._unreadable(ArchiveReadError(problem), where=str(self.folder))
            if info is None:
                return Loaded(state=ConversationState(), version=None)
            return self._read_locked()
        except OSError as exc:
            error = ArchiveReadError(f"cannot read the archive ({exc.strerror or exc})")
            return self._unreadable(error, where=str(exc.filename or self.folder))
        except LockTimeout:
            busy = f"another process held the archive's lock for over {self.lock_timeout:g} s"
            return self._unreadable(ArchiveReadError(busy), where=str(self.folder))

    def _read_locked(self) -> Loaded:
        """Read under the folder's shared locks (:mod:`llmcore.archive.lock`)."""
        with folder_lock(self.folder, self.fs, exclusive=False, timeout=self.lock_timeout):
            return self._read()

    def _read(self) -> Loaded:
        info = self.fs.lstat(self.conversation_file)
        if info is None:
            return Loaded(state=ConversationState(), version=None)
        if stat.S_ISLNK(info.st_mode):
            link = "conversation.json is a symbolic link; llmcore does not follow links"
            return self._unreadable(ArchiveReadError(link), where=str(self.folder))
        data = self.fs.read_bytes(self.conversation_file)
        unread: list[str] = []
        try:
            state = decode(
                data,
                load_image=self._image_loader(unread),
                fragments=self._fragments,
                digests=self._digests,
            )
        except ArchiveReadError as exc:
            return self._unreadable(exc, version=version_of(data))
        image_notice = None
        if unread:
            image_notice = Notice(
                message=_UNREAD_IMAGES.format(count=len(unread)), reason="; ".join(unread)
            )
        version = version_of(data)
        self._known = (data, version)
        self._media.update(state.history)  # the next save scans only what follows
        self._unpaired(state.history)
        return Loaded(
            state=state,
            image_notice=image_notice,
            omitted_notice=_omitted_notice(state),
            version=version,
        )

    def _unreadable(
        self, error: ArchiveReadError, *, where: str | None = None, version: str | None = UNKNOWN
    ) -> Loaded:
        if where is None:
            where = f"{self.conversation_file}: {error.location or '$'}"
        notice = Notice(message=_UNREADABLE, reason=f"{where}: {error.message}")
        return Loaded(state=ConversationState(), notice=notice, error=error, version=version)

    def _image_loader(self, unread: list[str]) -> Callable[[str, str], bytes | None | Unread]:
        seen: dict[str, bytes | None | Unread] = {}
        folder: list[str | None] = []  # why images/ cannot be used (checked at the first image)

        def load_image(sha256: str, mime_type: str) -> bytes | None | Unread:
            if not folder:
                folder.append(self._images_dir_problem())
            name = image_file_name(sha256, mime_type)
            if name not in seen:
                seen[name] = self._read_image(name, sha256, folder[0], unread)
            return seen[name]

        return load_image

    def _images_dir_problem(self) -> str | None:
        """Why ``images`` cannot be read from: ``None`` for a real folder or none at all."""
        info = self.fs.lstat(self.images_dir)
        if info is None or stat.S_ISDIR(info.st_mode):
            return None
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
        return f"{self.images_dir}: images is {kind}; llmcore does not follow links"

    def _read_image(
        self, name: str, sha256: str, folder_problem: str | None, unread: list[str]
    ) -> bytes | None | Unread:
        """Return the verified bytes, ``None`` if gone or wrong (A7), :data:`UNREAD` if unread."""
        if folder_problem is not None:
            unread.append(f"{name}: {folder_problem}")
            return UNREAD
        got = self._verified_file(name, sha256)
        if isinstance(got, OSError):
            unread.append(f"{self.images_dir / name}: {got.strerror or got}")
            return UNREAD
        return got

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

    def open(self, *, on_edited: Callable[[], None] | None = None) -> Conversation:
        """Return the saved conversation as a host-facing :class:`Conversation` (SPEC A8, A11).

        With ``keep_conversation`` off nothing is restored. Restoring does not mark the document
        edited. The conversation remembers which ``conversation.json`` it came from
        (:attr:`Conversation.base`) so a save can detect another process's save.

        Args:
            on_edited: Called (with no undo step) whenever the conversation changes (A10).
        """
        if not self.keep_conversation():
            return Conversation(keep_conversation=self.keep_conversation, on_edited=on_edited)
        loaded = self.load()
        return Conversation(
            loaded.state,
            keep_conversation=self.keep_conversation,
            on_edited=on_edited,
            notices=loaded.notices,
            keep_unreadable=loaded.notice is not None,
            base=loaded.version,
        )

    # ------------------------------------------------------------------------------- saving

    def save(self, conversation: Conversation) -> SaveResult:
        """Save ``conversation`` by the precedence of SPEC A12.

        Raises:
            ArchiveConflictError: ``conversation.json`` changed on disk since the conversation
                was opened (another process saved); nothing was changed.
            ArchiveBusyError: Another process held the folder's lock too long.
            ArchiveWriteError: The save failed before its commit point (disk full, I/O error,
                permission); the previous archive is left byte-identical.
        """
        if self.template:
            return SaveResult(action="nothing")
        if not self.keep_conversation():
            return self._delete_for(conversation)
        if conversation.keeps_unreadable:
            return SaveResult(action="kept_unreadable")
        if conversation.state.is_empty:
            if conversation.delete_pending:
                return self._delete_for(conversation)
            return SaveResult(action="nothing")
        # An unpaired tool call is saved, but said (a ProviderRejectsError in strict mode).
        checks.report(self._unpaired(conversation.history), stacklevel=2)
        self._committed = None
        try:
            result = self.write(conversation.state, base=conversation.base)
        except BaseException:
            if self._committed is not None:  # interrupted after its commit point: it is saved
                conversation.saved(self._committed)
            raise
        conversation.saved(result.version)
        return result

    def _delete_for(self, conversation: Conversation) -> SaveResult:
        result = self.delete()
        conversation.saved(None)
        return result

    def write(self, state: ConversationState, *, base: str | None = UNBOUND) -> SaveResult:
        """Write ``state`` as the archive, atomically and durably, under the lock (A5, A6, A9).

        Makes no mutating call when the disk already holds exactly this archive.

        Args:
            state: The conversation to write.
            base: The :attr:`Conversation.base` it continues; :data:`UNBOUND` skips the check.

        Raises:
            ArchiveConflictError: ``conversation.json`` is no longer ``base`` (nor already
                what this save would write); nothing was changed.
            ArchiveBusyError: Another process held the folder's lock too long.
            ArchiveWriteError: A failure before the commit point (including any ``OSError`` of
                the checks before it, such as a name too long), or a folder llmcore does not
                write into (a symlink, a file, a ``conversation.json`` or ``images`` that is not
                what llmcore writes); the old archive stands.
        """
        for _ in range(3):
            txn = _Txn()
            try:
                self._check_folder()
                self._make_folder(txn)
                with self._exclusive("saved") as got:
                    try:
                        return self._write_locked(state, base, txn, got)
                    except BaseException:
                        self._undo_folder(txn)
                        raise
            except OSError as exc:
                raise self._write_error(exc) from exc
            except _Gone:
                continue  # deleted between the folder's creation and its lock: create it again
            except ArchiveWriteError:
                self._undo_folder(txn)
                raise
        raise self._refuse("the archive folder kept disappearing (another process deletes it)")

    @contextmanager
    def _exclusive(self, done: str) -> Iterator[LockState]:
        """Hold the folder's exclusive locks; lock failures become typed errors.

        Raises:
            _Gone: The folder was removed (a save creates it again).
            ArchiveBusyError: Another process held the lock longer than :attr:`lock_timeout`.
            ArchiveWriteError: The folder cannot be locked (nothing was ``done``).
        """
        try:
            with folder_lock(
                self.folder, self.fs, exclusive=True, timeout=self.lock_timeout
            ) as got:
                yield got
        except FolderGone as exc:
            raise _Gone from exc
        except LockTimeout as exc:
            raise ArchiveBusyError(
                f"another process held the archive's lock for over {self.lock_timeout:g} s; "
                f"nothing was {done}",
                location=str(self.folder),
            ) from exc
        except LockUnavailable as exc:
            raise self._refuse(f"cannot lock the archive folder: {exc.reason}") from exc

    def _write_locked(
        self, state: ConversationState, base: str | None, txn: _Txn, lock: LockState
    ) -> SaveResult:
        self._check_document()
        current = self._current_bytes()
        self._media.update(state.history)
        unread = self._unread_kept(self._media.unread())
        plan = self._media.plan(self.image_budget)
        data = self.encoder(
            state,
            kept_images=plan.kept,
            digest=self._digests,
            fragments=self._fragments,
            kept_unread=unread.values(),
        )
        self._check_conflict(base, current, data)
        wanted = {name for name, _ in plan.files} | unread.keys()
        if wanted:
            self._check_images_dir()
        listing = self.fs.scan_dir(self.images_dir)
        missing = [(name, image) for name, image in plan.files if not self._image_ok(name, listing)]
        if len(self._paths) > 2 * len(plan.files) + 64:
            self._paths = {name: self._image_path(name) for name, _ in plan.files}
        version = self._version(data)
        if not missing and current == data and not self._leftovers(wanted, listing):
            return SaveResult(action="unchanged", images_omitted=plan.omitted, version=version)
        if lock == "absent":  # the first write of a folder without one (module doc)
            create_lock_file(self.folder, self.fs)
        problems = self._commit_all(txn, missing, data, current)
        self._committed = version
        self._known = (data, version)
        return SaveResult(
            action="written",
            bytes_written=txn.written,
            images_omitted=plan.omitted,
            problems=problems + self._after_commit(wanted, data, txn, listing),
            version=version,
        )

    def _version(self, data: bytes | None) -> str | None:
        """:func:`version_of` ``data``, without hashing again the bytes last read or written."""
        known = self._known
        if known is not None and data is not None and (data is known[0] or data == known[0]):
            return known[1]
        return version_of(data)

    def _commit_all(
        self, txn: _Txn, missing: list[tuple[str, Image]], data: bytes, current: bytes | None
    ) -> tuple[str, ...]:
        """Steps 2–3: images, then the commit; undo (and raise) unless it took effect."""
        try:
            self._ensure_images_dir(txn, images=bool(missing))
            self._write_images(txn, missing)
            self._write_file(txn, self.conversation_file, data, commit=True, images=bool(missing))
        except OSError as exc:
            if txn.committing and self._disk_is(data):
                why = exc.strerror or exc
                return (
                    f"{self.conversation_file}: the rename reported an error ({why}) "
                    "but took effect; the new archive stands",
                )
            self._undo(txn)
            raise self._write_error(exc, unchanged=self._disk_is(current)) from exc
        return ()

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

    def _check_conflict(self, base: str | None, current: bytes | None, data: bytes) -> None:
        """Raise :class:`ArchiveConflictError` if the disk moved on from ``base`` (A9)."""
        if base == UNBOUND or current == data:
            return
        if base != UNKNOWN and self._version(current) == base:
            return
        if base == UNKNOWN and current is None:
            return
        raise ArchiveConflictError(
            "conversation.json changed on disk since this conversation was opened (another "
            "process saved it); nothing was saved — reopen the archive to continue from it",
            location=str(self.folder),
        )

    def _current_bytes(self) -> bytes | None:
        """The bytes of ``conversation.json`` now; ``None`` if there is none.

        Raises:
            OSError: It exists but cannot be read (then a save cannot check for conflicts).
        """
        try:
            return self.fs.read_bytes(self.conversation_file)
        except FileNotFoundError:
            return None

    def _disk_is(self, data: bytes | None) -> bool:
        """Whether ``conversation.json`` holds exactly ``data`` (``None``: no file); no raise."""
        try:
            return self._current_bytes() == data
        except OSError:
            return False

    def _unread_kept(self, unread: dict[str, str]) -> dict[str, str]:
        """File name → SHA-256 of each unread image (of ``unread``) whose file is still there (A7).

        An image is dropped (written as ``imageOmitted``) only when its file is gone or its
        bytes are wrong; a file that still cannot be read is kept.
        """
        if unread and self._images_dir_problem() is not None:
            return unread  # refused by _check_images_dir: never dropped
        kept: dict[str, str] = {}
        for name, sha in unread.items():
            info = self.fs.lstat(self.images_dir / name)
            if info is not None and self._good.get(name) == _signature(info):
                kept[name] = sha
            elif self._verified_file(name, sha) is not None:
                kept[name] = sha
        return kept

    def _image_path(self, name: str) -> Path:
        """``images/<name>``, made once per name the latest save used (paths are slow to make)."""
        path = self._paths.get(name)
        if path is None:
            path = self._paths[name] = self.images_dir / name
        return path

    def _image_ok(self, name: str, listing: dict[str, tuple[int, bool]]) -> bool:
        """Whether ``images/<name>`` exists and was verified (or verifies now) against its name.

        A file this store wrote or verified is taken as it is while the listing of ``images/``
        shows it as the same regular file (its inode); any other is checked by its bytes.
        """
        entry = listing.get(name)
        if entry is None or not entry[1]:
            return False
        good = self._good.get(name)
        if good is not None and good[2] == entry[0]:
            return True
        info = self.fs.lstat(self._image_path(name))
        if info is None or not stat.S_ISREG(info.st_mode):
            return False
        if self._good.get(name) == _signature(info):
            return True
        got = self._verified_file(name, name.split(".", 1)[0])
        return isinstance(got, bytes)  # unreadable now: rewritten from the bytes in memory

    def _leftovers(
        self, wanted: Collection[str], listing: dict[str, tuple[int, bool]] | None = None
    ) -> list[Path]:
        """Return the files llmcore created that a clean archive would not hold.

        Only temporary files of an interrupted save (by their name pattern) and image files
        named ``<sha256>.<ext>`` that ``wanted`` does not name; regular files only. Anything
        else in the folder is not llmcore's and is left alone. ``listing`` is ``images/`` as
        :meth:`FileSystem.scan_dir` gave it (read now when ``None``).
        """
        out = [
            self.folder / name
            for name in self.fs.listdir(self.folder)
            if _DOC_TEMP.fullmatch(name) and self.fs.is_file(self.folder / name)
        ]
        if listing is None:
            listing = self.fs.scan_dir(self.images_dir)
        out.extend(
            self.images_dir / name
            for name, (_, regular) in sorted(listing.items())
            if regular and name not in wanted and _is_owned_image(name, wanted)
        )
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
            self._write_file(txn, target, image.data)
            if not existed:
                txn.files.append(target)
            info = self.fs.lstat(target)
            if info is not None:
                self._good[name] = _signature(info)

    def _write_file(
        self, txn: _Txn, target: Path, data: bytes, *, commit: bool = False, images: bool = False
    ) -> None:
        """Write ``data`` to a temporary file beside ``target``, make it durable, rename it.

        ``commit`` marks the rename of ``conversation.json``; ``images`` makes ``images/``
        durable before it (new images were renamed into it). That fsync comes after the file's
        own, which has already committed the file system's journal with the images' renames on
        journaling file systems, so it is cheap there.
        """
        temp = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        fd = self.fs.open_write(temp)
        txn.temps.append(temp)
        try:
            self.fs.write(fd, data)
            self.fs.fsync(fd)
        finally:
            self.fs.close(fd)
        if images:
            self.fs.fsync_dir(self.images_dir)
        if commit:
            written = self.fs.lstat(temp)
            txn.committed_ino = -1 if written is None else written.st_ino
        txn.committing = commit
        self.fs.rename(temp, target)
        txn.temps.remove(temp)
        txn.written += len(data)

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
        self, wanted: set[str], data: bytes, txn: _Txn, listing: dict[str, tuple[int, bool]]
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
        self, wanted: set[str], data: bytes, txn: _Txn, listing: dict[str, tuple[int, bool]]
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
            if disk != data:  # another writer, not llmcore: keep everything it refers to
                hashes = {match.decode() for match in _HEX64.findall(disk or b"")}
                keep = {name for name in self.fs.listdir(self.images_dir) if name[:64] in hashes}
                wanted = wanted | keep
            listing = self.fs.scan_dir(self.images_dir)
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

    # ----------------------------------------------------------------------------- deleting

    def delete(self) -> SaveResult:
        """Delete the archive (A11, A12, a confirmed new conversation). No folder → no call.

        Under the folder's exclusive lock, removes ``conversation.json`` (the commit point),
        every ``<sha256>.<ext>`` image and llmcore temporary file, the lock file, then
        ``images/`` and the folder if they are empty. Entries llmcore did not create —
        including a ``conversation.json`` that is a symlink or not a file — are left in place
        and listed in :attr:`SaveResult.kept` (the folder stays with them). A folder that is a
        symlink or a file is not touched; that is reported in :attr:`SaveResult.problems` with
        action ``nothing``.

        A failure before the commit point raises and leaves the folder as it was; a failure
        after it is reported in :attr:`SaveResult.problems` and the rest is removed by the
        next save.

        Raises:
            ArchiveBusyError: Another process held the folder's lock too long.
            ArchiveWriteError: ``conversation.json`` could not be removed, the folder cannot be
                locked, or its path cannot be used (``OSError``: a name too long, a loop).
        """
        if "\0" in str(self.folder):
            self._check_folder()  # raises: no file system accepts the path
        try:
            info = self.fs.lstat(self.folder)
            problem = _folder_problem(info)
            if info is None or problem is not None:
                why = () if problem is None else (f"{self.folder}: {problem}; not deleted",)
                return SaveResult(action="nothing", problems=why)
            with self._exclusive("deleted"):
                return self._delete_locked()
        except OSError as exc:
            raise self._write_error(exc) from exc

    def _delete_locked(self) -> SaveResult:
        doc = self.fs.lstat(self.conversation_file)
        if doc is not None and stat.S_ISREG(doc.st_mode):
            try:
                self.fs.unlink(self.conversation_file)
            except OSError as exc:
                raise ArchiveWriteError(
                    f"could not delete the conversation ({exc.strerror or exc})",
                    location=str(self.conversation_file),
                ) from exc
        problems: list[str] = []
        try:
            kept = self._remove_owned()
        except OSError as exc:
            problems.append(f"{self.folder}: not fully removed ({exc.strerror or exc})")
            kept = ()
        self._good.clear()
        return SaveResult(action="deleted", problems=tuple(problems), kept=kept)

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


def _signature(info: os.stat_result) -> tuple[int, int, int]:
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def plan_images(state: ConversationState, budget: int = IMAGE_BUDGET) -> ImagePlan:
    """Return the image budget's decision for ``state`` (SPEC A6), as a save would make it."""
    return kept_images(state.history, budget)
