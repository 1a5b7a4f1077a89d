"""Content-addressed image files and the image budget (SPEC A5–A7).

* :func:`image_file_name` — ``<sha256-hex>.<ext>`` with ``png``, ``jpg``, ``gif``, ``webp``, else
  ``bin`` (A5), so an image sent twice is stored once.
* :func:`kept_images` — the budget of A6: at most :data:`IMAGE_BUDGET` bytes, counted newest
  first, each hash once at its newest position; the first image that does not fit and every
  older one are omitted, except older copies of a hash already kept.
* :func:`verified` — the check of A7: bytes whose SHA-256 is not their name read as omitted.
* :func:`omitted_images` — how many images a reopened history has lost, for the notice.

It leaves out writing (:mod:`llmcore.archive.store`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from llmcore.messages import Image, Message, Text

__all__ = [
    "IMAGE_BUDGET",
    "DigestCache",
    "ImagePlan",
    "image_extension",
    "image_file_name",
    "kept_images",
    "omitted_images",
    "plan_newest_first",
    "verified",
]

IMAGE_BUDGET: Final = 20 * 1024 * 1024
"""Bytes of images one conversation keeps on disk: 20 MiB = 20,971,520 (SPEC A6)."""

_EXTENSIONS: Final = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/jpg": "jpg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def image_extension(mime_type: str) -> str:
    """Return the file extension for ``mime_type``: ``png``, ``jpg``, ``gif``, ``webp``, ``bin``."""
    return _EXTENSIONS.get(mime_type.lower(), "bin")


def image_file_name(sha256: str, mime_type: str) -> str:
    """Return the image's file name inside ``images/``: ``<sha256>.<ext>`` (SPEC A5)."""
    return f"{sha256}.{image_extension(mime_type)}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePlan:
    """Which images a save writes (SPEC A6)."""

    kept: frozenset[str]
    """SHA-256 hex of the images written as ``image``."""
    files: tuple[tuple[str, Image], ...]
    """(file name, image) for each file the kept positions name, newest first; names unique."""
    omitted: int
    """How many image positions are written as ``imageOmitted`` by the budget."""
    kept_bytes: int
    """Bytes of the kept images, each hash once."""


class DigestCache:
    """SHA-256 hex of image values, computed once per value (an image is hashed at most once).

    Entries hold their image, so an ``id`` is never reused while it is cached; :meth:`retain`
    drops the images a history no longer holds.
    """

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Image, str]] = {}

    def __call__(self, image: Image) -> str:
        """Return the lowercase hex SHA-256 of ``image.data``."""
        entry = self._entries.get(id(image))
        if entry is None:
            entry = (image, image.sha256)
            self._entries[id(image)] = entry
        return entry[1]

    def remember(self, image: Image, sha256: str) -> None:
        """Take ``sha256`` as the hash of ``image`` (its bytes were verified against it)."""
        self._entries[id(image)] = (image, sha256)

    def __len__(self) -> int:
        """How many images are cached."""
        return len(self._entries)

    def retain(self, history: Sequence[Message]) -> None:
        """Forget every image not in ``history``."""
        self.retain_images(p for m in history for p in m.content if isinstance(p, Image))

    def retain_images(self, images: Iterable[Image]) -> None:
        """Forget every image not among ``images``."""
        live = {id(image) for image in images}
        self._entries = {k: v for k, v in self._entries.items() if k in live}


def kept_images(
    history: Sequence[Message],
    budget: int = IMAGE_BUDGET,
    *,
    digest: Callable[[Image], str] | None = None,
) -> ImagePlan:
    """Apply the image budget to ``history`` (SPEC A6).

    Images are counted newest first (last message, last content case first), each hash once at
    its newest position. An image fits when the bytes kept so far plus its size are at most
    ``budget``. The first one that does not fit, and every older image, are omitted — except an
    older copy of a hash already kept, which stays an image.

    Args:
        history: The conversation's messages, oldest first.
        budget: The budget in bytes.
        digest: Returns an image's SHA-256 hex (e.g. a :class:`DigestCache`).
    """
    sha = digest or DigestCache()
    newest_first = []
    for message in reversed(history):
        for part in reversed(message.content):
            if isinstance(part, Image):
                key = sha(part)
                newest_first.append((key, part, image_file_name(key, part.mime_type)))
    return plan_newest_first(newest_first, budget)


def plan_newest_first(images: Sequence[tuple[str, Image, str]], budget: int) -> ImagePlan:
    """Apply the image budget (as :func:`kept_images`) to ``(sha256, image, file name)``.

    ``images`` are the history's image places, newest first.
    """
    kept: dict[str, Image] = {}
    names: dict[str, Image] = {}  # one (file name, image) per name a kept position needs
    total = 0
    omitted = 0
    full = False
    for key, part, name in images:  # the same bytes declared with two types get two names
        if key in kept:  # kept at its newest position: every older copy stays an image
            names.setdefault(name, part)
        elif not full and total + len(part.data) <= budget:
            kept[key] = part
            total += len(part.data)
            names.setdefault(name, part)
        else:
            full = True
            omitted += 1
    files = tuple(names.items())
    return ImagePlan(kept=frozenset(kept), files=files, omitted=omitted, kept_bytes=total)


def verified(data: bytes, sha256: str) -> bool:
    """Return whether ``data`` hashes to ``sha256`` (SPEC A7)."""
    return hashlib.sha256(data).hexdigest() == sha256


def omitted_images(history: Sequence[Message]) -> tuple[int, int | None]:
    """Count the history's omitted images (SPEC M3): how many, and the first one's message.

    An image whose file exists but could not be read is not counted (it is kept and comes back;
    see :attr:`~llmcore.messages.Text.unread_image_sha256`).

    Returns:
        ``(count, index)``: ``index`` is the position in ``history`` of the first message
        holding one, ``None`` when there is none.
    """
    count, first = 0, None
    for index, message in enumerate(history):
        for part in message.content:
            if isinstance(part, Text) and part.omitted_image_mime_type is not None:
                if part.unread_image_sha256 is None:
                    count += 1
                    first = index if first is None else first
    return count, first
