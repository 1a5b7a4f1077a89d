"""SPEC P4 (prefix) and P5 (reopen) for every provider, plus encode-cache equivalence.

One generated conversation (:func:`tests.strategies.conversations`) per example drives all three
checks, so each runs once per example (the ``ci`` profile: 2,000 examples per provider):

* **Encode cache.** The conversation is built request by request, the way an agent loop builds
  it: with one :class:`~llmcore.providers.base.EncodeCache` carried along, and cold. Both give
  the same bytes, and the cached build encodes only the new messages plus at most the two
  messages whose breakpoint moved (P3's (3) and (4)); unchanged history is joined from storage.
* **P4.** Request N+1's wire items (``messages[i]``, Responses ``input[i]``) are request N's
  items, byte for byte once ``cache_control`` / ``prompt_cache_breakpoint`` members are deleted,
  followed by new ones; every other top-level member (model, system, tools, params) unchanged.
  The comparison lives in :mod:`tests.properties.wire` and reads bodies on its own.
* **P5.** At a drawn step the history is saved in the A3 JSON form
  (:func:`llmcore.blocks.encode_message`, images inline) as :mod:`llmcore.jsonbytes` bytes, read
  back with ``jsonbytes.loads`` and :func:`llmcore.blocks.decode_message` into a fresh object
  graph, and the conversation continues from it with a fresh cache: every body from there on
  equals, byte for byte, the body built while the conversation stayed open.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.blocks import decode_message, encode_message
from llmcore.messages import Message
from llmcore.providers import PROVIDER_NAMES, get_provider
from llmcore.providers.base import EncodeCache
from tests.properties.wire import first_difference, prefix_break
from tests.strategies import Conversation, conversations

MOVABLE_BREAKPOINTS = {"anthropic": 2, "openrouter": 2, "openai-chat": 0, "openai-responses": 0}
"""Old messages whose encoding options may change between two requests: the previous (3), (4)."""


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
    previous_len = 0
    for number, request in enumerate(conversation.requests()):
        misses = cache.misses
        body = p.build_body(request, cache=cache)
        cold = p.build_body(request)
        assert body == cold, f"request {number}: cached build != cold build: {first_difference(body, cold)}"
        new = len(request.messages) - previous_len
        encoded = cache.misses - misses
        assert encoded <= new + MOVABLE_BREAKPOINTS[provider], (
            f"request {number}: the cached build encoded {encoded} messages for {new} new ones"
        )
        if bodies:
            problem = prefix_break(provider, bodies[-1], body)
            assert problem is None, f"P4 broken between requests {number - 1} and {number}: {problem}"
        bodies.append(body)
        previous_len = len(request.messages)
    return bodies


def check_reopen(provider: str, conversation: Conversation, save_at: int, bodies: list[bytes]) -> None:
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


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
@given(data=st.data())
def test_p4_p5_encode_cache(provider, data):
    conversation = data.draw(conversations(provider), label="conversation")
    save_at = data.draw(st.integers(0, len(conversation.steps) - 1), label="save after step")
    bodies = build_open(provider, conversation)
    check_reopen(provider, conversation, save_at, bodies)
