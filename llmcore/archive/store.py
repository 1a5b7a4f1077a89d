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
   ``images/``, its write-back started, and renamed into place (an image this store wrote or
   verified counts as intact while one listing of ``images/`` shows the same file, by its
   inode; any other is checked by its bytes);
3. ``conversation.json`` is written to a temporary file and fsynced, then each image of step 2
   and ``images/`` are fsynced (on a journaling file system the first fsync committed them
   already), then the file is renamed: **that rename is the commit point**, after the images
   are durable;
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

import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from llmcore import checks
from llmcore.errors import (
    ArchiveBusyError,
    ArchiveConflictError,
    ArchiveReadError,
    ArchiveWriteError,
)
from llmcore.messages import Image

from ._document import Document
from ._files import _NUL, _ArchiveFiles, _folder_problem, _Gone, _signature, _Txn
from ._results import (
    _UNREAD_IMAGES,
    _UNREADABLE,
    Encoder,
    Loaded,
    Notice,
    SaveResult,
    VersionJob,
    _omitted_notice,
    version_of,
)
from .codec import UNREAD, FragmentCache, Unread, decode, encode, encode_pieces
from .conversation import UNBOUND, UNKNOWN, Conversation
from .format import CONVERSATION_FILE, IMAGES_DIR
from .fs import FileSystem
from .images import IMAGE_BUDGET, DigestCache, ImagePlan, image_file_name, kept_images
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


class ArchiveStore(_ArchiveFiles):
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
        self._known: tuple[Document, str | None] | None = None  # the latest bytes read or written
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
        self._known = (Document([data]), version)
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
        encoder: Encoder = encode_pieces if self.encoder is encode else self.encoder  # same bytes
        encoded = encoder(
            state,
            kept_images=plan.kept,
            digest=self._digests,
            fragments=self._fragments,
            kept_unread=unread.values(),
        )
        pieces: list[bytes | memoryview] = encoded if isinstance(encoded, list) else [encoded]
        data = Document(pieces, None if self._known is None else self._known[0])
        same = data.equals(current)
        self._check_conflict(base, current, same)
        if len(data) > self.fs.read_limit:  # an open would refuse it: the archive would be lost
            raise self._refuse(
                f"the conversation is {len(data):,} bytes, over the {self.fs.read_limit:,} bytes "
                "an open reads (compact it to save it)"
            )
        wanted = {name for name, _ in plan.files} | unread.keys()
        if wanted:
            self._check_images_dir()
        listing = self.fs.regular_files(self.images_dir)
        missing = self._missing(plan.files, listing)
        if len(self._paths) > 2 * len(plan.files) + 64:
            self._paths = {name: self._image_path(name) for name, _ in plan.files}
        if not missing and same and not self._leftovers(wanted, listing):
            version = self._version(current)
            return SaveResult(action="unchanged", images_omitted=plan.omitted, version=version)
        if lock == "absent":  # the first write of a folder without one (module doc)
            create_lock_file(self.folder, self.fs)
        hashing = VersionJob(data)  # while the images and the file are written
        try:
            problems = self._commit_all(txn, missing, data, current)
            version = hashing.result()
        except BaseException:  # an interrupt after the rename took effect: the file is saved
            if self._renamed(txn, data):
                self._committed = hashing.result()
            raise
        self._committed = version
        self._known = (data, version)
        return SaveResult(
            action="written",
            bytes_written=txn.written,
            images_omitted=plan.omitted,
            problems=problems + self._after_commit(wanted, data, txn, listing),
            version=version,
        )

    def _renamed(self, txn: _Txn, data: Document) -> bool:
        """Whether ``conversation.json`` is the file this save renamed (its inode and size)."""
        if not txn.committing:
            return False
        try:
            info = self.fs.lstat(self.conversation_file)
        except OSError:
            return False
        return info is not None and (info.st_ino, info.st_size) == (txn.committed_ino, len(data))

    def _version(self, data: bytes | None) -> str | None:
        """:func:`version_of` ``data``, without hashing again the bytes last read or written."""
        known = self._known
        if known is not None and known[0].equals(data):
            return known[1]
        return version_of(data)

    def _commit_all(
        self, txn: _Txn, missing: list[tuple[str, Image]], data: Document, current: bytes | None
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

    def _check_conflict(self, base: str | None, current: bytes | None, same: bool) -> None:
        """Raise :class:`ArchiveConflictError` if the disk left ``base`` (and is not ``same``)."""
        if base == UNBOUND or same:
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


def plan_images(state: ConversationState, budget: int = IMAGE_BUDGET) -> ImagePlan:
    """Return the image budget's decision for ``state`` (SPEC A6), as a save would make it."""
    return kept_images(state.history, budget)
