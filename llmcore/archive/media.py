"""The images and unread images of a history, kept across saves (SPEC A5–A7).

A save needs, for the whole history, which images the budget keeps (A6), which files they
name, and which unread images (:attr:`~llmcore.messages.Text.unread_image_sha256`) it must keep
(A7). :class:`MediaIndex` keeps each message's images with their hashes and file names from
the previous save and looks at the messages that are new since, so a save after one more turn
scans one turn, not the history. It leaves out the files themselves
(:mod:`llmcore.archive.store`).
"""

from __future__ import annotations

import bisect
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

    __slots__ = (
        "_counts",
        "_digests",
        "_ends",
        "_files",
        "_images",
        "_messages",
        "_repeated",
        "_shas",
        "_totals",
        "_unread",
    )

    def __init__(self, digests: DigestCache) -> None:
        self._digests = digests
        self._messages: Sequence[Message] = ()  # held: the places below belong to them
        self._images: list[tuple[str, Image, str]] = []  # (sha256, image, file name), oldest first
        self._shas: list[str] = []  # the same places: each one's hash
        self._files: list[tuple[str, Image]] = []  # and each one's (file name, image)
        self._totals: list[int] = [0]  # bytes of the images before each place (and of all)
        self._counts: dict[str, int] = {}  # places per hash
        self._repeated = 0  # hashes at more than one place
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
        for sha in self._shas[images:]:
            self._count(sha, -1)
        del self._images[images:], self._shas[images:], self._files[images:]
        del self._totals[images + 1 :], self._unread[unread:]
        for message in history[same:]:
            for part in message.content:
                if isinstance(part, Image):
                    sha = self._digests(part)
                    name = image_file_name(sha, part.mime_type)
                    self._images.append((sha, part, name))
                    self._shas.append(sha)
                    self._files.append((name, part))
                    self._totals.append(self._totals[-1] + len(part.data))
                    self._count(sha, 1)
                elif isinstance(part, Text) and part.unread_image_sha256 is not None:
                    sha = part.unread_image_sha256
                    name = image_file_name(sha, part.omitted_image_mime_type or "")
                    self._unread.append((name, sha))
            self._ends.append((len(self._images), len(self._unread)))
        self._messages = history
        if len(self._digests) > 2 * len(self._images) + 64:
            self._digests.retain_images(image for _, image, _ in self._images)

    def _count(self, sha: str, step: int) -> None:
        count = self._counts.get(sha, 0) + step
        if count > 0:
            self._counts[sha] = count
        else:
            del self._counts[sha]
        if (count, step) in ((2, 1), (1, -1)):  # a hash now at two places, or back at one
            self._repeated += step

    def plan(self, budget: int) -> ImagePlan:
        """The budget of A6 over the history (:func:`~llmcore.archive.images.kept_images`).

        When no hash is at two places (no older copy of a kept image to keep, one file name
        per image), the budget keeps the newest images whose bytes fit: the longest run of
        them is found by bisection in the running totals, with no pass over the images.
        """
        if self._repeated:
            return plan_newest_first(self._images[::-1], budget)
        totals, count = self._totals, len(self._images)
        first = min(bisect.bisect_left(totals, totals[count] - budget), count)  # oldest kept
        return ImagePlan(
            kept=frozenset(self._shas[first:]),
            files=tuple(reversed(self._files[first:])),
            omitted=first,
            kept_bytes=totals[count] - totals[first],
        )

    def unread(self) -> dict[str, str]:
        """File name → SHA-256 of every unread image in the history."""
        return dict(self._unread)
