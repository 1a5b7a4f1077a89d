from __future__ import annotations

import hashlib
import json

from llmcore.archive import IMAGE_BUDGET, ArchiveStore, Conversation, ConversationState, kept_images
from llmcore.archive.images import image_extension, image_file_name
from llmcore.messages import Image, Message, Text

from .helpers import png


def _history(*sizes_or_images):
    """One user message per image, oldest first."""
    out = []
    for index, value in enumerate(sizes_or_images):
        image = (
            value
            if isinstance(value, Image)
            else Image(data=_blob(index, value), mime_type="image/png")
        )
        out.append(Message.user(f"image {index}", image))
    return tuple(out)


def _blob(seed: int, size: int) -> bytes:
    if size == 0:
        return b""
    return png(bytes([seed % 256]) * max(0, size - 8))[:size] if size >= 8 else bytes([seed]) * size


def test_budget_is_20_mib():
    assert IMAGE_BUDGET == 20_971_520


def test_image_that_fits_to_the_byte_is_kept():
    history = _history(IMAGE_BUDGET - 100, 100)
    plan = kept_images(history)
    assert plan.omitted == 0
    assert plan.kept_bytes == IMAGE_BUDGET
    assert len(plan.kept) == 2


def test_one_byte_over_omits_that_image_and_every_older_one():
    history = _history(10, IMAGE_BUDGET - 100, 101, 5)
    plan = kept_images(history)
    newest = history[3].content[1]
    assert plan.kept == frozenset({newest.sha256, history[2].content[1].sha256})
    # The 20 MiB - 100 image does not fit after 5 + 101 bytes: it and the older 10-byte one go.
    assert plan.omitted == 2
    assert plan.kept_bytes == 106


def test_same_image_twice_counts_once_at_its_newest_position():
    shared = Image(data=_blob(200, IMAGE_BUDGET // 2), mime_type="image/png")
    history = _history(shared, IMAGE_BUDGET // 2, shared)
    plan = kept_images(history)
    assert plan.kept_bytes == IMAGE_BUDGET // 2 * 2
    assert plan.omitted == 0
    assert len(plan.files) == 2


def test_older_copy_of_kept_image_stays_an_image_after_the_budget_is_full():
    shared = Image(data=_blob(200, 1000), mime_type="image/png")
    history = _history(shared, IMAGE_BUDGET, 10, shared)
    plan = kept_images(history)
    # newest first: shared (1000) kept, 10 kept, the 20 MiB one does not fit, shared again stays.
    assert shared.sha256 in plan.kept
    assert plan.omitted == 1
    state = ConversationState(history=history)
    from llmcore.archive import encode

    blocks = [
        json.loads(encode(state, kept_images=plan.kept))["history"][i]["content"][1]["type"]
        for i in range(4)
    ]
    assert blocks == ["image", "imageOmitted", "image", "image"]


def test_zero_byte_image_is_kept_and_stored_as_an_empty_file(tmp_path):
    empty = Image(data=b"", mime_type="image/webp")
    history = _history(IMAGE_BUDGET, empty)
    plan = kept_images(history)
    assert empty.sha256 in plan.kept
    assert plan.kept_bytes == IMAGE_BUDGET
    store = ArchiveStore(tmp_path / "agent", image_budget=100)
    conv = Conversation(ConversationState(history=(Message.user("x", empty),)))
    store.save(conv)
    name = image_file_name(hashlib.sha256(b"").hexdigest(), "image/webp")
    assert (tmp_path / "agent" / "images" / name).read_bytes() == b""
    assert store.load().state.history[0].content[1] == empty


def test_image_bigger_than_the_whole_budget_is_omitted_with_every_older_one():
    history = _history(5, IMAGE_BUDGET + 1, 7)
    plan = kept_images(history)
    assert plan.kept == frozenset({history[2].content[1].sha256})
    assert plan.omitted == 2


def test_budget_through_a_save_writes_imageOmitted_and_no_file(tmp_path):
    store = ArchiveStore(tmp_path / "agent", image_budget=1000)
    history = _history(600, 400, 1)  # newest first: 1 + 400 fit (401), 600 does not
    conv = Conversation(ConversationState(history=history))
    result = store.save(conv)
    assert result.images_omitted == 1
    doc = json.loads((tmp_path / "agent" / "conversation.json").read_bytes())
    assert [m["content"][1]["type"] for m in doc["history"]] == ["imageOmitted", "image", "image"]
    assert len(list((tmp_path / "agent" / "images").iterdir())) == 2
    # The open conversation keeps its image in memory (A6); a reopened one has the placeholder.
    assert isinstance(conv.history[0].content[1], Image)
    assert store.load().state.history[0].content[1] == Text.omitted_image("image/png")


def test_extensions():
    assert [
        image_extension(m)
        for m in ("image/png", "image/jpeg", "image/gif", "image/webp", "image/heic")
    ] == ["png", "jpg", "gif", "webp", "bin"]


def test_missing_or_mismatching_file_reads_as_omitted(tmp_path):
    store = ArchiveStore(tmp_path / "agent")
    a = Image(data=png(b"a" * 50), mime_type="image/png")
    b = Image(data=png(b"b" * 50), mime_type="image/png")
    store.save(Conversation(ConversationState(history=(Message.user("x", a, b),))))
    images = tmp_path / "agent" / "images"
    (images / image_file_name(a.sha256, "image/png")).unlink()
    (images / image_file_name(b.sha256, "image/png")).write_bytes(png(b"c" * 50))
    content = store.load().state.history[0].content
    assert content[1] == Text.omitted_image("image/png")
    assert content[2] == Text.omitted_image("image/png")
