"""Every kind of body the suite builds fits the official SDK request TypedDicts, key by key.

Checked: the provider golden bodies, every corpus case imported and rebuilt, and generated
conversations for all four providers (the property-test strategies). A planted unknown key, at
the top level and deep inside a message, proves the check fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.errors import UnsupportedContentError
from llmcore.providers import PROVIDER_NAMES, get_provider
from llmcore.providers.base import EncodeCache
from tests.examples import examples
from tests.sdk_types.keycheck import ALLOWED, check_body
from tests.strategies import conversations

TESTS = Path(__file__).resolve().parents[1]
GOLDEN = sorted((TESTS / "providers" / "golden").glob("*/*.json"))
IMPORTABLE = ("anthropic", "openai-chat", "openai-responses")


@pytest.mark.parametrize("path", GOLDEN, ids=[f"{p.parent.name}/{p.stem}" for p in GOLDEN])
def test_golden_bodies_fit_sdk_types(path):
    assert path.parent.name in ALLOWED
    assert check_body(path.parent.name, json.loads(path.read_bytes())) == []


@pytest.mark.parametrize("api", IMPORTABLE)
def test_rebuilt_corpus_bodies_fit_sdk_types(api):
    provider = get_provider(api)
    checked = 0
    problems = {}
    for path in sorted((TESTS / "corpus" / api).glob("*.json")):
        body = json.loads(path.read_bytes())["request"]
        if not isinstance(body, dict):
            continue
        try:
            request = provider.import_body(body).request
            built = provider.build_body(request)
        except (UnsupportedContentError, ValueError, LookupError) as exc:
            if isinstance(exc, UnsupportedContentError):
                continue
            raise
        except Exception:  # noqa: BLE001 - cases outside the classes fail in tests/corpus_tests
            continue
        checked += 1
        errors = check_body(api, json.loads(built))
        if errors:
            problems[path.stem] = errors[:3]
    assert checked > 50
    assert problems == {}


@pytest.mark.full_count
@pytest.mark.parametrize("provider", PROVIDER_NAMES)
@settings(max_examples=examples(full=150, sample=50))
@given(data=st.data())
def test_generated_bodies_fit_sdk_types(provider, data):
    conversation = data.draw(conversations(provider), label="conversation")
    p = get_provider(provider)
    cache = EncodeCache()
    for request in conversation.requests():
        body = json.loads(p.build_body(request, cache=cache))
        assert check_body(provider, body) == []


def test_planted_unknown_keys_fail():
    body = json.loads(
        (TESTS / "providers" / "golden" / "anthropic" / "tool-loop.json").read_bytes()
    )
    assert check_body("anthropic", body) == []
    body["surprise"] = 1
    assert check_body("anthropic", body) == [
        "$.surprise: unknown key for MessageCreateParamsNonStreaming"
    ]
    del body["surprise"]
    body["messages"][0]["content"][0]["colour"] = "red"
    errors = check_body("anthropic", body)
    assert errors and all("colour" in e for e in errors)
    chat = json.loads(
        (TESTS / "providers" / "golden" / "openai-chat" / "tool-loop.json").read_bytes()
    )
    chat["messages"][-1]["extra_field"] = True
    assert any("extra_field" in e for e in check_body("openai-chat", chat))
    # OpenRouter's own field is allowed for OpenRouter only.
    chat["messages"][-1].pop("extra_field")
    chat["cache_control"] = {"type": "ephemeral"}
    assert check_body("openrouter", chat) == []
    assert check_body("openai-chat", chat) == [
        "$.cache_control: unknown key for CompletionCreateParamsNonStreaming"
    ]


def test_wrong_value_types_fail():
    body = json.loads(
        (TESTS / "providers" / "golden" / "anthropic" / "tool-loop.json").read_bytes()
    )
    body["max_tokens"] = "many"
    body["messages"][0]["role"] = "narrator"
    errors = check_body("anthropic", body)
    assert any(e.startswith("$.max_tokens") for e in errors)
    assert any(e.startswith("$.messages[0]") for e in errors)
