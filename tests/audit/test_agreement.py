"""The auditor and the emulator count the same prefix tokens (llmcore.tokens), independently.

They share no code (SPEC V4); ``llmcore bench`` compares the emulator's cache reads with the
auditor's theoretical maximum, so their token counts must agree item for item on real bodies.
"""

from __future__ import annotations

import json

from llmcore.audit import audit_bodies
from llmcore.audit.inputs import read_inputs
from llmcore.emulator import anthropic_cache, openai_cache, prefix

from .test_corpus import _corpus


def _emulator_tokens(provider: str, body: dict) -> int:
    if provider == "anthropic":
        return sum(item.tokens for item in anthropic_cache.linearize(body))
    api = "chat" if provider == "openai-chat" else "responses"
    return sum(prefix.measure(v)[1] for v in openai_cache.openai_items(api, body, []))


def test_total_tokens_agree_with_the_emulator_on_the_corpus():
    inputs, _ = read_inputs([_corpus()])
    compared = 0
    for inp in inputs:
        record = audit_bodies([inp]).requests[0]
        try:
            expected = _emulator_tokens(record.provider, json.loads(inp.body))
        except (AttributeError, KeyError, TypeError):
            continue  # a body the emulator would refuse before counting (its validator's job)
        assert record.total_tokens == expected, inp.source
        compared += 1
    assert compared >= 370
