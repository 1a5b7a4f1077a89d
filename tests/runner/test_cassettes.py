"""Recorded turns replay through pytest-recording without keys or network (SPEC V3)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from vcr.errors import CannotOverwriteExistingCassetteException

from llmcore.archive import ConversationState
from llmcore.messages import Message, ToolCall, ToolResult
from llmcore.runner import FunctionTool, Runner
from llmcore.transport import HTTPTransport
from llmcore.usage import Usage
from tests.runner.conftest import CASSETTES

ROOT = Path(__file__).resolve().parents[2]


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "make_cassettes", ROOT / "scripts" / "make_cassettes.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_cassettes"] = module
    spec.loader.exec_module(module)
    return module


SCRIPT = load_script()
SCENARIOS = {s.name: s for s in SCRIPT.SCENARIOS}
NO_KEYS = {"anthropic": "replay-no-key", "openai-chat": "replay-no-key"}


def run(name: str, message: str | None = None) -> tuple[ConversationState, tuple[bytes, ...]]:
    scenario = SCENARIOS[name]
    with HTTPTransport(api_keys=NO_KEYS, environ={}) as transport:
        result = SCRIPT.runner_for(scenario, transport).run_turn(
            ConversationState(), message or scenario.message
        )
    return result.state, result.bodies


@pytest.mark.vcr
@pytest.mark.default_cassette("anthropic-tool-turn.yaml")
def test_anthropic_tool_turn_replays() -> None:
    conversation, _ = run("anthropic-tool-turn")
    assert conversation.history == (
        Message.user("What is the weather in San Francisco?"),
        Message.assistant(
            ToolCall(
                id="toolu_01SPFDdcu8vF1EsjtoTa6cYx",
                name="get_weather",
                arguments=b'{"location":"San Francisco, CA"}',
            )
        ),
        Message.tool(
            ToolResult(
                call_id="toolu_01SPFDdcu8vF1EsjtoTa6cYx",
                tool_name="get_weather",
                content="73°F, sunny".encode(),
            )
        ),
        Message.assistant("The weather in San Francisco, CA is currently 73°F."),
    )
    assert conversation.usage.total.input == 669 + conversation.usage.last_round.input
    assert conversation.usage.cost.kind == "estimated"


@pytest.mark.vcr
@pytest.mark.default_cassette("openai-chat-tool-turn.yaml")
def test_openai_chat_tool_turn_replays() -> None:
    conversation, _ = run("openai-chat-tool-turn")
    assert conversation.history[1] == Message.assistant(
        ToolCall(
            id="call_bhZkmIKKItNGJ41whHUHB7p9",
            name="get_temperature",
            arguments=b'{"city":"Tokyo"}',
        )
    )
    assert conversation.history[-1] == Message.assistant(
        "The temperature in Tokyo is currently 20.0 degrees Celsius."
    )
    assert isinstance(conversation.usage.last_round, Usage)


@pytest.mark.vcr
@pytest.mark.default_cassette("anthropic-tool-turn.yaml")
def test_a_different_body_is_refused_and_the_first_difference_is_named() -> None:
    with pytest.raises(CannotOverwriteExistingCassetteException) as info:
        run("anthropic-tool-turn", "What is the weather in Paris?")
    assert "differ under P4 normalization" in str(info.value)
    assert "messages[0].content[0].text" in str(info.value)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_cassettes_are_current_keep_exact_bodies_and_hold_no_keys(name: str) -> None:
    path = CASSETTES / f"{name}.yaml"
    text = path.read_text(encoding="utf-8")
    assert text == SCRIPT.cassette_text(SCENARIOS[name])  # regenerating changes nothing
    lowered = text.lower()
    assert "x-api-key" not in lowered and "authorization" not in lowered and "sk-" not in lowered
    recorded = [i["request"]["body"].encode() for i in yaml.safe_load(text)["interactions"]]
    sent = [body for _, body, _ in _sent(name)]
    assert recorded == sent  # the exact bytes a live run sends


def _sent(name: str) -> list[tuple[str, bytes, bytes]]:
    transport = SCRIPT.CorpusTransport(SCENARIOS[name].cases)
    SCRIPT.runner_for(SCENARIOS[name], transport).run_turn(
        ConversationState(), SCENARIOS[name].message
    )
    return transport.sent


def test_tools_are_plain_callables() -> None:
    tool = SCENARIOS["anthropic-tool-turn"].tool
    assert isinstance(tool, FunctionTool) and tool.function({"location": "x"}) == "73°F, sunny"
    assert isinstance(SCRIPT.runner_for(SCENARIOS["anthropic-tool-turn"], None), Runner)
