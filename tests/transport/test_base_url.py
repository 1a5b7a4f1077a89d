"""Base URLs in both conventions: with and without the OpenAI SDK's trailing ``/v1``."""

from __future__ import annotations

import httpx
import pytest

from llmcore.errors import APIStatusError
from llmcore.providers import get_provider
from llmcore.transport import DEFAULT_TIMEOUT, HTTPTransport


def _url_sent(provider: str, environ: dict[str, str], **kwargs: object) -> str:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(400, json={"error": {"type": "x", "message": "stop"}})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    transport = HTTPTransport(client=client, environ=environ, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(APIStatusError):
        transport.send(get_provider(provider), b"{}")
    return seen[0]


@pytest.mark.parametrize(
    ("provider", "variable", "value", "expected"),
    [
        (
            "openai-chat",
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1",
            "https://api.openai.com/v1/chat/completions",
        ),
        (
            "openai-chat",
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1/",
            "https://api.openai.com/v1/chat/completions",
        ),
        (
            "openai-chat",
            "OPENAI_BASE_URL",
            "https://api.openai.com",
            "https://api.openai.com/v1/chat/completions",
        ),
        (
            "openai-responses",
            "OPENAI_BASE_URL",
            "http://127.0.0.1:8080/v1",
            "http://127.0.0.1:8080/v1/responses",
        ),
        (
            "openai-responses",
            "OPENAI_BASE_URL",
            "http://127.0.0.1:8080",
            "http://127.0.0.1:8080/v1/responses",
        ),
        (
            "openrouter",
            "OPENROUTER_BASE_URL",
            "https://openrouter.ai/api/v1",
            "https://openrouter.ai/api/v1/chat/completions",
        ),
        (
            "openrouter",
            "OPENROUTER_BASE_URL",
            "https://openrouter.ai/api",
            "https://openrouter.ai/api/v1/chat/completions",
        ),
        # Anthropic's SDK convention has no /v1: the value is used as given.
        (
            "anthropic",
            "ANTHROPIC_BASE_URL",
            "https://api.anthropic.com",
            "https://api.anthropic.com/v1/messages",
        ),
        (
            "anthropic",
            "ANTHROPIC_BASE_URL",
            "http://proxy.local/v1",
            "http://proxy.local/v1/v1/messages",
        ),
    ],
)
def test_base_url_from_the_environment_in_either_convention(provider, variable, value, expected):
    assert _url_sent(provider, {variable: value}) == expected


def test_explicit_base_urls_accept_the_v1_form_too():
    url = _url_sent("openai-chat", {}, base_urls={"openai-chat": "http://127.0.0.1:9/v1"})
    assert url == "http://127.0.0.1:9/v1/chat/completions"


def test_only_one_trailing_v1_is_dropped():
    url = _url_sent("openai-chat", {"OPENAI_BASE_URL": "http://h/v1/v1"})
    assert url == "http://h/v1/v1/chat/completions"


def test_library_default_read_timeout_stays_long():
    assert DEFAULT_TIMEOUT.read == 600.0
