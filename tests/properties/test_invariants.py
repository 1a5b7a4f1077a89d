"""SPEC P4 (prefix) and P5 (reopen) for every provider, plus encode-cache equivalence.

One generated conversation (:func:`tests.strategies.conversations`) per example drives all three
checks, so each runs once per example (400 per provider in the suite, fewer under the ``dev``
profile; ``benchmarks/bench_properties.py`` runs 2,000 per provider):

* **Encode cache.** The conversation is built request by request, the way an agent loop builds
  it: with one :class:`~llmcore.providers.base.EncodeCache` carried along, and cold. Both give
  the same bytes, and the cached build encodes every new message (those after the longest
  prefix it shares with the previous request) plus at most the two messages whose breakpoint
  moved (P3's (3) and (4)); every other message is joined from storage
  (``tests/providers/test_history.py`` pins the exact set).
* **P4.** Request N+1's wire items (``messages[i]``, Responses ``input[i]``) are request N's
  items, byte for byte once ``cache_control`` / ``prompt_cache_breakpoint`` members are deleted,
  followed by new ones; every other top-level member (model, system, tools, params) unchanged.
  The comparison lives in :mod:`tests.properties.wire` and reads bodies on its own.
* **P5.** At a drawn step the history is saved in the A3 JSON form
  (:func:`llmcore.blocks.encode_message`, images inline) as :mod:`llmcore.jsonbytes` bytes, read
  back with ``jsonbytes.loads`` and :func:`llmcore.blocks.decode_message` into a fresh object
  graph, and the conversation continues from it with a fresh cache: every body from there on
  equals, byte for byte, the body built while the conversation stayed open.

1 MB tool results are drawn rarely in the main test (about one tool step in
:data:`~tests.strategies.HUGE_RESULT_ONE_IN`); a second test makes one certain in a few examples
per provider, so the heavy case always runs without dominating the suite's time.
"""

from __future__ import annotations

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.blocks import decode_message, encode_message
from llmcore.messages import Message
from llmcore.providers import PROVIDER_NAMES, get_provider
from llmcore.providers.base import EncodeCache
from tests.examples import examples
from tests.properties.wire import first_difference, prefix_break
from tests.strategies import MEGABYTE, Conversation, conversations

MOVABLE_BREAKPOINTS = {"anthropic": 2, "openrouter": 2, "openai-chat": 0, "openai-responses": 0}
"""Old messages whose encoding options may change between two requests: the previous (3), (4)."""


def record_events(conversation: Conversation) -> None:
    """Label the example so ``--hypothesis-show-statistics`` shows how often each case ran."""
    history = conversation.history()
    parts = [p for m in history for p in m.content]
    if any(len(step) > 1 and sum(len(m.content) for m in step) > 20 for step in conversation.steps):
        event("a step adds more than 20 blocks")
    if any(p.type == "tool_result" and len(p.content) >= MEGABYTE for p in parts):
        event("a 1 MB tool result")
    if any(sum(p.type == "image" for p in m.content) > 20 for m in history):
        event("a message with more than 20 images")
    if any(p.type == "text" and p.omitted_image_mime_type for p in parts):
        event("an omitted image")
    if any(
        p.type == "tool_call" and not p.arguments.decode("utf-8", "replace").startswith("{")
        for p in parts
    ):
        event("tool arguments that are not a JSON object")


def reopen(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Save ``messages`` as A3 JSON bytes and read them back as new objects."""
    saved = jsonbytes.dumps([encode_message(m) for m in messages])
    parsed = jsonbytes.loads(saved)
    return tuple(decode_message(obj, f"$[{i}]") for i, obj in enumerate(parsed))


def build_open(provider: str, conversation: Conversation) -> list[bytes]:
    """Build every request with a carried cache; check it against cold builds and P4."""
    p = get_provider(provider)
    cache = EncodeCache()
    bodies: list[bytes] = []
    previous: tuple[Message, ...] = ()
    for number, request in enumerate(conversation.requests()):
        misses, hits = cache.misses, cache.hits
        body = p.build_body(request, cache=cache)
        cold = p.build_body(request)
        assert body == cold, (
            f"request {number}: cached build != cold build: {first_difference(body, cold)}"
        )
        shared = 0
        while shared < min(len(previous), len(request.messages)) and (
            previous[shared] == request.messages[shared]
        ):
            shared += 1
        new = len(request.messages) - shared
        encoded = cache.misses - misses
        assert new <= encoded <= new + MOVABLE_BREAKPOINTS[provider], (
            f"request {number}: the cached build encoded {encoded} messages for {new} new ones"
        )
        assert cache.hits - hits == len(request.messages) - encoded
        if bodies:
            problem = prefix_break(provider, bodies[-1], body)
            assert problem is None, (
                f"P4 broken between requests {number - 1} and {number}: {problem}"
            )
        bodies.append(body)
        previous = request.messages
    return bodies


def check_reopen(
    provider: str, conversation: Conversation, save_at: int, bodies: list[bytes]
) -> None:
    """Save after step ``save_at``, reopen, continue: the bodies equal the stayed-open ones."""
    p = get_provider(provider)
    saved = conversation.history(save_at)
    restored = reopen(saved)
    assert restored == saved
    assert all(a is not b for a, b in zip(restored, saved, strict=True))
    cache = EncodeCache()
    for number in range(save_at, len(conversation.steps)):
        later = conversation.history(number)[len(saved) :]
        body = p.build_body(conversation.request(restored + later), cache=cache)
        assert body == bodies[number], (
            f"P5: request {number} after reopening at step {save_at}: {first_difference(bodies[number], body)}"
        )


@pytest.mark.full_count
@pytest.mark.parametrize("provider", PROVIDER_NAMES)
@settings(max_examples=examples(full=2000, sample=100))
@given(data=st.data())
def test_p4_p5_encode_cache(provider, data):
    conversation = data.draw(conversations(provider), label="conversation")
    save_at = data.draw(st.integers(0, len(conversation.steps) - 1), label="save after step")
    record_events(conversation)
    bodies = build_open(provider, conversation)
    check_reopen(provider, conversation, save_at, bodies)


@pytest.mark.full_count
@pytest.mark.parametrize("provider", PROVIDER_NAMES)
@settings(max_examples=examples(full=6, sample=2))
@given(data=st.data())
def test_p4_p5_encode_cache_with_a_1mb_result(provider, data):
    conversation = data.draw(conversations(provider, huge=True), label="conversation")
    assert any(
        p.type == "tool_result" and len(p.content) == MEGABYTE
        for m in conversation.history()
        for p in m.content
    )
    save_at = data.draw(st.integers(0, len(conversation.steps) - 1), label="save after step")
    bodies = build_open(provider, conversation)
    check_reopen(provider, conversation, save_at, bodies)
