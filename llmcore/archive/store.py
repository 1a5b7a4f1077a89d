"""The archive folder on disk: opening, and atomic, durable saves (SPEC A5–A12).

An :class:`ArchiveStore` owns one folder (e.g. ``Poster.silverpoint/agent/``)::

    agent/
      conversation.json
      images/<sha256-hex>.<ext>

**Opening** (:meth:`ArchiveStore.load`, :meth:`ArchiveStore.open`) only reads. No folder, or no
``conversation.json`` → an empty conversation and no notice. A file this version cannot read
(A8) → an empty conversation, one :class:`Notice`, and the folder is kept byte-for-byte by every
save until a turn runs or a new conversation is confirmed. A missing image file, or one whose
bytes do not match its name, reads as an omitted image (A7). Opening never raises because of
the folder's contents or its path: an ``OSError`` (a name too long, a symlink loop, no
permission) is one notice like an unreadable file.

**Symbolic links are never followed** (as for session files, SPEC S6): an archive folder that is
a symlink (or a file), or a ``conversation.json`` that is a symlink, opens as unreadable with
one notice naming it; a save that would write there raises
:class:`~llmcore.errors.ArchiveWriteError` saying so, and a deletion leaves it alone and reports
it. An ``images/`` that is not a real folder reads as omitted images (A7) and a save that needs
to write an image into it is refused the same way.

**llmcore removes only what it created**: its own temporary files (``.conversation.json.<pid>-
<hex>.tmp`` and ``images/.<sha256>.<ext>.<pid>-<hex>.tmp``) and image files named
``<64 lowercase hex>.<png|jpg|gif|webp|bin>`` in ``images/`` that the archive no longer
references (A5). Any other entry of the folder (a user's notes, a subfolder, a file of another
tool) is left alone and is no reason for a save to fail. Where SPEC A11/A12 say "delete the
folder" (``keep_conversation`` off, a confirmed new conversation), llmcore deletes
``conversation.json`` (the commit point), its images and temporaries, then ``images/`` and the
folder only if they are empty; foreign entries stay and are listed in
:attr:`SaveResult.kept`.

**Saving** (:meth:`ArchiveStore.save`) follows A12's precedence: ``keep_conversation`` off →
delete the folder; else an unreadable folder is kept as it is; else an empty conversation
writes nothing (and deletes the folder only after a confirmed new conversation); else the
archive is written, and a save whose result equals the disk with nothing to clean makes no
mutating file-system call at all. A write goes:

1. the folder (and ``images/``) is created if missing, and its parent fsynced;
2. each image the archive needs that is missing or damaged is written to a temporary file in
   ``images/``, flushed, fsynced and renamed into place; then ``images/`` is fsynced;
3. ``conversation.json`` is written the same way; **its rename is the commit point**;
4. the folder is fsynced, and unreferenced images and leftovers (temporary files of an
   interrupted save) are removed.

A failure in steps 1–3 removes what this save created and raises
:class:`~llmcore.errors.ArchiveWriteError`: the previous archive stands byte-identical. A
failure in step 4 leaves the new archive; it is reported in :attr:`SaveResult.problems` and the
next save cleans up. The same holds for deletion, whose commit point is removing
``conversation.json``.
"""

from __future__ import annotations

import os
import re
import secrets
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, Protocol

from llmcore.errors import ArchiveReadError, ArchiveWriteError
from llmcore.messages import Image

from .codec import FragmentCache, decode, encode
from .conversation import Conversation
from .format import CONVERSATION_FILE, IMAGES_DIR
from .fs import FileSystem
from .images import IMAGE_BUDGET, DigestCache, ImagePlan, image_file_name, kept_images, verified
from .state import ConversationState

__all__ = ["ArchiveStore", "Encoder", "Loaded", "Notice", "SaveResult"]


class Encoder(Protocol):
    """Turns a conversation into the bytes of ``conversation.json`` (:func:`codec.encode`)."""

    def __call__(
        self,
        state: ConversationState,
        *,
        kept_images: Collection[str] | None = None,
        digest: Callable[[Image], str] | None = None,
        fragments: FragmentCache | None = None,
    ) -> bytes:
        """Return the file's bytes."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """A message for the host's panel: the saved conversation could not be read (SPEC A8)."""

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
    """Set when the folder holds a conversation this version cannot read."""
    error: ArchiveReadError | None = None
    """The read error behind :attr:`notice`."""


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


@dataclass(slots=True)
class _Txn:
    """What one save created before its commit point, to undo on failure."""

    temps: list[Path] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    dirs: list[Path] = field(default_factory=list)
    written: int = 0


_UNREADABLE = "The saved conversation could not be read; it is kept unchanged."

_IMAGE_NAME: Final = re.compile(r"[0-9a-f]{64}\.(?:png|jpg|gif|webp|bin)")
"""An image file llmcore writes (A5): ``<sha256 lowercase hex>.<ext>``."""
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
    ) -> None:
        self.folder = Path(folder)
        self._keep = keep_conversation
        self.template = template
        self.fs = fs or FileSystem()
        self.image_budget = image_budget
        self.encoder = encoder
        self._digests = DigestCache()
        self._fragments = FragmentCache()
        self._good: dict[str, tuple[int, int, int]] = {}

    @property
    def conversation_file(self) -> Path:
        """The path of ``conversation.json``."""
        return self.folder / CONVERSATION_FILE

    @property
    def images_dir(self) -> Path:
        """The path of ``images/``."""
        return self.folder / IMAGES_DIR

    def keep_conversation(self) -> bool:
        """Read the ``keep_conversation`` setting now (A11)."""
        return self._keep() if callable(self._keep) else self._keep

    # ------------------------------------------------------------------------------ opening

    def load(self) -> Loaded:
        """Read the folder without changing it (SPEC A7, A8).

        Returns:
            The conversation, or an empty one with a notice when the file cannot be read, the
            folder or ``conversation.json`` is a symlink, or the path cannot be used (a name too
            long, a symlink loop: any ``OSError``). Never raises because of what the folder
            holds or where it is.
        """
        try:
            problem = _folder_problem(self.fs.lstat(self.folder))
            if problem is not None:
                return self._unreadable(ArchiveReadError(problem), where=str(self.folder))
            info = self.fs.lstat(self.conversation_file)
            if info is None:
                return Loaded(state=ConversationState())
            if stat.S_ISLNK(info.st_mode):
                link = "conversation.json is a symbolic link; llmcore does not follow links"
                return self._unreadable(ArchiveReadError(link), where=str(self.folder))
            data = self.fs.read_bytes(self.conversation_file)
            state = decode(data, load_image=self._image_loader())
        except OSError as exc:
            error = ArchiveReadError(f"cannot read the archive ({exc.strerror or exc})")
            return self._unreadable(error, where=str(exc.filename or self.folder))
        except ArchiveReadError as exc:
            return self._unreadable(exc)
        return Loaded(state=state)

    def _unreadable(self, error: ArchiveReadError, *, where: str | None = None) -> Loaded:
        if where is None:
            where = f"{self.conversation_file}: {error.location or '$'}"
        notice = Notice(message=_UNREADABLE, reason=f"{where}: {error.message}")
        return Loaded(state=ConversationState(), notice=notice, error=error)

    def _image_loader(self) -> Callable[[str, str], bytes | None]:
        seen: dict[str, bytes | None] = {}
        real: list[bool] = []  # images/ is a real folder (checked at the first image)

        def load_image(sha256: str, mime_type: str) -> bytes | None:
            if not real:
                real.append(self.fs.is_dir(self.images_dir))
            if not real[0]:
                return None  # a symlinked images/ is not followed: the image reads as omitted
            name = image_file_name(sha256, mime_type)
            if name not in seen:
                seen[name] = self._read_image(name, sha256)
            return seen[name]

        return load_image

    def _read_image(self, name: str, sha256: str) -> bytes | None:
        path = self.images_dir / name
        try:
            info = self.fs.lstat(path)
            if info is None or not stat.S_ISREG(info.st_mode):
                return None
            data = self.fs.read_bytes(path)
        except OSError:
            return None
        if not verified(data, sha256):
            return None
        self._good[name] = _signature(info)
        return data

    def open(self, *, on_edited: Callable[[], None] | None = None) -> Conversation:
        """Return the saved conversation as a host-facing :class:`Conversation` (SPEC A8, A11).

        With ``keep_conversation`` off nothing is restored. Restoring does not mark the document
        edited.

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
            notices=() if loaded.notice is None else (loaded.notice,),
            keep_unreadable=loaded.notice is not None,
        )

    # ------------------------------------------------------------------------------- saving

    def save(self, conversation: Conversation) -> SaveResult:
        """Save ``conversation`` by the precedence of SPEC A12.

        Raises:
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
        result = self.write(conversation.state)
        conversation.saved()
        return result

    def _delete_for(self, conversation: Conversation) -> SaveResult:
        result = self.delete()
        conversation.saved()
        return result

    def write(self, state: ConversationState) -> SaveResult:
        """Write ``state`` as the archive, atomically and durably (SPEC A5, A6, A9).

        Makes no mutating call when the disk already holds exactly this archive.

        Raises:
            ArchiveWriteError: A failure before the commit point (including any ``OSError`` of
                the checks before it, such as a name too long), or a folder llmcore does not
                write into (a symlink, a file, a ``conversation.json`` or ``images`` that is not
                what llmcore writes); the old archive stands.
        """
        self._digests.retain(state.history)
        plan = kept_images(state.history, self.image_budget, digest=self._digests)
        data = self.encoder(
            state, kept_images=plan.kept, digest=self._digests, fragments=self._fragments
        )
        wanted = {name for name, _ in plan.files}
        try:
            self._check_folder()
            if plan.files:
                self._check_images_dir()
            missing = [(name, image) for name, image in plan.files if not self._image_ok(name)]
            leftovers = self._leftovers(wanted)
            current = self._current_bytes()
        except OSError as exc:
            raise self._write_error(exc) from exc
        if not missing and not leftovers and current == data:
            return SaveResult(action="unchanged", images_omitted=plan.omitted)
        txn = _Txn()
        try:
            self._ensure_dirs(txn, images=bool(missing))
            self._write_images(txn, missing)
            self._commit(txn, data)
        except OSError as exc:
            self._undo(txn)
            raise self._write_error(exc) from exc
        return SaveResult(
            action="written",
            bytes_written=txn.written,
            images_omitted=plan.omitted,
            problems=self._after_commit(wanted),
        )

    def _write_error(self, exc: OSError) -> ArchiveWriteError:
        return ArchiveWriteError(
            f"could not save the conversation ({exc.strerror or exc}); "
            "the previous archive is unchanged",
            location=str(self.folder),
        )

    def _refuse(self, what: str) -> ArchiveWriteError:
        return ArchiveWriteError(
            f"{what}; nothing was saved and nothing was changed", location=str(self.folder)
        )

    def _check_folder(self) -> None:
        """Refuse a folder that is a symlink or a file, or a ``conversation.json`` folder."""
        problem = _folder_problem(self.fs.lstat(self.folder))
        if problem is not None:
            raise self._refuse(problem)
        info = self.fs.lstat(self.conversation_file)
        if info is not None and stat.S_ISDIR(info.st_mode):
            raise self._refuse("conversation.json is a folder llmcore did not create")

    def _check_images_dir(self) -> None:
        """Refuse an archive with images when ``images`` is not a real folder (not followed)."""
        info = self.fs.lstat(self.images_dir)
        if info is not None and not stat.S_ISDIR(info.st_mode):
            kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
            raise self._refuse(f"images is {kind}; llmcore keeps images only in a real folder")

    def _current_bytes(self) -> bytes | None:
        try:
            return self.fs.read_bytes(self.conversation_file)
        except OSError:
            return None

    def _image_ok(self, name: str) -> bool:
        """Whether ``images/<name>`` exists and was verified (or verifies now) against its name."""
        info = self.fs.lstat(self.images_dir / name)
        if info is None or not stat.S_ISREG(info.st_mode):
            return False
        if self._good.get(name) == _signature(info):
            return True
        return self._read_image(name, name.split(".", 1)[0]) is not None

    def _leftovers(self, wanted: set[str]) -> list[Path]:
        """Return the files llmcore created that a clean archive would not hold.

        Only temporary files of an interrupted save (by their name pattern) and image files
        named ``<sha256>.<ext>`` that ``wanted`` does not name; regular files only. Anything
        else in the folder is not llmcore's and is left alone.
        """
        out = [
            self.folder / name
            for name in self.fs.listdir(self.folder)
            if _DOC_TEMP.fullmatch(name) and self.fs.is_file(self.folder / name)
        ]
        if self.fs.is_dir(self.images_dir):
            out.extend(
                self.images_dir / name
                for name in self.fs.listdir(self.images_dir)
                if _is_owned_image(name, wanted) and self.fs.is_file(self.images_dir / name)
            )
        return out

    def _ensure_dirs(self, txn: _Txn, *, images: bool) -> None:
        if not self.fs.is_dir(self.folder):
            self.fs.mkdir(self.folder)
            txn.dirs.append(self.folder)
            self.fs.fsync_dir(self.folder.parent)
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
        if missing:
            self.fs.fsync_dir(self.images_dir)

    def _commit(self, txn: _Txn, data: bytes) -> None:
        # An unreadable conversation.json (A8) is replaced by this rename; a folder in its
        # place was refused by _check_folder.
        self._write_file(txn, self.conversation_file, data)

    def _write_file(self, txn: _Txn, target: Path, data: bytes) -> None:
        """Write ``data`` to a temporary file beside ``target``, make it durable, rename it."""
        temp = target.with_name(f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        fd = self.fs.open_write(temp)
        txn.temps.append(temp)
        try:
            self.fs.write(fd, data)
            self.fs.fsync(fd)
        finally:
            self.fs.close(fd)
        self.fs.rename(temp, target)
        txn.temps.remove(temp)
        txn.written += len(data)

    def _undo(self, txn: _Txn) -> None:
        """Best effort: remove what a failed save created; what stays is cleaned next time."""
        for path in [*txn.temps, *txn.files]:
            try:
                self.fs.unlink(path)
            except OSError:
                pass
        for path in reversed(txn.dirs):
            try:
                self.fs.rmdir(path)
            except OSError:
                pass

    def _after_commit(self, wanted: set[str]) -> tuple[str, ...]:
        problems: list[str] = []
        try:
            self.fs.fsync_dir(self.folder)
        except OSError as exc:
            problems.append(f"{self.folder}: folder not made durable ({exc.strerror or exc})")
        removed = False
        for path in self._leftovers(wanted):
            try:
                self._remove(path)
                removed = True
            except OSError as exc:
                problems.append(f"{path}: leftover not removed ({exc.strerror or exc})")
        if removed and self.fs.is_dir(self.images_dir):
            try:
                self.fs.fsync_dir(self.images_dir)
            except OSError as exc:
                problems.append(f"{self.images_dir}: removals not made durable ({exc})")
        return tuple(problems)

    def _remove(self, path: Path) -> None:
        """Remove one file llmcore created (never a directory tree, never through a symlink)."""
        self.fs.unlink(path)
        self._good.pop(path.name, None)

    # ----------------------------------------------------------------------------- deleting

    def delete(self) -> SaveResult:
        """Delete the archive (A11, A12, a confirmed new conversation). No folder → no call.

        Removes ``conversation.json`` (the commit point), every ``<sha256>.<ext>`` image and
        llmcore temporary file, then ``images/`` and the folder if they are empty. Entries
        llmcore did not create are left in place and listed in :attr:`SaveResult.kept` (the
        folder stays with them). A folder that is a symlink or a file is not touched; that is
        reported in :attr:`SaveResult.problems` with action ``nothing``.

        A failure before the commit point raises and leaves the folder as it was; a failure
        after it is reported in :attr:`SaveResult.problems` and the rest is removed by the
        next save.

        Raises:
            ArchiveWriteError: ``conversation.json`` could not be removed, or the folder's path
                cannot be used (``OSError``: a name too long, a symlink loop).
        """
        try:
            info = self.fs.lstat(self.folder)
            problem = _folder_problem(info)
            if info is None or problem is not None:
                why = () if problem is None else (f"{self.folder}: {problem}; not deleted",)
                return SaveResult(action="nothing", problems=why)
            doc = self.fs.lstat(self.conversation_file)
        except OSError as exc:
            raise self._write_error(exc) from exc
        if doc is not None and not stat.S_ISDIR(doc.st_mode):
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
        kept.extend(n for n in self.fs.listdir(self.folder) if not (images and n == IMAGES_DIR))
        if not kept:
            self.fs.rmdir(self.folder)
            self.fs.fsync_dir(self.folder.parent)
        else:
            self.fs.fsync_dir(self.folder)
        return tuple(sorted(kept))


def _is_owned_image(name: str, wanted: set[str]) -> bool:
    """Whether ``images/<name>`` is llmcore's to remove: a temporary or an unwanted image."""
    if _IMAGE_TEMP.fullmatch(name):
        return True
    return _IMAGE_NAME.fullmatch(name) is not None and name not in wanted


def _signature(info: os.stat_result) -> tuple[int, int, int]:
    return (info.st_size, info.st_mtime_ns, info.st_ino)


def plan_images(state: ConversationState, budget: int = IMAGE_BUDGET) -> ImagePlan:
    """Return the image budget's decision for ``state`` (SPEC A6), as a save would make it."""
    return kept_images(state.history, budget)
