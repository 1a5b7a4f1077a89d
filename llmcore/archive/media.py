"""The images and unread images of a history, kept across saves (SPEC A5–A7).

A save needs, for the whole history, which images the budget keeps (A6), which files they
name, and which unread images (:attr:`~llmcore.messages.Text.unread_image_sha256`) it must keep
(A7). :class:`MediaIndex` keeps each message's images with their hashes and file names from
the previous save and looks at the messages that are new since, so a save after one more turn
scans one turn, not the history. It leaves out the files themselves
(:mod:`llmcore.archive.store`).
"""

from __future__ import annotations

from collections.abc import Sequence

from llmcore.messages import Image, Message, Text

from .fragments import same_prefix
from .images import DigestCache, ImagePlan, image_file_name, plan_newest_first

__all__ = ["MediaIndex"]


class MediaIndex:
    """Each message's image places, for the history of the latest :meth:`update`.

    Args:
        digests: Where image hashes come from (each image is hashed at most once).
    """

    __slots__ = ("_digests", "_ends", "_images", "_messages", "_unread")

    def __init__(self, digests: DigestCache) -> None:
        self._digests = digests
        self._messages: Sequence[Message] = ()  # held: the places below belong to them
        self._images: list[tuple[str, Image, str]] = []  # (sha256, image, file name), oldest first
        self._unread: list[tuple[str, str]] = []  # (file name, sha256) of each unread image
        self._ends: list[tuple[int, int]] = []  # per message: both lengths after it

    def update(self, history: Sequence[Message]) -> None:
        """Take ``history``; only messages that are not the same objects at their places are read.

        Forgets (in the digest cache) the images of messages no longer in the history, once
        they are as many as the images the history holds.
        """
        same = same_prefix(self._messages, history)
        del self._ends[same:]
        images, unread = self._ends[-1] if self._ends else (0, 0)
        del self._images[images:], self._unread[unread:]
        for message in history[same:]:
            for part in message.content:
                if isinstance(part, Image):
                    sha = self._digests(part)
                    self._images.append((sha, part, image_file_name(sha, part.mime_type)))
                elif isinstance(part, Text) and part.unread_image_sha256 is not None:
                    sha = part.unread_image_sha256
                    name = image_file_name(sha, part.omitted_image_mime_type or "")
                    self._unread.append((name, sha))
            self._ends.append((len(self._images), len(self._unread)))
        self._messages = history
        if len(self._digests) > 2 * len(self._images) + 64:
            self._digests.retain_images(image for _, image, _ in self._images)

    def plan(self, budget: int) -> ImagePlan:
        """The budget of A6 over the history (:func:`~llmcore.archive.images.kept_images`)."""
        return plan_newest_first(self._images[::-1], budget)

    def unread(self) -> dict[str, str]:
        """File name → SHA-256 of every unread image in the history."""
        return dict(self._unread)
