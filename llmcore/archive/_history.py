"""The ``history`` array of ``conversation.json``: messages and their image blocks (SPEC A1, A6).

A message's bytes depend on which of its images the budget keeps (A6): a kept image is an
``image`` block naming its hash, the others are ``imageOmitted``; an unread image (A7) keeps its
``image`` block while its file is there. :func:`history_json` writes the array, through the
:class:`~llmcore.archive.fragments.FragmentCache` when there is one, so a save encodes only the
messages it has not written before and asks again only those whose images changed status.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from llmcore import blocks
from llmcore.messages import Image, Message, Text

from .fragments import FragmentCache

__all__ = ["history_json"]

_UNREAD_TAG = "unread:"
"""What starts an unread image's hash in a message's variant (apart from its image hashes)."""


def history_json(
    history: Sequence[Message],
    fragments: FragmentCache | None,
    *,
    kept_images: Collection[str] | None,
    kept_unread: frozenset[str],
    digest: Callable[[Image], str] | None,
) -> Any:
    """Return the ``history`` array's JSON value (pieces of bytes with ``fragments``).

    Args:
        history: The messages, oldest first.
        fragments: The cache of earlier encodings, or ``None`` to encode every message.
        kept_images: SHA-256 hex of the images written as ``image``; ``None``: every image.
        kept_unread: SHA-256 hex of the unread images still on disk (written as ``image``).
        digest: Returns an image's SHA-256 hex (a cache); ``None`` hashes each image.
    """
    kept = None if kept_images is None else frozenset(kept_images)
    image_block = _image_encoder(kept, digest)
    omitted_block = _omitted_encoder(kept_unread)

    def make(message: Message) -> Any:
        return blocks.encode_message(message, image_block, omitted_block)

    if fragments is None:
        return [make(message) for message in history]
    names = _Media(kept, kept_unread, digest)
    return fragments.array(
        "history", history, names.variant, make, media=names.media, status=(kept, kept_unread)
    )


class _Media:
    """The image hashes of messages: all of them, and those written as ``image`` blocks."""

    __slots__ = ("digest", "kept", "kept_unread")

    def __init__(
        self,
        kept: frozenset[str] | None,
        kept_unread: frozenset[str],
        digest: Callable[[Image], str] | None,
    ) -> None:
        self.kept, self.kept_unread, self.digest = kept, kept_unread, digest

    def variant(self, message: Message) -> frozenset[str] | None:
        """The hashes of the message's images written as ``image``; ``None``: it has none.

        An unread image's hash is tagged (``unread:`` + hash): the same hash can be an image
        and an unread image of one message, written as ``image`` by either set.
        """
        found: list[str] | None = None
        for part in message.content:
            if isinstance(part, Image):
                found = found or []
                sha = part.sha256 if self.digest is None else self.digest(part)
                if self.kept is None or sha in self.kept:
                    found.append(sha)
            elif isinstance(part, Text) and part.unread_image_sha256 is not None:
                found = found or []
                if part.unread_image_sha256 in self.kept_unread:
                    found.append(_UNREAD_TAG + part.unread_image_sha256)
        return None if found is None else frozenset(found)

    def media(self, message: Message) -> frozenset[str]:
        """Every hash :meth:`variant` can name for the message: its images' and unread ones'."""
        names: set[str] = set()
        for part in message.content:
            if isinstance(part, Image):
                names.add(part.sha256 if self.digest is None else self.digest(part))
            elif isinstance(part, Text) and part.unread_image_sha256 is not None:
                names.add(part.unread_image_sha256)
        return frozenset(names)


def _image_encoder(
    kept: frozenset[str] | None, digest: Callable[[Image], str] | None
) -> Callable[[Image], dict[str, Any]]:
    """Return the ``image`` block writer: kept images by hash, others as ``imageOmitted``."""

    def image_block(part: Image) -> dict[str, Any]:
        sha = part.sha256 if digest is None else digest(part)
        if kept is not None and sha not in kept:
            return {"type": "imageOmitted", "mimeType": part.mime_type}
        return {"type": "image", "sha256": sha, "mimeType": part.mime_type}

    return image_block


def _omitted_encoder(kept_unread: frozenset[str]) -> blocks.OmittedEncoder:
    """Return the omitted-image writer: unread images still on disk keep their ``image`` block."""

    def omitted_block(part: Text) -> dict[str, Any]:
        sha = part.unread_image_sha256
        if sha is not None and sha in kept_unread:
            return {"type": "image", "sha256": sha, "mimeType": part.omitted_image_mime_type}
        return blocks.omitted_image_block(part)

    return omitted_block
