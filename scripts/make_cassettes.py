"""Regenerate the VCR cassettes in ``cassettes/`` (SPEC V3).

Each cassette pairs the request bodies llmcore builds for a scripted turn — kept as the exact
text sent — with responses copied from named corpus cases (``tests/corpus/<api>/NNNN.json``).
The turn is run by the real :class:`llmcore.runner.Runner`; only the transport is replaced by
one that answers from the corpus, so the bodies are exactly what a live run sends. No API key
or auth header is ever written.

Usage: ``python scripts/make_cassettes.py`` (from the repository root; ``--check`` exits 1 when a
cassette on disk differs from what would be written).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from llmcore import jsonbytes
from llmcore.providers.base import ParsedResponse, Provider
from llmcore.runner import Conversation, FunctionTool, Runner

ROOT = Path(__file__).resolve().parent.parent
CASSETTES = ROOT / "cassettes"


def corpus_dir() -> Path:
    """The corpus: ``tests/corpus`` when vendored, else ``../shared/corpus``."""
    vendored = ROOT / "tests" / "corpus"
    return vendored if vendored.is_dir() else ROOT.parent / "shared" / "corpus"


@dataclass(frozen=True)
class Scenario:
    """One tool-using turn and the corpus cases that answer its requests, in order."""

    name: str
    provider: str
    model: str
    tool: FunctionTool
    message: str
    cases: tuple[str, ...]


WEATHER = FunctionTool.create(
    "get_weather",
    "Get the current weather in a given location",
    {
        "type": "object",
        "properties": {"location": {"type": "string", "description": "City and state"}},
        "required": ["location"],
    },
    lambda arguments: "73°F, sunny",
)
TEMPERATURE = FunctionTool.create(
    "get_temperature",
    "Get the temperature in a city, in degrees Celsius",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    lambda arguments: "20.0",
)

SCENARIOS = (
    Scenario(
        name="anthropic-tool-turn",
        provider="anthropic",
        model="claude-sonnet-4-6",
        tool=WEATHER,
        message="What is the weather in San Francisco?",
        cases=("anthropic/0018.json", "anthropic/0013.json"),
    ),
    Scenario(
        name="openai-chat-tool-turn",
        provider="openai-chat",
        model="gpt-5.4-mini",
        tool=TEMPERATURE,
        message="What is the temperature in Tokyo?",
        cases=("openai-chat/0068.json", "openai-chat/0069.json"),
    ),
)


class CorpusTransport:
    """Answers each request with the next corpus case's response and keeps what was sent."""

    def __init__(self, cases: Sequence[str]) -> None:
        self.responses = [load_case(name)["response"] for name in cases]
        self.sent: list[tuple[str, bytes, bytes]] = []

    def send(self, provider: Provider, body: bytes, *, stream: bool = False) -> ParsedResponse:
        """Keep ``body`` and answer with the next corpus response (written compactly)."""
        response = jsonbytes.dumps(self.responses[len(self.sent)])
        endpoint = provider.endpoint
        self.sent.append((endpoint.base_url + endpoint.path, body, response))
        return provider.parse_response(response)


def load_case(name: str) -> dict[str, Any]:
    """Read one corpus case, e.g. ``anthropic/0018.json``."""
    case: dict[str, Any] = json.loads((corpus_dir() / name).read_text(encoding="utf-8"))
    return case


def runner_for(scenario: Scenario, transport: Any) -> Runner:
    """The runner a scenario uses (the README example builds the same one)."""
    return Runner(
        provider=scenario.provider,
        model=scenario.model,
        transport=transport,
        tools=[scenario.tool],
    )


def interactions(scenario: Scenario) -> list[dict[str, Any]]:
    """Run the scenario's turn against its corpus responses; return the cassette interactions."""
    transport = CorpusTransport(scenario.cases)
    runner_for(scenario, transport).run_turn(Conversation(), scenario.message)
    headers = {"content-type": ["application/json"]}
    if scenario.provider == "anthropic":
        headers["anthropic-version"] = ["2023-06-01"]
    out = []
    for uri, body, response in transport.sent:
        out.append(
            {
                "request": {
                    "body": body.decode("utf-8"),
                    "headers": dict(headers),
                    "method": "POST",
                    "uri": uri,
                },
                "response": {
                    "body": {"string": response.decode("utf-8")},
                    "headers": {"content-type": ["application/json"]},
                    "status": {"code": 200, "message": "OK"},
                },
            }
        )
    return out


class _NoAliases(yaml.SafeDumper):
    """Writes repeated values in full (no ``&id001`` anchors), so each interaction reads alone."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def cassette_text(scenario: Scenario) -> str:
    """The YAML text of a scenario's cassette, with a header naming its corpus cases."""
    data = {"interactions": interactions(scenario), "version": 1}
    text = yaml.dump(
        data, Dumper=_NoAliases, allow_unicode=True, sort_keys=True, width=1_000_000_000
    )
    loaded = yaml.safe_load(text)
    for written, kept in zip(loaded["interactions"], data["interactions"], strict=True):
        assert written["request"]["body"] == kept["request"]["body"], "YAML changed a body"
    header = (
        f"# Generated by scripts/make_cassettes.py: llmcore-built requests (exact text sent)\n"
        f"# answered by corpus cases {', '.join(scenario.cases)}. No API keys.\n"
    )
    return header + text


def main(argv: Sequence[str]) -> int:
    """Write every cassette, or with ``--check`` report the ones that would change."""
    check = "--check" in argv
    CASSETTES.mkdir(exist_ok=True)
    stale = []
    for scenario in SCENARIOS:
        path = CASSETTES / f"{scenario.name}.yaml"
        text = cassette_text(scenario)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"stale cassettes: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
