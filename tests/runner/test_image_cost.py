"""Generated-image cost (SPEC U2): a tool's generated images reach the conversation's cost."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llmcore.archive import ArchiveStore, Conversation
from llmcore.pricing import default_prices
from llmcore.runner import FunctionTool, GeneratedImage, Runner, ToolOutput
from llmcore.usage import Cost, Usage
from tests.runner.test_runner import Scripted, call, reply, text

MODEL = "claude-sonnet-4-6"
USAGE = {"input_tokens": 1000, "output_tokens": 100}
PRICES = default_prices()


def draw_tool(image_model: str, count: int) -> FunctionTool:
    def draw(arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(
            content=f"made {count} images of {arguments['what']}",
            generated=(GeneratedImage(model=image_model, count=count),),
        )

    schema = {"type": "object", "properties": {"what": {"type": "string"}}}
    return FunctionTool.create("draw", "Draw pictures", schema, draw)


def run(image_model: str, count: int) -> Conversation:
    transport = Scripted(
        reply(call("toolu_1", "draw", {"what": "cats"}), stop="tool_use", usage=USAGE),
        reply(text("done"), usage=USAGE),
    )
    conversation = Conversation()
    Runner(
        provider="anthropic",
        model=MODEL,
        transport=transport,
        tools=[draw_tool(image_model, count)],
    ).run_turn(conversation, "draw two cats")
    return conversation


def token_cost() -> float:
    one = PRICES.cost(MODEL, Usage(input=1000, output=100))
    assert one.kind == "estimated" and one.dollars is not None
    return 2 * one.dollars


def test_two_priced_images_add_exactly_two_image_prices(tmp_path) -> None:
    price = PRICES.lookup("gpt-image-1")
    assert price is not None and price.image is not None
    conversation = run("gpt-image-1", 2)
    cost = conversation.state.usage.cost
    assert cost.kind == "estimated"
    assert cost.dollars == pytest.approx(token_cost() + 2 * price.image, abs=1e-12)
    # Tokens are unchanged: images are not usage (U1).
    assert conversation.state.usage.total == Usage(input=2000, output=200)
    store = ArchiveStore(tmp_path / "agent")
    store.save(conversation)
    saved = json.loads((tmp_path / "agent" / "conversation.json").read_bytes())
    assert saved["estimatedCost"]["kind"] == "estimated"
    assert saved["estimatedCost"]["dollars"] == pytest.approx(cost.dollars, abs=1e-12)
    assert store.open().state.usage.cost == cost


def test_an_unpriced_image_model_makes_the_cost_unknown() -> None:
    assert run("some-image-model", 2).state.usage.cost == Cost(kind="unknown")


def test_a_priced_text_model_without_an_image_price_is_unknown() -> None:
    assert run("gpt-5.4-mini", 1).state.usage.cost == Cost(kind="unknown")


def test_zero_images_cost_nothing() -> None:
    cost = run("gpt-image-1", 0).state.usage.cost
    assert cost.kind == "estimated"
    assert cost.dollars == pytest.approx(token_cost(), abs=1e-12)


def test_the_image_cost_joins_the_round_of_the_request_that_called_the_tool() -> None:
    transport = Scripted(
        reply(call("toolu_1", "draw", {"what": "cats"}), stop="tool_use", usage=USAGE),
        reply(text("done"), usage=USAGE),
    )
    result = Runner(
        provider="anthropic", model=MODEL, transport=transport, tools=[draw_tool("gpt-image-1", 3)]
    ).run_turn(Conversation(), "draw")
    (first_usage, first), (_, second) = result.rounds
    assert first_usage == Usage(input=1000, output=100)
    assert first.dollars == pytest.approx(token_cost() / 2 + 3 * 0.042, abs=1e-12)
    assert second.dollars == pytest.approx(token_cost() / 2, abs=1e-12)


def test_a_negative_count_is_refused() -> None:
    with pytest.raises(ValueError, match="negative"):
        GeneratedImage(model="gpt-image-1", count=-1)
