"""Saves through a store write what a plain encode writes, across budgets, unread files and opens.

The store hands :func:`llmcore.archive.encode` its fragment cache, digest cache and the plan of
its media index; these properties run sequences of turns, budget changes, image files that
become unreadable, go and come back, compactions and reopens, and compare every save's bytes
with an encode of the same state and plan without a cache (SPEC A2, A6, A7).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmcore.archive import ArchiveStore, Item, encode
from llmcore.archive.fs import FileSystem
from llmcore.archive.images import image_file_name, kept_images
from llmcore.messages import Image, Message, Text
from tests.examples import examples

from .helpers import turn

_PAYLOADS = [bytes([n]) * (8 + 8 * n) for n in range(4)]  # no signature: the declared type stays
_MIMES = ["image/png", "image/gif"]


class _Faulty(FileSystem):
    """Image files named in ``broken`` cannot be read (EIO)."""

    def __init__(self) -> None:
        self.broken: set[str] = set()

    def read_bytes(self, path: Path) -> bytes:
        if path.name in self.broken:
            raise OSError(errno.EIO, "Input/output error (injected)", str(path))
        return super().read_bytes(path)


def _checking_encoder(folder: Path, budget: list[int]) -> Any:
    def encoder(state: Any, **kwargs: Any) -> bytes:
        assert kwargs["kept_images"] == kept_images(state.history, budget[0]).kept
        unread = {
            p.unread_image_sha256
            for m in state.history
            for p in m.content
            if isinstance(p, Text) and p.unread_image_sha256 is not None
            if (
                folder
                / "images"
                / image_file_name(p.unread_image_sha256, p.omitted_image_mime_type or "")
            ).exists()
        }
        assert set(kwargs["kept_unread"]) == unread
        data = encode(state, **kwargs)
        plain = dict(kwargs, fragments=None, digest=None)
        assert data == encode(state, **plain)
        return data

    return encoder


def _names() -> list[str]:
    out = []
    for payload in _PAYLOADS:
        sha = hashlib.sha256(payload).hexdigest()
        out += [image_file_name(sha, mime) for mime in _MIMES]
    return out


_NAMES = _names()


def _assert_images_there(folder: Path, data: bytes) -> None:
    """Every ``image`` block of the file names a file holding its bytes (A5, A7)."""
    for message in json.loads(data)["history"]:
        for block in message["content"]:
            if block["type"] == "image":
                name = image_file_name(block["sha256"], block["mimeType"])
                path = folder / "images" / name
                assert hashlib.sha256(path.read_bytes()).hexdigest() == block["sha256"], name


class _Run:
    """One store saving a conversation after each step; a reopen makes a new store."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.fs, self.budget, self.count = folder, _Faulty(), [10_000], 0
        self.store = self._store()
        self.conv = self.store.open()

    def _store(self) -> ArchiveStore:
        encoder = _checking_encoder(self.folder, self.budget)
        return ArchiveStore(self.folder, fs=self.fs, image_budget=self.budget[0], encoder=encoder)

    def _turn(self, *messages: Message) -> None:
        self.conv.end_turn(messages=[*messages, Message.assistant("ok")], provider="a", model="m")

    def turn(self, arg: int, mime: str) -> None:
        self._turn(
            Message(
                role="user", content=(Text(text="t"), Image(data=_PAYLOADS[arg], mime_type=mime))
            )
        )

    def same_image_again(self, arg: int, mime: None) -> None:  # one Image in two messages
        images = [p for m in self.conv.history for p in m.content if isinstance(p, Image)]
        if images:
            self._turn(
                Message(role="user", content=(Text(text="again"), images[arg % len(images)]))
            )

    def two_of_one(self, arg: int, mime: None) -> None:  # the same bytes as two types
        parts = tuple(Image(data=_PAYLOADS[arg], mime_type=m) for m in _MIMES)
        self._turn(Message(role="user", content=(Text(text="two"), *parts)))

    def budget_to(self, arg: int, mime: None) -> None:
        self.budget[0] = self.store.image_budget = arg

    def break_file(self, arg: int, mime: None) -> None:
        self.fs.broken.add(_NAMES[arg])

    def mend_file(self, arg: int, mime: None) -> None:
        self.fs.broken.discard(_NAMES[arg])

    def remove_file(self, arg: int, mime: None) -> None:
        path = self.folder / "images" / _NAMES[arg]
        if path.is_file():
            os.unlink(path)

    def compact(self, arg: int, mime: None) -> None:
        starts = [i for i, m in enumerate(self.conv.history) if m.role == "user"]
        if len(starts) > 1:
            keep = starts[-1 - arg % (len(starts) - 1)]
            summary = Message(role="user", content=(Text(text="# Conversation so far\ns"),))
            notice = Item.make(id=f"c{self.count}", type="notice", text="compacted")
            self.conv.compact(summary=summary, keep_from=keep, notice=notice, kept_turn_starts=[1])

    def item(self, arg: int, mime: None) -> None:
        self.conv.add_items([Item.make(id=f"i{self.count}", type="user", text=f"t{arg}")])

    def reopen(self, arg: None, mime: None) -> None:
        self.store = self._store()
        self.conv = self.store.open()

    def step(self, kind: str, arg: Any, mime: Any) -> None:
        self.count += 1
        getattr(self, kind)(arg, mime)
        if kind != "reopen" and not self.conv.state.is_empty:
            self.store.save(self.conv)
            _assert_images_there(self.folder, (self.folder / "conversation.json").read_bytes())
            assert ArchiveStore(self.folder, fs=self.fs).load().notice is None


_STEP = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 3), st.sampled_from(_MIMES)),
    st.tuples(st.just("same_image_again"), st.integers(0, 50), st.none()),
    st.tuples(st.just("two_of_one"), st.integers(0, 3), st.none()),
    st.tuples(st.just("budget_to"), st.integers(0, 120), st.none()),
    st.tuples(st.just("break_file"), st.integers(0, 7), st.none()),
    st.tuples(st.just("mend_file"), st.integers(0, 7), st.none()),
    st.tuples(st.just("remove_file"), st.integers(0, 7), st.none()),
    st.tuples(st.just("compact"), st.integers(0, 3), st.none()),
    st.tuples(st.just("item"), st.integers(0, 3), st.none()),
    st.tuples(st.just("reopen"), st.none(), st.none()),
)


@pytest.mark.full_count
@settings(
    max_examples=examples(full=2000, sample=200),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=st.lists(_STEP, min_size=1, max_size=10))
def test_every_save_writes_what_a_plain_encode_of_its_plan_writes(tmp_path_factory, steps):
    run = _Run(tmp_path_factory.mktemp("save") / "agent")
    for kind, arg, mime in steps:
        run.step(kind, arg, mime)


def test_an_image_dropped_by_the_budget_beside_its_unread_twin_is_written_omitted(tmp_path):
    # One message holds the same bytes as png and gif; the gif file cannot be read at the open,
    # so the message has an image and an unread image of one hash. The budget then drops the
    # image while the unread file stays: before, the save wrote the image's old ``image`` block
    # (the cache's key did not change) and removed its file as unreferenced.
    folder = tmp_path / "agent"
    payload = _PAYLOADS[3]
    parts = tuple(Image(data=payload, mime_type=m) for m in _MIMES)
    message = Message(role="user", content=(Text(text="two"), *parts))
    store = ArchiveStore(folder)
    conv = store.open()
    conv.end_turn(messages=[message, Message.assistant("ok")], provider="a", model="m")
    store.save(conv)
    fs = _Faulty()
    fs.broken.add(image_file_name(hashlib.sha256(payload).hexdigest(), "image/gif"))
    budget = [len(payload)]
    store = ArchiveStore(folder, fs=fs, image_budget=budget[0])
    conv = store.open()
    budget[0] = store.image_budget = len(payload) - 1
    store.encoder = _checking_encoder(folder, budget)
    conv.end_turn(messages=turn(1), provider="a", model="m")
    assert store.save(conv).action == "written"
    data = (folder / "conversation.json").read_bytes()
    blocks = json.loads(data)["history"][0]["content"]
    assert [b["type"] for b in blocks] == ["text", "imageOmitted", "image"]
    _assert_images_there(folder, data)
