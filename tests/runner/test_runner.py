"""The turn runner: tool loops, errors, images, step limit, carry, usage and cost, facts, switching."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from llmcore.archive import ConversationState
from llmcore.errors import APIStatusError, ResponseParseError
from llmcore.facts import Section
from llmcore.messages import Image, Message, ToolCall, ToolResult
from llmcore.providers.base import ParsedResponse, Provider
from llmcore.runner import IMAGE_FOLLOW_UP_TEXT, FunctionTool, Runner, ToolOutput
from llmcore.transport import HTTPTransport
from llmcore.usage import Cost, Usage
from tests.transport.server import Reply, serve

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
MODEL = "claude-sonnet-4-5"


def reply(
    *blocks: dict[str, Any], stop: str = "end_turn", usage: dict[str, int] | None = None
) -> bytes:
    body = {
        "id": "msg_x",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": list(blocks),
        "stop_reason": stop,
        "usage": usage or {"input_tokens": 10, "output_tokens": 5},
    }
    return json.dumps(body).encode()


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


class Scripted:
    """A transport that answers from a script of raw bodies (or exceptions) and records what it got."""

    def __init__(self, *script: bytes | BaseException) -> None:
        self.script = list(script)
        self.bodies: list[bytes] = []

    def send(self, provider: Provider, body: bytes, *, stream: bool = False) -> ParsedResponse:
        self.bodies.append(body)
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return provider.parse_response(item)


def weather(arguments: dict[str, Any]) -> str:
    return json.dumps({"city": arguments["city"], "temp": 21})


WEATHER = FunctionTool.create(
    "weather",
    "Current weather",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    weather,
)


def runner(transport: Any, **kw: Any) -> Runner:
    return Runner(
        provider="anthropic",
        model=MODEL,
        transport=transport,
        tools=[WEATHER],
        system=["Be brief."],
        **kw,
    )


def wire_messages(body: bytes) -> list[str]:
    """Each wire message's exact text with cache_control removed (P4's comparison)."""
    messages = json.loads(body)["messages"]
    for message in messages:
        for block in message["content"]:
            block.pop("cache_control", None)
    return [json.dumps(m) for m in messages]


def test_tool_using_turn_appends_exactly_what_was_sent_and_received() -> None:
    transport = Scripted(
        reply(text("Checking."), call("toolu_1", "weather", {"city": "Paris"}), stop="tool_use"),
        reply(text("21 degrees.")),
    )
    result = runner(transport).run_turn(ConversationState(), "Weather in Paris?")
    history = result.state.history
    assert history == (
        Message.user("Weather in Paris?"),
        Message.assistant(
            "Checking.", ToolCall(id="toolu_1", name="weather", arguments=b'{"city": "Paris"}')
        ),
        Message.tool(
            ToolResult(
                call_id="toolu_1", tool_name="weather", content=b'{"city": "Paris", "temp": 21}'
            )
        ),
        Message.assistant("21 degrees."),
    )
    assert result.appended == history
    assert result.stop == "end_turn"
    assert result.bodies == tuple(transport.bodies)
    first, second = (wire_messages(b) for b in transport.bodies)
    assert second[: len(first)] == first  # P4 within the turn
    assert b'"input":{"city": "Paris"}' in transport.bodies[1]  # argument bytes spliced as received
    assert result.state.provider == "anthropic" and result.state.model == MODEL


def test_usage_last_round_and_estimated_cost_in_dollars() -> None:
    usage1 = {
        "input_tokens": 1000,
        "output_tokens": 100,
        "cache_creation_input_tokens": 2000,
        "cache_read_input_tokens": 0,
    }
    usage2 = {
        "input_tokens": 50,
        "output_tokens": 200,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 0,
    }
    transport = Scripted(
        reply(call("toolu_1", "weather", {"city": "Oslo"}), stop="tool_use", usage=usage1),
        reply(text("Cold."), usage=usage2),
    )
    totals = runner(transport).run_turn(ConversationState(), "Oslo?").state.usage
    assert totals.total == Usage(input=1050, output=300, cache_read=3000, cache_write=2000)
    assert totals.last_round == Usage(input=50, output=200, cache_read=3000)
    # sonnet 4.5: $3 in, $15 out, $0.30 read, $3.75 5-min write per MTok
    expected = (1000 * 3 + 100 * 15 + 2000 * 3.75) / 1e6 + (50 * 3 + 200 * 15 + 3000 * 0.30) / 1e6
    assert totals.cost.kind == "estimated"
    assert totals.cost.dollars == pytest.approx(expected, abs=1e-12)
    assert totals.cost.dollars == pytest.approx(0.01605, abs=1e-12)


def test_a_raising_tool_becomes_an_error_result() -> None:
    def broken(arguments: dict[str, Any]) -> str:
        raise RuntimeError("disk on fire")

    tool = FunctionTool.create("broken", "", {"type": "object"}, broken)
    transport = Scripted(
        reply(call("toolu_1", "broken", {}), stop="tool_use"), reply(text("Sorry."))
    )
    run = Runner(provider="anthropic", model=MODEL, transport=transport, tools=[tool])
    history = run.run_turn(ConversationState(), "go").state.history
    assert history[2] == Message.tool(
        ToolResult(
            call_id="toolu_1",
            tool_name="broken",
            content=b"RuntimeError: disk on fire",
            is_error=True,
        )
    )
    assert b'"is_error":true' in transport.bodies[1]


def test_unknown_tool_and_non_object_arguments_are_error_results() -> None:
    raw = (
        b'{"type":"message","id":"m","model":"x","content":[{"type":"tool_use","id":"a","name":"nope","input":{}},'
        b'{"type":"tool_use","id":"b","name":"weather","input":{}}],"stop_reason":"tool_use",'
        b'"usage":{"input_tokens":1,"output_tokens":1}}'
    )
    transport = Scripted(raw, reply(text("ok")))
    history = runner(transport).run_turn(ConversationState(), "go").state.history
    results = history[2].content
    assert results[0] == ToolResult(
        call_id="a", tool_name="nope", content=b"unknown tool 'nope'", is_error=True
    )
    assert isinstance(results[1], ToolResult) and results[1].is_error
    assert b"KeyError" in results[1].content


def test_a_tool_returning_an_image_puts_it_in_the_next_user_message() -> None:
    def snapshot(arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(
            content="rendered 1 frame", images=(Image(data=PNG, mime_type="image/png"),)
        )

    tool = FunctionTool.create("snapshot", "", {"type": "object"}, snapshot)
    transport = Scripted(
        reply(call("toolu_1", "snapshot", {}), stop="tool_use"), reply(text("Nice."))
    )
    run = Runner(provider="anthropic", model=MODEL, transport=transport, tools=[tool])
    history = run.run_turn(ConversationState(), "draw").state.history
    assert history[2] == Message.tool(
        ToolResult(call_id="toolu_1", tool_name="snapshot", content=b"rendered 1 frame")
    )
    assert history[3] == Message.user(IMAGE_FOLLOW_UP_TEXT, Image(data=PNG, mime_type="image/png"))
    assert [m.role for m in history] == ["user", "assistant", "tool", "user", "assistant"]
    assert b'"media_type":"image/png"' in transport.bodies[1]


def test_step_limit_leaves_every_call_answered() -> None:
    loop = reply(call("toolu_1", "weather", {"city": "Rome"}), stop="tool_use")
    loop2 = reply(call("toolu_2", "weather", {"city": "Rome"}), stop="tool_use")
    transport = Scripted(loop, loop2)
    result = runner(transport, max_steps=2).run_turn(ConversationState(), "loop")
    assert result.stop == "step_limit"
    assert [m.role for m in result.state.history] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert len(transport.bodies) == 2


def test_a_failed_request_mid_turn_leaves_the_conversation_unchanged() -> None:
    before = runner(Scripted(reply(text("hi")))).run_turn(ConversationState(), "hello").state
    overloaded = APIStatusError("overloaded", provider="anthropic", status=529)
    transport = Scripted(
        reply(call("toolu_1", "weather", {"city": "Lima"}), stop="tool_use"), overloaded
    )
    with pytest.raises(APIStatusError):
        runner(transport).run_turn(before, "Lima?")
    assert before.history == (Message.user("hello"), Message.assistant("hi"))
    broken = Scripted(b'{"type":"message","content":[{"type":"warp"}],"usage":{}}')
    with pytest.raises(ResponseParseError):
        runner(broken).run_turn(before, "again")
    assert len(before.history) == 2


def test_keyboard_interrupt_in_a_tool_leaves_the_conversation_unchanged() -> None:
    def interrupted(arguments: dict[str, Any]) -> str:
        raise KeyboardInterrupt

    tool = FunctionTool.create("slow", "", {"type": "object"}, interrupted)
    start = ConversationState(history=(Message.user("a"), Message.assistant("b")))
    run = Runner(
        provider="anthropic",
        model=MODEL,
        transport=Scripted(reply(call("t", "slow", {}), stop="tool_use")),
        tools=[tool],
    )
    with pytest.raises(KeyboardInterrupt):
        run.run_turn(start, "go")
    assert start.history == (Message.user("a"), Message.assistant("b"))


def test_task_cancellation_leaves_the_conversation_unchanged() -> None:
    class Hanging:
        async def send(
            self, provider: Provider, body: bytes, *, stream: bool = False
        ) -> ParsedResponse:
            await asyncio.sleep(60)
            raise AssertionError("not reached")

    start = ConversationState(history=(Message.user("a"), Message.assistant("b")))
    run = Runner(provider="anthropic", model=MODEL, async_transport=Hanging())

    async def main() -> None:
        task = asyncio.create_task(run.arun_turn(start, "go"))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert start.history == (Message.user("a"), Message.assistant("b"))


def test_async_turn_awaits_async_tools() -> None:
    async def slow_weather(arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        return "sunny"

    class AsyncScripted(Scripted):
        async def send(
            self, provider: Provider, body: bytes, *, stream: bool = False
        ) -> ParsedResponse:  # type: ignore[override]
            return Scripted.send(self, provider, body)

    tool = FunctionTool.create("weather", "", {"type": "object"}, slow_weather)
    transport = AsyncScripted(
        reply(call("t1", "weather", {}), stop="tool_use"), reply(text("Sunny."))
    )
    run = Runner(provider="anthropic", model=MODEL, async_transport=transport, tools=[tool])
    history = asyncio.run(run.arun_turn(ConversationState(), "go")).state.history
    assert history[2] == Message.tool(
        ToolResult(call_id="t1", tool_name="weather", content=b"sunny")
    )


THINKING = {"type": "thinking", "thinking": "Let me look.", "signature": "c2ln"}


def test_thinking_is_carried_within_the_turn_and_dropped_after() -> None:
    transport = Scripted(
        reply(THINKING, call("toolu_1", "weather", {"city": "Kyiv"}), stop="tool_use"),
        reply(text("Mild.")),
        reply(text("Bye.")),
    )
    run = runner(transport)
    first = run.run_turn(ConversationState(), "Kyiv?").state
    carried = json.dumps(THINKING).encode()
    assert carried not in transport.bodies[0]
    second_body = json.loads(transport.bodies[1])
    assert second_body["messages"][1]["content"][0] == THINKING  # sent back at the start
    assert carried in transport.bodies[1]  # byte for byte as received
    assert all("thinking" not in repr(m) for m in first.history)  # never in the history (M4)
    run.run_turn(first, "Thanks")
    assert carried not in transport.bodies[2]


def test_context_sections_only_changed_ones_are_resent() -> None:
    transport = Scripted(reply(text("one")), reply(text("two")))
    run = runner(transport)
    mode = Section(name="This turn", text="# This turn\nMode: Just do it")
    design = Section(name="Design system", text="# Design system\nblue")
    first = run.run_turn(ConversationState(), "Make a card", sections=[mode, design]).state
    assert first.history[0] == Message.user(
        "# This turn\nMode: Just do it\n\n# Design system\nblue\n\nMake a card"
    )
    changed = Section(name="Design system", text="# Design system\nred")
    second = run.run_turn(first, "Again", sections=[mode, changed]).state
    assert second.history[2] == Message.user("# Design system\nred\n\nAgain")
    assert [t.message for t in second.sent_facts.turns] == [0, 2]


def test_switching_model_between_turns_keeps_the_messages() -> None:
    transport = Scripted(reply(text("one")), reply(text("two")))
    run = runner(transport)
    first = run.run_turn(ConversationState(), "hi").state
    run.model = "claude-haiku-4-5"
    second = run.run_turn(first, "more").state
    assert second.model == "claude-haiku-4-5" and first.model == MODEL
    a, b = (wire_messages(x) for x in transport.bodies)
    assert b[: len(a)] == a and json.loads(transport.bodies[1])["model"] == "claude-haiku-4-5"


def test_runner_over_loopback_http_with_a_retry() -> None:
    limited = Reply(status=429, body=b"{}", headers={"retry-after": "0"})
    sleeps: list[float] = []
    with serve(
        limited,
        Reply(body=reply(call("t", "weather", {"city": "Nice"}), stop="tool_use")),
        Reply(body=reply(text("Warm."))),
    ) as server:
        with HTTPTransport(
            base_urls={"anthropic": server.url}, api_keys={"anthropic": "k"}, sleep=sleeps.append
        ) as t:
            result = runner(t).run_turn(ConversationState(), "Nice?")
    assert sleeps == [0.0]
    assert [s.body for s in server.seen] == [result.bodies[0], result.bodies[0], result.bodies[1]]
    assert result.state.history[-1] == Message.assistant("Warm.")


def test_reported_cost_and_unknown_models() -> None:
    assert runner(Scripted()).prices.cost("mystery-model", Usage(input=5)) == Cost(kind="unknown")
    assert runner(Scripted()).prices.cost("x", Usage(reported_cost=0.25)) == Cost(
        kind="reported", dollars=0.25
    )


def chat_reply(
    content: str | None, *calls: tuple[str, str, str], usage: dict[str, Any] | None = None
) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": usage
        or {
            "prompt_tokens": 2000,
            "completion_tokens": 10,
            "prompt_tokens_details": {"cached_tokens": 1024},
        },
    }
    return json.dumps(body).encode()


def test_switching_provider_between_turns_sends_the_same_history() -> None:
    from llmcore.providers import get_provider
    from llmcore.request import Request

    transport = Scripted(
        reply(call("toolu_1", "weather", {"city": "Oslo"}), stop="tool_use"),
        reply(text("Cold.")),
        chat_reply(None, ("call_9", "weather", '{"city":"Bergen"}')),
        chat_reply("Wet."),
    )
    run = runner(transport)
    first = run.run_turn(ConversationState(), "Oslo?").state
    run.provider, run.model = "openai-chat", "gpt-4o"
    second = run.run_turn(first, "And Bergen?")
    assert first.provider == "anthropic" and second.state.provider == "openai-chat"
    assert second.state.model == "gpt-4o"
    assert second.state.history[: len(first.history)] == first.history  # nothing dropped
    expected = get_provider("openai-chat").build_body(
        Request(
            model="gpt-4o",
            system=("Be brief.",),
            tools=(WEATHER.tool,),
            messages=(*first.history, Message.user("And Bergen?")),
        )
    )
    assert transport.bodies[2] == expected  # the same messages, nothing added
    assert second.state.history[-2] == Message.tool(
        ToolResult(call_id="call_9", tool_name="weather", content=b'{"city": "Bergen", "temp": 21}')
    )
    assert second.state.usage.last_round == Usage(input=976, output=10, cache_read=1024)


def test_openai_turn_over_loopback_with_bearer_key() -> None:
    replies = [
        Reply(body=chat_reply(None, ("call_1", "weather", '{"city":"Rome"}'))),
        Reply(body=chat_reply("Sunny.")),
    ]
    with serve(*replies) as server:
        with HTTPTransport(
            base_urls={"openai-chat": server.url}, api_keys={"openai-chat": "sk-test"}
        ) as t:
            run = Runner(provider="openai-chat", model="gpt-4o", transport=t, tools=[WEATHER])
            result = run.run_turn(ConversationState(), "Rome?")
    assert [s.path for s in server.seen] == ["/v1/chat/completions"] * 2
    assert server.seen[0].headers["authorization"] == "Bearer sk-test"
    assert [s.body for s in server.seen] == list(result.bodies)
    assert result.state.history[1] == Message.assistant(
        ToolCall(id="call_1", name="weather", arguments=b'{"city":"Rome"}')
    )
    assert result.state.usage.cost.kind == "estimated"


def test_streamed_turn_over_loopback() -> None:
    from llmcore.request import Params

    def sse_reply(*events: dict[str, Any]) -> Reply:
        body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
        return Reply(body=body, headers={"content-type": "text/event-stream"})

    start = {
        "type": "message_start",
        "message": {"id": "m", "model": MODEL, "usage": {"input_tokens": 7}},
    }
    first = sse_reply(
        start,
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"city":'},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": ' "Pau"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 3},
        },
        {"type": "message_stop"},
    )
    second = sse_reply(
        start,
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Mild."},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 2},
        },
        {"type": "message_stop"},
    )
    with serve(first, second) as server:
        with HTTPTransport(base_urls={"anthropic": server.url}, api_keys={"anthropic": "k"}) as t:
            result = runner(t, params=Params(stream=True)).run_turn(ConversationState(), "Pau?")
    assert b'"stream":true' in server.seen[0].body
    assert result.state.history[1] == Message.assistant(
        ToolCall(id="t1", name="weather", arguments=b'{"city": "Pau"}')
    )
    assert result.state.history[-1] == Message.assistant("Mild.")
    assert result.state.usage.total == Usage(input=14, output=5)


def test_a_tool_returning_text_with_a_lone_surrogate_gives_a_replacement_character():
    from llmcore.runner import _finish_call

    call = ToolCall(id="c1", name="t", arguments=b"{}")
    result, output = _finish_call(call, "bad \ud800 text")
    assert result.content == "bad \ufffd text".encode() and output.images == ()


# ------------------------------------------------------------- one conversation: runner ↔ archive


def test_the_host_conversation_is_advanced_in_place_and_marked_edited(tmp_path) -> None:
    from llmcore.archive import ArchiveStore

    store = ArchiveStore(tmp_path / "agent")
    edits: list[int] = []
    conversation = store.open(on_edited=lambda: edits.append(1))
    transport = Scripted(
        reply(call("toolu_1", "weather", {"city": "Oslo"}), stop="tool_use"),
        reply(text("Cold.")),
    )
    result = runner(transport).run_turn(conversation, "Oslo?")
    assert result.state is conversation.state
    assert [m.role for m in conversation.history] == ["user", "assistant", "tool", "assistant"]
    assert conversation.state.provider == "anthropic" and conversation.state.model == MODEL
    assert conversation.state.usage.total == Usage(input=20, output=10)
    assert edits == [1] and conversation.edited  # one change per turn (A10)
    assert conversation.state.sent_facts == result.state.sent_facts
    store.save(conversation)
    reopened = ArchiveStore(tmp_path / "agent").open()
    assert reopened.state == conversation.state
    runner(Scripted(reply(text("Still cold.")))).run_turn(reopened, "And now?")
    assert len(reopened.history) == 6
    assert store.save(reopened).action == "written"


def test_a_failed_turn_leaves_the_host_conversation_untouched(tmp_path) -> None:
    from llmcore.archive import Conversation

    edits: list[int] = []
    conversation = Conversation(on_edited=lambda: edits.append(1))
    overloaded = APIStatusError("overloaded", provider="anthropic", status=529)
    transport = Scripted(
        reply(call("toolu_1", "weather", {"city": "Lima"}), stop="tool_use"), overloaded
    )
    with pytest.raises(APIStatusError):
        runner(transport).run_turn(conversation, "Lima?")
    assert conversation.state == ConversationState() and edits == [] and not conversation.edited


def test_a_state_value_is_never_changed_and_the_result_carries_the_new_one() -> None:
    start = ConversationState()
    result = runner(Scripted(reply(text("hi")))).run_turn(start, "hello")
    assert start == ConversationState()
    assert result.state.history == (Message.user("hello"), Message.assistant("hi"))
    assert result.rounds == ((Usage(input=10, output=5), result.rounds[0][1]),)
