"""What opening and saving an archive report, and the encoder a store writes with (SPEC A5–A12).

:mod:`llmcore.archive.store` re-exports every public name here.
"""

from __future__ import annotations

import _thread
import hashlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from llmcore.errors import ArchiveReadError
from llmcore.messages import Image

from ._document import Document
from .codec import FragmentCache
from .conversation import UNKNOWN
from .images import omitted_images
from .state import ConversationState


class Encoder(Protocol):
    """Turns a conversation into the bytes of ``conversation.json`` (:func:`codec.encode`).

    The bytes may come as a list of pieces whose concatenation they are
    (:func:`codec.encode_pieces`, what a store uses in place of :func:`codec.encode`).
    """

    def __call__(
        self,
        state: ConversationState,
        *,
        kept_images: Collection[str] | None = None,
        digest: Callable[[Image], str] | None = None,
        fragments: FragmentCache | None = None,
        kept_unread: Collection[str] = (),
    ) -> bytes | list[bytes | memoryview]:
        """Return the file's bytes (or its pieces)."""
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


_UNREAD_IMAGES = (
    "{count} of the saved conversation's images could not be read; they are kept and "
    "will be back when the archive is opened again."
)


def version_of(data: bytes | None) -> str | None:
    """Return the version token of ``conversation.json`` bytes: SHA-256 hex, ``None`` if absent."""
    return None if data is None else hashlib.sha256(data).hexdigest()


_BACKGROUND_HASH: Final = 1 << 20
"""From this many bytes a save hashes the file while it writes it (hashlib releases the GIL)."""


class VersionJob:
    """:func:`version_of` a :class:`Document`, computed in a thread while the save writes it.

    Below :data:`_BACKGROUND_HASH` bytes it is computed at :meth:`result`. The thread touches
    no file, so the order of the save's file-system calls stays the same. It is started with
    :func:`_thread.start_new_thread`, which does not wait for the new thread to run
    (:meth:`threading.Thread.start` does: a scheduling delay on a busy machine); it needs the
    GIL first when the save waits in ``writev`` or ``fsync``, which is when it should run.
    """

    __slots__ = ("_data", "_done", "_version")

    def __init__(self, data: Document) -> None:
        self._data = data
        self._version: str | None = None
        self._done: _thread.LockType | None = None  # held until the thread has hashed
        if len(data) >= _BACKGROUND_HASH:
            self._done = _thread.allocate_lock()
            self._done.acquire()
            _thread.start_new_thread(self._run, ())

    def _run(self) -> None:
        try:
            self._version = self._data.version()
        finally:
            assert self._done is not None
            self._done.release()

    def result(self) -> str:
        """The version token (waits for the thread)."""
        if self._done is None:
            return self._data.version()
        with self._done:
            pass
        return self._version if self._version is not None else self._data.version()
