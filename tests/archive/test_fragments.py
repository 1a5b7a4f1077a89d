"""The archive's fragment cache writes the bytes a plain encode writes, across any run of saves.

A save encodes only the messages and items it has not written before (issue: saving a long
conversation); these properties compare every cached encoding, in the same process and after a
decode filled the cache, with :func:`llmcore.archive.encode` without a cache, and the C writer
(orjson) with the module's own sorted writer.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.archive import ConversationState, Item, decode, encode
from llmcore.archive.codec import UNREAD, FragmentCache, Unread
from llmcore.archive.images import DigestCache, kept_images
from llmcore.errors import EncodingError
from llmcore.messages import Image, Message, Text
from tests.archive.helpers import conversation, png, turn
from tests.examples import examples
from tests.strategies import images, omitted_images, texts, user_messages

_KEYS = st.text(max_size=6)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=12),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)


def _outcome(write: Any, value: Any, indent: int | None) -> bytes | type[Exception]:
    try:
        result: bytes = write(value, indent=indent)
    except EncodingError:
        return EncodingError
    return result


@pytest.mark.full_count
@settings(max_examples=examples(full=400, sample=150))
@given(value=_VALUES, indent=st.sampled_from([None, 2]))
def test_float_free_sorted_writer_writes_what_dumps_sorted_writes(value, indent):
    expected = _outcome(jsonbytes.dumps_sorted, value, indent)
    assert _outcome(jsonbytes.dumps_sorted_float_free, value, indent) == expected


def test_float_free_sorted_writer_escapes_every_code_point_as_dumps_sorted():
    text = "".join(chr(c) for c in range(0x3000) if not 0xD800 <= c < 0xE000) + "\U0001f600"
    keys = {chr(c): c for c in (0x7F, 0xE9, 0x2028, 0x10000, 0x41, 0x20)}
    value = {"t": text, "keys": keys, "raw": jsonbytes.Raw('{"a": 1}')}
    for indent in (None, 2):
        assert jsonbytes.dumps_sorted_float_free(value, indent=indent) == jsonbytes.dumps_sorted(
            value, indent=indent
        )


def test_float_free_sorted_writer_refuses_what_dumps_sorted_refuses():
    for bad in ({"s": "\ud800"}, {1: "x"}, {"n": 2**64 + 1, "s": "\udfff"}):
        with pytest.raises(EncodingError):
            jsonbytes.dumps_sorted_float_free(bad, indent=2)
    # Exact floats (a subclass) are written by the module's writer, keeping their text.
    value = {"f": jsonbytes.loads("1e-05", exact_floats=True)}
    assert jsonbytes.dumps_sorted_float_free(value, indent=2) == jsonbytes.dumps_sorted(
        value, indent=2
    )


_UNREAD = st.builds(
    lambda mime, n: Text.omitted_image(mime, unread_sha256=f"{n:064x}"),
    st.sampled_from(["image/png", "image/jpeg"]),
    st.integers(0, 7),
)
_MESSAGE = st.one_of(
    user_messages(),
    st.builds(lambda t: Message.assistant(t), st.text(min_size=1, max_size=12)),
    st.builds(
        lambda parts: Message(role="user", content=tuple(parts)),
        st.lists(st.one_of(images(), omitted_images(), _UNREAD), min_size=1, max_size=3),
    ),
)
_ITEM = st.builds(
    lambda i, text: Item.make(id=f"i{i}", type="assistant", text=text),
    st.integers(0, 50),
    texts(),
)

_STEP = st.one_of(
    st.tuples(st.just("append"), st.lists(_MESSAGE, min_size=1, max_size=3)),
    st.tuples(st.just("items"), st.lists(_ITEM, max_size=3)),
    st.tuples(st.just("budget"), st.integers(0, 400)),
    st.tuples(st.just("unread"), st.integers(0, 255)),
    st.tuples(st.just("compact"), st.integers(0, 4)),
    st.tuples(st.just("reorder"), st.integers(0, 6)),
    st.tuples(st.just("reopen"), st.none()),
)


def _apply(state: ConversationState, step: tuple[str, Any]) -> ConversationState:
    kind, arg = step
    if kind == "append":
        return dataclasses.replace(state, history=state.history + tuple(arg))
    if kind == "items":
        return dataclasses.replace(state, items=state.items + tuple(arg))
    if kind == "compact":  # a summary, then a tail of the old history
        summary = Message(role="user", content=(Text(text="# Conversation so far\nsummary"),))
        return dataclasses.replace(state, history=(summary, *state.history[-arg:][:arg]))
    if kind == "reorder":  # items moved: the runs they were written in break up
        items = list(state.items)
        if items:
            items.insert(arg % (len(items) + 1), items.pop(0))
        return dataclasses.replace(state, items=tuple(items))
    return state


def _images_of(state: ConversationState) -> dict[str, bytes]:
    return {p.sha256: p.data for m in state.history for p in m.content if isinstance(p, Image)}


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=8), first=st.integers(0, 4))
def test_every_cached_encoding_equals_a_plain_encode(steps, first):
    state = conversation(first, image_every=2, image_size=32)
    cache, digests = FragmentCache(), DigestCache()
    budget: int | None = None
    unread_mask = 0  # which of the eight unread-image hashes still have their file
    for step in steps:
        if step[0] == "budget":
            budget = step[1]
        if step[0] == "unread":
            unread_mask = step[1]
        state = _apply(state, step)
        kept = None if budget is None else kept_images(state.history, budget).kept
        on = [f"{n:064x}" for n in range(8) if unread_mask >> n & 1]
        written = encode(state, kept_images=kept, fragments=cache, digest=digests, kept_unread=on)
        assert written == encode(state, kept_images=kept, kept_unread=on)
        if step[0] == "reopen":  # a new cache filled by the decode, as a store's open does
            on_disk: dict[str, bytes | Unread] = {**_images_of(state), **dict.fromkeys(on, UNREAD)}
            cache, digests = FragmentCache(), DigestCache()
            state = decode(
                written,
                load_image=lambda sha, mime, found=on_disk: found.get(sha),
                fragments=cache,
                digests=digests,
            )
            budget = None
            again = encode(state, fragments=cache, digest=digests, kept_unread=on)
            assert again == encode(state, kept_unread=on) == written


def test_a_decode_fills_the_cache_so_an_unchanged_encode_makes_no_new_piece(monkeypatch):
    state = conversation(5, image_every=2)
    written = encode(state)
    on_disk = _images_of(state)
    cache, digests = FragmentCache(), DigestCache()
    reopened = decode(
        written, load_image=lambda sha, mime: on_disk.get(sha), fragments=cache, digests=digests
    )
    made: list[Any] = []
    real = jsonbytes.dumps_sorted_float_free
    monkeypatch.setattr(
        jsonbytes, "dumps_sorted_float_free", lambda v, **k: made.append(v) or real(v, **k)
    )
    assert encode(reopened, fragments=cache, digest=digests) == written
    assert made == []  # nothing encoded again: every message and item came from the file's decode
    grown = dataclasses.replace(reopened, history=reopened.history + (Message.assistant("x"),))
    assert encode(grown, fragments=cache, digest=digests) == encode(grown)
    assert len(made) == 1  # only the new message


def test_a_file_whose_images_are_missing_fills_the_cache_with_what_a_save_writes():
    state = conversation(3, image_every=1)
    written = encode(state)
    cache = FragmentCache()
    reopened = decode(written, load_image=lambda sha, mime: None, fragments=cache)
    assert encode(reopened, fragments=cache) == encode(reopened)
    assert b'"imageOmitted"' in encode(reopened, fragments=cache)


def test_a_save_asks_again_only_the_messages_whose_images_changed_status(monkeypatch):
    from llmcore.archive import _history

    state = conversation(40, image_every=1, image_size=32)
    with_images = [m for m in state.history if any(isinstance(p, Image) for p in m.content)]
    size = next(len(p.data) for p in with_images[0].content if isinstance(p, Image))
    cache, digests = FragmentCache(), DigestCache()
    plan = kept_images(state.history, 30 * size, digest=digests)  # the 30 newest images fit
    encode(state, kept_images=plan.kept, fragments=cache, digest=digests)
    asked: list[Message] = []
    real = _history._Media.variant
    monkeypatch.setattr(
        _history._Media, "variant", lambda self, m: asked.append(m) or real(self, m)
    )
    new = tuple(turn(90, image=png(b"\x01\x02\x03\x04" * 8)))
    grown = dataclasses.replace(state, history=state.history + new)
    plan = kept_images(grown.history, 30 * size, digest=digests)  # one image in, the oldest out
    written = encode(grown, kept_images=plan.kept, fragments=cache, digest=digests)
    assert written == encode(grown, kept_images=plan.kept)
    dropped = with_images[-30]
    assert {id(m) for m in asked} == {id(dropped)} | {id(m) for m in new if m in asked}
    assert any(m is dropped for m in asked) and len(asked) <= 1 + len(new)
    asked.clear()
    assert encode(grown, kept_images=plan.kept, fragments=cache, digest=digests) == written
    assert asked == []  # the same plan again: no message is asked


def test_an_image_and_an_unread_image_of_one_hash_in_one_message_are_asked_apart():
    # One message holds an image and an unread image of the same bytes (two mime types, one
    # file unreadable). The budget drops the image while the unread one's file is there: the
    # message's variant must change, or the cached bytes keep the image's ``image`` block.
    image = Image(data=png(b"abc" * 10), mime_type="image/png")
    sha = image.sha256
    message = Message(
        role="user", content=(image, Text.omitted_image("image/gif", unread_sha256=sha))
    )
    state = ConversationState(history=(message, Message.assistant("ok")))
    cache, digests = FragmentCache(), DigestCache()
    for kept, unread in (({sha}, ()), (set(), {sha}), ({sha}, ()), ({sha}, {sha}), (set(), ())):
        written = encode(
            state, kept_images=kept, kept_unread=unread, fragments=cache, digest=digests
        )
        assert written == encode(state, kept_images=kept, kept_unread=unread)


@given(
    size=st.integers(0, 12), keep=st.integers(0, 12), extra=st.integers(0, 3), equal=st.booleans()
)
def test_same_prefix_counts_the_leading_elements_that_are_the_very_objects(
    size, keep, extra, equal
):
    from llmcore.archive.fragments import same_prefix

    old = [[n] for n in range(size)]
    # an equal but distinct object stops the prefix as a different one does
    new = old[:keep] + [[n] if equal else ["x"] for n in range(keep, size)][:1] + old[keep + 1 :]
    new += [["tail"]] * extra
    expected = 0
    while expected < min(len(old), len(new)) and old[expected] is new[expected]:
        expected += 1
    assert same_prefix(old, new) == expected
    assert same_prefix(old, old) == len(old)
