"""S1/S6: one test per secret pattern, the environment key, and scrubbing of whole values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.session import PATTERNS, find_secrets, scrub, scrub_text
from tests.examples import examples

SAMPLES = {
    "private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nIBAAK\n-----END RSA PRIVATE KEY-----",
    "anthropic-key": "sk-ant-api03-" + "Ab1_" * 10,
    "openrouter-key": "sk-or-v1-" + "0123456789abcdef" * 4,
    "openai-key": "sk-proj-" + "Zx9" * 15,
    "aws-access-key": "AKIAIOSFODNN7EXAMPLE",
    "github-token": "ghp_" + "a1B2" * 9,
    "gitlab-token": "glpat-" + "xY3z" * 5,
    "slack-token": "xoxb-1234567890-abcdefghij",
    "google-api-key": "AIza" + "Sy" + "A1b2C3d4E5" * 3 + "xyz",
    "stripe-key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "huggingface-token": "hf_" + "AbCdEfGhIj" * 3 + "kl",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "bearer-token": "Authorization: Bearer abcDEF123456ghiJKL789",
    "secret-assignment": 'password = "correct-horse-battery"',
}


def test_every_pattern_has_a_sample():
    assert {name for name, _ in PATTERNS} == set(SAMPLES)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_pattern_is_found_and_redacted(name):
    text = f"before {SAMPLES[name]} after"
    assert name in find_secrets(text)
    cleaned = scrub_text(text, environ={})
    assert find_secrets(cleaned) == []
    assert "[REDACTED:" in cleaned and cleaned.startswith("before ") and cleaned.endswith(" after")


def test_assignment_keeps_the_name_and_replaces_the_value():
    assert (
        scrub_text('{"api_key": "abcdefgh12345"}', environ={})
        == '{"api_key": "[REDACTED:secret-assignment]"}'
    )
    assert scrub_text("token: 12345678abc", environ={}) == "token: [REDACTED:secret-assignment]"


@pytest.mark.parametrize(
    "text",
    [
        "max_tokens: 1024",
        "the skeleton key",
        "input_tokens=12",
        "sk-short",
        "tokens are counted per turn",
        "AKIA short",
    ],
)
def test_ordinary_text_is_left_alone(text):
    assert scrub_text(text, environ={}) == text


def test_the_environment_key_is_never_written_whatever_its_shape():
    env = {"MY_PROVIDER_API_KEY": "plainlookingvalue42", "HOME": "/home/someone-long"}
    assert (
        scrub_text("x plainlookingvalue42 y /home/someone-long", env)
        == "x [REDACTED:environment] y /home/someone-long"
    )


def test_scrub_walks_keys_values_and_lists():
    value = {"a": ["sk-ant-api03-" + "x" * 30], "sk-ant-api03-" + "y" * 30: 3, "n": None, "b": True}
    out = scrub(value, environ={})
    assert out == {
        "a": ["[REDACTED:anthropic-key]"],
        "[REDACTED:anthropic-key]": 3,
        "n": None,
        "b": True,
    }


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=400))
@given(
    st.lists(
        st.sampled_from([*SAMPLES.values(), " ", "text", "=", ":", '"', "\n", "key"]), max_size=8
    )
)
def test_scrubbed_text_never_holds_a_secret_and_scrubbing_is_idempotent(pieces):
    text = "".join(pieces)
    once = scrub_text(text, environ={})
    assert find_secrets(once) == []
    assert scrub_text(once, environ={}) == once


@pytest.mark.parametrize("key", ["contentBase64", "argumentsBase64"])
def test_base64_payloads_are_decoded_scanned_and_only_the_secret_bytes_change(key):
    import base64

    data = b"\xff\xfe binary " + SAMPLES["aws-access-key"].encode() + b" tail \x80"
    cleaned = scrub({key: base64.b64encode(data).decode()}, environ={})
    back = base64.b64decode(cleaned[key])
    assert SAMPLES["aws-access-key"].encode() not in back
    assert back == b"\xff\xfe binary [REDACTED:aws-access-key] tail \x80"
    untouched = base64.b64encode(b"\xff no secret").decode()
    assert scrub({key: untouched}, environ={}) == {key: untouched}
    assert scrub({key: "not base64 AKIAIOSFODNN7EXAMPLE"}, environ={}) == {
        key: "not base64 [REDACTED:aws-access-key]"
    }


@settings(max_examples=200, deadline=None)
@given(prefix=st.binary(max_size=40), suffix=st.binary(max_size=40))
def test_any_bytes_around_a_secret_round_trip_and_lose_only_the_secret(prefix, suffix):
    import base64

    secret = SAMPLES["anthropic-key"].encode()
    data = prefix + b" " + secret + b" " + suffix
    cleaned = base64.b64decode(
        scrub({"contentBase64": base64.b64encode(data).decode()}, environ={})["contentBase64"]
    )
    assert secret not in cleaned
    assert cleaned.startswith(prefix) or b"REDACTED" in prefix + b" " + cleaned[: len(prefix)]
