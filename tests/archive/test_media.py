"""A save's incremental scans give what a scan of the whole history gives (SPEC A6, A7).

:class:`~llmcore.archive.media.MediaIndex` (the budget's plan and the unread images) and
:class:`~llmcore.checks.UnpairedScan` keep what they found in the previous history and read only
the messages that are not the same objects at their places; across any run of histories —
grown, compacted, cut, a message replaced, rebuilt from value-equal messages — each answer must equal the full
scan's: :func:`~llmcore.archive.images.kept_images` and :func:`~llmcore.checks.unpaired`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import checks
from llmcore.archive.images import DigestCache, image_file_name, kept_images
from llmcore.archive.media import MediaIndex
from llmcore.messages import Message, Text, ToolCall, ToolResult
from tests.strategies import images, omitted_images, user_messages

_UNREAD = st.builds(
    lambda sha, mime: Text.omitted_image(mime, unread_sha256=sha),
    st.sampled_from(["a" * 64, "b" * 64]),
    st.sampled_from(["image/png", "image/jpeg"]),
)
_CALL = st.sampled_from(["c1", "c2"])
_MESSAGE = st.one_of(
    user_messages(),
    st.builds(
        lambda parts: Message(role="user", content=tuple(parts)),
        st.lists(st.one_of(images(), omitted_images(), _UNREAD), min_size=1, max_size=3),
    ),
    st.builds(lambda i: Message.assistant(ToolCall(id=i, name="f", arguments=b"{}")), _CALL),
    st.builds(lambda i: Message.tool(ToolResult(call_id=i, tool_name="f", content=b"r")), _CALL),
    st.builds(Message.assistant, st.just("done")),
)
_STEP = st.one_of(
    st.tuples(st.just("append"), st.lists(_MESSAGE, min_size=1, max_size=3)),
    st.tuples(st.just("cut"), st.integers(0, 6)),
    st.tuples(st.just("drop first"), st.integers(1, 3)),
    st.tuples(st.just("copies"), st.none()),  # value-equal messages, every one a new object
    st.tuples(st.just("replace"), st.tuples(st.integers(0, 8), _MESSAGE)),  # the same length
)


def _apply(history: tuple[Message, ...], step: tuple[str, Any]) -> tuple[Message, ...]:
    kind, arg = step
    if kind == "append":
        return history + tuple(arg)
    if kind == "cut":
        return history[: len(history) - arg] if arg else history
    if kind == "drop first":
        return history[arg:]
    if kind == "replace":
        at, message = arg
        if not history:
            return (message,)
        at %= len(history)
        return (*history[:at], message, *history[at + 1 :])
    return tuple(dataclasses.replace(message) for message in history)


def _unread(history: tuple[Message, ...]) -> dict[str, str]:
    return {
        image_file_name(p.unread_image_sha256, p.omitted_image_mime_type or ""): (
            p.unread_image_sha256
        )
        for m in history
        for p in m.content
        if isinstance(p, Text) and p.unread_image_sha256 is not None
    }


@settings(max_examples=80, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=8), budget=st.integers(0, 200))
def test_the_incremental_scans_answer_as_the_full_scans(steps, budget):
    digests = DigestCache()
    index, scan = MediaIndex(digests), checks.UnpairedScan()
    history: tuple[Message, ...] = ()
    for step in steps:
        history = _apply(history, step)
        index.update(history)
        assert index.plan(budget) == kept_images(history, budget)
        assert index.unread() == _unread(history)
        assert scan(history) == checks.unpaired(history)
