"""The context-limits table and the compaction notice (SPEC C4, P6)."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from llmcore.archive import ArchiveStore, Conversation, ConversationState
from llmcore.limits import (
    NOTICE_ID_PREFIX,
    context_limit,
    default_limits,
    parse_limits,
)
from llmcore.messages import Message
from llmcore.pricing import default_prices
from llmcore.providers.base import ParsedResponse, Provider
from llmcore.runner import Runner
from llmcore.usage import Cost, Usage


def turn(state: ConversationState, model: str, read: int) -> ConversationState:
    """One turn of two messages whose only request read ``read`` tokens."""
    return state.after_turn(
        messages=(Message.user("q"), Message.assistant("a")),
        provider="anthropic",
        model=model,
        rounds=((Usage(input=read // 2, cache_read=read - read // 2, output=5), Cost()),),
    )


def notices(state: ConversationState) -> list[str]:
    return [i.id for i in state.items if i.id.startswith(NOTICE_ID_PREFIX)]


def test_lookup_exact_snapshot_vendor_and_unknown() -> None:
    assert context_limit("claude-sonnet-4-5") == 200_000
    assert context_limit("claude-sonnet-4-5-20250929") == 200_000
    assert context_limit("anthropic/claude-sonnet-4.6") == 1_000_000
    assert context_limit("gpt-4.1-mini-2025-04-14") == 1_047_576
    assert context_limit("openai/gpt-5.4-mini") == 400_000
    assert context_limit("gpt-5.4") == 1_050_000
    # Unknown models are unknown: no prefix guess (gpt-5.5 is not gpt-5).
    assert context_limit("gpt-5.5") is None
    assert context_limit("claude-unknown-model") is None
    assert context_limit("llmcore-emulator") is None


def test_table_has_sources_date_and_covers_the_price_table() -> None:
    limits = default_limits()
    assert limits.retrieved and all(s.startswith("https://") for s in limits.sources)
    priced = {name for name, price in default_prices().models if price.image is None}
    priced.discard("llmcore-emulator")
    assert sorted(m for m in priced if context_limit(m) is None) == []


def test_bad_tables_are_refused() -> None:
    with pytest.raises(ValueError, match="models"):
        parse_limits(b"[]")
    with pytest.raises(ValueError, match=r"\$\.models\.m"):
        parse_limits(b'{"models": {"m": 0}}')
    data = resources.files("llmcore").joinpath("data/context_limits.json").read_bytes()
    assert dict(parse_limits(data).models) == json.loads(data)["models"]


def test_crossing_adds_one_notice_not_one_per_turn() -> None:
    state = turn(ConversationState(), "claude-sonnet-4-5", 100_000)
    assert notices(state) == []
    state = turn(state, "claude-sonnet-4-5", 160_000)  # exactly 80 %
    assert notices(state) == [f"{NOTICE_ID_PREFIX}4"]
    notice = state.items[-1].fields()
    assert notice["type"] == "notice"
    assert (notice["contextLimit"], notice["contextRead"]) == (200_000, 160_000)
    assert "Compact" in notice["detail"]
    state = turn(state, "claude-sonnet-4-5", 170_000)  # still above: no second notice
    assert notices(state) == [f"{NOTICE_ID_PREFIX}4"]
    state = turn(state, "claude-sonnet-4-5", 20_000)  # dropped below (e.g. compacted)
    state = turn(state, "claude-sonnet-4-5", 190_000)  # crosses again: a new notice
    assert notices(state) == [f"{NOTICE_ID_PREFIX}4", f"{NOTICE_ID_PREFIX}10"]


def test_just_below_and_unknown_models_get_no_notice() -> None:
    assert notices(turn(ConversationState(), "claude-sonnet-4-5", 159_999)) == []
    assert notices(turn(ConversationState(), "claude-unknown-model", 10**9)) == []


def test_a_turn_without_requests_adds_no_notice() -> None:
    state = turn(ConversationState(), "claude-sonnet-4-5", 180_000)
    again = state.after_turn(messages=(), provider="anthropic", model="claude-sonnet-4-5")
    assert notices(again) == notices(state)


def test_switch_to_a_smaller_window_makes_the_same_usage_cross() -> None:
    """P6: the limit follows the current model; 300k tokens is 30 % of 1M, 75 % of 400k ..."""
    state = turn(ConversationState(), "claude-sonnet-4-6", 300_000)  # 1M window: 30 %
    assert notices(state) == []
    state = turn(state, "gpt-5.4-mini", 300_000)  # 400k: 75 %, below
    assert notices(state) == []
    state = turn(state, "claude-sonnet-4-5", 300_000)  # 200k: 150 %, crosses on the switch
    assert notices(state) == [f"{NOTICE_ID_PREFIX}6"]
    assert state.items[-1].fields()["contextLimit"] == 200_000


class Answering:
    """A transport answering every request with one Anthropic text reply reading ``read``."""

    def __init__(self, read: int) -> None:
        self.read = read

    def send(self, provider: Provider, body: bytes, *, stream: bool = False) -> ParsedResponse:
        reply = {
            "id": "msg_x",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": self.read, "output_tokens": 3},
        }
        return provider.parse_response(json.dumps(reply).encode())


def test_the_runner_path_gets_the_notice_and_the_archive_keeps_it(tmp_path) -> None:
    conversation = Conversation()
    transport = Answering(100_000)
    runner = Runner(provider="anthropic", model="claude-sonnet-4-6", transport=transport)
    runner.run_turn(conversation, "hello")
    assert notices(conversation.state) == []
    runner.model = "claude-sonnet-4-5"  # switch: 100k of 200k is 50 %
    transport.read = 170_000
    runner.run_turn(conversation, "more")
    assert notices(conversation.state) == [f"{NOTICE_ID_PREFIX}4"]
    store = ArchiveStore(tmp_path / "agent")
    store.save(conversation)
    reopened = store.open()
    assert notices(reopened.state) == [f"{NOTICE_ID_PREFIX}4"]
    runner.run_turn(reopened, "again")  # still above: no duplicate after reopening
    assert notices(reopened.state) == [f"{NOTICE_ID_PREFIX}4"]
