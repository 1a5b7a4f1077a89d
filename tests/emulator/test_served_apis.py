"""``llmcore emulate``'s start-up lines name every API the emulator serves, and each is served.

Each listed base URL is used as printed: llmcore's transport (and its cloud endpoints) send one
request through it and get an answer, so a line that named a wrong URL would fail here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from llmcore.cli.emulate import _announce
from llmcore.cloud.anthropic import AnthropicBedrock, AnthropicVertex
from llmcore.cloud.azure import AzureOpenAI
from llmcore.emulator import Emulator, ManualClock
from llmcore.emulator.server import SERVED_APIS
from llmcore.messages import Message
from llmcore.providers import get_provider
from llmcore.request import Params, Request
from llmcore.transport import HTTPTransport, RetryPolicy

APIS = [api for api, _, _ in SERVED_APIS]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(clock=ManualClock()) as server:
        yield server


@pytest.fixture
def printed(emu: Emulator, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """The start-up lines as printed: API → its base URL."""
    _announce(emu)
    head, *rows = capsys.readouterr().out.splitlines()
    assert head == (f"llmcore emulator listening: anthropic base URL {emu.base_url} (Ctrl+C stops)")
    urls = {}
    for row in rows:
        found = re.fullmatch(r"  (.+?) +(http://127\.0\.0\.1:\d+\S*) +(\S.*)", row)
        assert found is not None, row
        urls[found.group(1)] = found.group(2)
    return urls


def test_the_start_up_lines_list_every_api(emu: Emulator, printed: dict[str, str]) -> None:
    base = emu.base_url
    assert printed == {
        "Anthropic Messages": base,
        "OpenAI Chat Completions": base + "/v1",
        "OpenAI Responses": base + "/v1",
        "OpenRouter": base + "/v1",
        "Gemini": base + "/v1beta",
        "Bedrock Converse": base,
        "Bedrock InvokeModel (Claude)": base,
        "Vertex AI (Claude, Gemini)": base + "/v1",
        "Azure OpenAI": base,
    }
    assert printed["Gemini"] == emu.gemini_base_url
    assert printed["OpenAI Chat Completions"] == emu.openai_base_url


def test_the_first_line_keeps_the_anthropic_base_url_first(emu: Emulator, capsys) -> None:
    _announce(emu)  # scripts read it as: line.split("anthropic base URL ")[1].split(" ")[0]
    first = capsys.readouterr().out.splitlines()[0]
    assert first.split("anthropic base URL ")[1].split(" ")[0] == emu.base_url


PROVIDERS = [
    ("Anthropic Messages", "anthropic", "claude-sonnet-4-5"),
    ("OpenAI Chat Completions", "openai-chat", "gpt-5-mini"),
    ("OpenAI Responses", "openai-responses", "gpt-5-mini"),
    ("OpenRouter", "openrouter", "anthropic/claude-sonnet-4.5"),
    ("Gemini", "gemini", "gemini-2.5-flash"),
    ("Bedrock Converse", "bedrock-converse", "anthropic.claude-3-haiku-20240307-v1:0"),
]


def _request(model: str) -> Request:
    return Request(model=model, messages=(Message.user("hello"),), params=Params(max_tokens=16))


@pytest.mark.parametrize(("api", "name", "model"), PROVIDERS)
def test_each_provider_is_answered_at_its_printed_url(
    printed: dict[str, str], api: str, name: str, model: str
) -> None:
    provider = get_provider(name)
    url = {name: printed[api]}
    keyword = {"model": model} if "{model}" in provider.endpoint.path else {}
    with HTTPTransport(
        base_urls=url, api_keys={name: "emulator"}, retry=RetryPolicy(max_retries=0)
    ) as transport:
        answer = transport.send(provider, provider.build_body(_request(model)), **keyword)
    assert answer.content and answer.usage.input > 0


@pytest.mark.parametrize(
    ("api", "name", "model"),
    [
        ("Bedrock InvokeModel (Claude)", "anthropic", "anthropic.claude-3-haiku-20240307-v1:0"),
        ("Vertex AI (Claude, Gemini)", "anthropic", "claude-sonnet-4@20250514"),
        ("Azure OpenAI", "openai-chat", "deployment"),
    ],
)
def test_each_cloud_endpoint_is_answered_at_its_printed_url(
    printed: dict[str, str], monkeypatch: pytest.MonkeyPatch, api: str, name: str, model: str
) -> None:
    for variable, value in {
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_EC2_METADATA_DISABLED": "true",
    }.items():
        monkeypatch.setenv(variable, value)
    for variable in ("AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_BEARER_TOKEN_BEDROCK"):
        monkeypatch.delenv(variable, raising=False)
    url = printed[api]
    endpoint = {
        "Bedrock InvokeModel (Claude)": lambda: AnthropicBedrock(region="us-east-1", base_url=url),
        "Vertex AI (Claude, Gemini)": lambda: AnthropicVertex(
            project="p", region="us-east5", access_token="t", base_url=url
        ),
        "Azure OpenAI": lambda: AzureOpenAI(endpoint=url, api_key="k"),
    }[api]()
    provider = get_provider(name)
    with HTTPTransport(endpoints={name: endpoint}, retry=RetryPolicy(max_retries=0)) as transport:
        answer = transport.send(provider, provider.build_body(_request(model)))
    assert answer.content and answer.usage.input > 0


def test_every_listed_api_is_checked() -> None:
    checked = {api for api, _, _ in PROVIDERS} | {
        "Bedrock InvokeModel (Claude)",
        "Vertex AI (Claude, Gemini)",
        "Azure OpenAI",
    }
    assert checked == set(APIS)


def test_the_emulator_guide_shows_the_lines_as_printed(emu: Emulator, capsys) -> None:
    guide = (Path(__file__).parents[2] / "docs" / "guides" / "emulator.md").read_text()
    shown = guide.split("```text\nllmcore emulator listening:", 1)[1].split("```", 1)[0]
    _announce(emu)
    printed = capsys.readouterr().out.replace(str(emu.port), "8765")
    assert "llmcore emulator listening:" + shown == printed
