"""Parameters that change the answer, and what the real APIs refuse (issue 20 items 2 and 3).

Each test drives the official SDK against the emulator: tool_choice none / forced / named,
structured output parsed by ``chat.completions.parse`` / ``responses.parse``, ``n``, Anthropic
thinking blocks with signatures (streamed and sent back), and the thinking rejections.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pydantic
import pytest

from llmcore.emulator import Emulator, ManualClock
from llmcore.emulator.params import minimal_instance
from llmcore.emulator.script import Reply, Script, ScriptedCall

MODEL = "claude-sonnet-4-6"
READ = {"name": "read_file", "arguments": '{"path": "a.txt"}'}
SCRIPT = Script(
    replies=(
        Reply(text="I will look.", tool_calls=(ScriptedCall(**READ),)),
        Reply(text="Done: the file says hello."),
    )
)
A_TOOLS: list[Any] = [
    {"name": "read_file", "description": "Read.", "input_schema": {"type": "object"}},
    {
        "name": "write_file",
        "description": "Write.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "lines": {"type": "integer", "minimum": 1}},
            "required": ["path", "lines"],
        },
    },
]
C_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": t["name"], "parameters": t["input_schema"]}}
    for t in A_TOOLS
]
R_TOOLS: list[Any] = [
    {"type": "function", "name": t["name"], "parameters": t["input_schema"]} for t in A_TOOLS
]
ASK: list[Any] = [{"role": "user", "content": "Read a.txt"}]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(clock=ManualClock(), script=SCRIPT) as server:
        yield server


@pytest.fixture
def claude(emu: Emulator) -> Iterator[anthropic.Anthropic]:
    client = anthropic.Anthropic(api_key="k", base_url=emu.base_url, max_retries=0)
    yield client
    client.close()


@pytest.fixture
def oai(emu: Emulator) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(api_key="k", base_url=emu.openai_base_url, max_retries=0)
    yield client
    client.close()


def _anthropic_calls(message: Any) -> list[tuple[str, Any]]:
    return [(b.name, b.input) for b in message.content if b.type == "tool_use"]


def test_anthropic_tool_choice_none_any_and_named(claude: anthropic.Anthropic) -> None:
    def ask(choice: Any) -> Any:
        return claude.messages.create(
            model=MODEL, max_tokens=100, messages=ASK, tools=A_TOOLS, tool_choice=choice
        )

    none = ask({"type": "none"})
    assert _anthropic_calls(none) == [] and none.stop_reason == "end_turn"
    assert none.content[0].type == "text" and none.content[0].text == "I will look."
    forced = ask({"type": "any"})
    assert [b.type for b in forced.content] == ["tool_use"]  # no text before a forced call
    assert _anthropic_calls(forced) == [("read_file", {"path": "a.txt"})]
    named = ask({"type": "tool", "name": "write_file"})
    assert _anthropic_calls(named) == [("write_file", {"path": "", "lines": 1})]
    assert named.stop_reason == "tool_use"


def test_chat_tool_choice_none_required_and_named(oai: openai.OpenAI) -> None:
    def ask(choice: Any) -> Any:
        made = oai.chat.completions.create(
            model="gpt-5", messages=ASK, tools=C_TOOLS, tool_choice=choice
        )
        return made.choices[0].message

    assert ask("none").tool_calls is None
    assert ask("none").content == "I will look."
    assert [c.function.name for c in ask("required").tool_calls] == ["read_file"]
    named = ask({"type": "function", "function": {"name": "write_file"}})
    assert [(c.function.name, c.function.arguments) for c in named.tool_calls] == [
        ("write_file", '{"path":"","lines":1}')
    ]


def test_responses_tool_choice_none_and_named(oai: openai.OpenAI) -> None:
    none = oai.responses.create(model="gpt-5", input=ASK, tools=R_TOOLS, tool_choice="none")
    assert [item.type for item in none.output] == ["message"]
    named = oai.responses.create(
        model="gpt-5",
        input=ASK,
        tools=R_TOOLS,
        tool_choice={"type": "function", "name": "write_file"},
    )
    assert [(i.type, getattr(i, "name", None)) for i in named.output] == [
        ("function_call", "write_file")
    ]


class Weather(pydantic.BaseModel):
    city: str
    degrees: int
    tags: list[str]
    windy: bool | None
    unit: str = pydantic.Field(min_length=1, default="C")


class Report(pydantic.BaseModel):
    today: Weather
    kind: str


def test_structured_output_parses_with_the_sdk(oai: openai.OpenAI) -> None:
    parsed = oai.chat.completions.parse(model="gpt-5", messages=ASK, response_format=Report)
    report = parsed.choices[0].message.parsed
    assert isinstance(report, Report) and isinstance(report.today, Weather)
    made = oai.responses.parse(model="gpt-5", input=ASK, text_format=Report)
    assert isinstance(made.output_parsed, Report)


def test_minimal_instance_validates_against_pydantic_schemas() -> None:
    schema = Report.model_json_schema()
    assert Report.model_validate(minimal_instance(schema)).kind == ""
    assert minimal_instance({"type": "string", "enum": ["b", "a"]}) == "b"
    assert minimal_instance({"type": "array", "minItems": 2, "items": {"type": "number"}}) == [0, 0]


def test_n_returns_that_many_choices_streamed_or_not(oai: openai.OpenAI) -> None:
    made = oai.chat.completions.create(model="gpt-5", messages=ASK, n=2)
    assert [c.index for c in made.choices] == [0, 1]
    assert made.choices[0].message.content == made.choices[1].message.content
    stream = oai.chat.completions.create(model="gpt-5", messages=ASK, n=2, stream=True)
    indexes = {choice.index for chunk in stream for choice in chunk.choices}
    assert indexes == {0, 1}
    with pytest.raises(openai.BadRequestError, match="integer below minimum"):
        oai.chat.completions.create(model="gpt-5", messages=ASK, n=0)


THINK = {"type": "enabled", "budget_tokens": 2048}


def _think(claude: anthropic.Anthropic, messages: list[Any], **extra: Any) -> Any:
    return claude.messages.create(
        model=MODEL, max_tokens=4096, messages=messages, tools=A_TOOLS, thinking=THINK, **extra
    )


def test_thinking_block_is_signed_and_its_round_trip_is_checked(
    claude: anthropic.Anthropic,
) -> None:
    first = _think(claude, ASK)
    kinds = [block.type for block in first.content]
    assert kinds == ["thinking", "text", "tool_use"]
    thinking = first.content[0]
    assert thinking.thinking and thinking.signature
    call = first.content[2]
    result = {"type": "tool_result", "tool_use_id": call.id, "content": "hello"}
    history = [
        *ASK,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [result]},
    ]
    second = _think(claude, history)
    assert [block.type for block in second.content] == ["thinking", "text"]

    edited = copy.deepcopy(history)
    edited[1]["content"][0]["thinking"] += " (edited)"
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature` in `thinking`"):
        _think(claude, edited)
    unsigned = copy.deepcopy(history)
    del unsigned[1]["content"][0]["signature"]
    with pytest.raises(anthropic.BadRequestError, match=r"signature: Field required"):
        _think(claude, unsigned)
    dropped = copy.deepcopy(history)
    dropped[1]["content"] = dropped[1]["content"][1:]
    with pytest.raises(anthropic.BadRequestError) as caught:
        _think(claude, dropped)
    assert caught.value.body["error"]["message"] == (  # type: ignore[index]
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`text`. When `thinking` is enabled, a final `assistant` message must start with a "
        "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). "
        "We recommend you include thinking blocks from previous turns. To avoid this "
        "requirement, disable `thinking`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    )


def test_thinking_streams_thinking_and_signature_deltas(claude: anthropic.Anthropic) -> None:
    deltas: list[str] = []
    with claude.messages.stream(
        model=MODEL, max_tokens=4096, messages=ASK, thinking=THINK
    ) as stream:
        for event in stream:
            if event.type == "content_block_delta":
                deltas.append(event.delta.type)
        final = stream.get_final_message()
    assert "thinking_delta" in deltas and "signature_delta" in deltas
    assert final.content[0].type == "thinking" and final.content[0].signature


def test_adaptive_thinking_takes_a_forced_tool_as_the_real_api_did(
    claude: anthropic.Anthropic,
) -> None:
    # pydantic-ai's recorded test_anthropic_opus_46_adaptive_thinking_accepts_tool_output: 200
    made = claude.messages.create(
        model=MODEL,
        max_tokens=4096,
        messages=ASK,
        tools=A_TOOLS,
        thinking={"type": "adaptive"},  # type: ignore[arg-type, typeddict-item]
        tool_choice={"type": "tool", "name": "read_file"},
    )
    assert [block.type for block in made.content][-1] == "tool_use"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"extra_body": {"temperature": 0.2}},  # the 2.14 SDK no longer takes it as an argument
            "`temperature` may only be set to 1 when thinking is enabled",
        ),
        (
            {"tool_choice": {"type": "any"}},
            "Thinking may not be enabled when tool_choice forces tool use.",
        ),
        (
            {"tool_choice": {"type": "tool", "name": "read_file"}},
            "Thinking may not be enabled when tool_choice forces tool use.",
        ),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 512}},
            "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 8192}},
            "`max_tokens` must be greater than `thinking.budget_tokens`",
        ),
    ],
)
def test_thinking_rejections_in_the_provider_shape(
    claude: anthropic.Anthropic, extra: dict[str, Any], message: str
) -> None:
    arguments: dict[str, Any] = {"thinking": THINK, **extra}
    with pytest.raises(anthropic.BadRequestError) as caught:
        claude.messages.create(
            model=MODEL, max_tokens=4096, messages=ASK, tools=A_TOOLS, **arguments
        )
    assert caught.value.status_code == 400
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert message in caught.value.message


def test_prefill_with_thinking_while_thinking_is_off_is_refused(
    claude: anthropic.Anthropic,
) -> None:
    prefill = {
        "role": "assistant",
        "content": [{"type": "thinking", "thinking": "x", "signature": "s"}],
    }
    with pytest.raises(anthropic.BadRequestError, match="When thinking is disabled"):
        claude.messages.create(model=MODEL, max_tokens=100, messages=[*ASK, prefill])
    adaptive = claude.messages.create(
        model=MODEL, max_tokens=100, messages=ASK, thinking={"type": "adaptive"}
    )
    assert adaptive.content[0].type == "thinking"
