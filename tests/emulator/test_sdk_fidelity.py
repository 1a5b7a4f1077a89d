"""The emulator answers the official SDKs as the real APIs do (issue 20 items 1 and 6).

Each test drives ``anthropic`` / ``openai`` (the pinned SDKs) against the emulator on loopback.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anthropic
import openai
import pytest

from llmcore.emulator import Emulator, ManualClock
from llmcore.emulator.script import load_script, parse_script

DOC = "The quick brown fox jumps over the lazy dog. " * 480  # about 5,400 tokens
TOOLS = [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}]


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    with Emulator(clock=ManualClock()) as server:
        yield server


@pytest.fixture
def oai(emu: Emulator) -> Iterator[openai.OpenAI]:
    emu.reset()
    client = openai.OpenAI(api_key="sk-test", base_url=emu.openai_base_url, max_retries=0)
    yield client
    client.close()


def _continued(client: openai.OpenAI, first_input: object) -> int:
    first = client.responses.create(model="gpt-5", input=first_input)  # type: ignore[arg-type]
    second = client.responses.create(
        model="gpt-5", previous_response_id=first.id, input="And a summary?"
    )
    assert first.usage is not None and second.usage is not None
    cached = second.usage.input_tokens_details.cached_tokens
    # the whole first request is the prefix: read in full but its last, partial 128-token step
    assert first.usage.input_tokens - 128 < cached <= first.usage.input_tokens
    return cached


def test_previous_response_id_after_a_string_input_reads_the_prefix(
    emu: Emulator, oai: openai.OpenAI
) -> None:
    from_string = _continued(oai, DOC)
    emu.reset()
    listed = _continued(oai, [{"role": "user", "content": DOC}])
    assert from_string > 4_000  # the document is about 4,900 tokens by the emulator's count
    assert from_string == listed


def test_a_string_input_then_a_tool_loop_by_previous_response_id(oai: openai.OpenAI) -> None:
    first = oai.responses.create(model="gpt-5", input=DOC, tools=TOOLS)  # type: ignore[arg-type]
    call = next(item for item in first.output if item.type == "function_call")
    second = oai.responses.create(
        model="gpt-5",
        previous_response_id=first.id,
        tools=TOOLS,  # type: ignore[arg-type]
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "ok"}],
    )
    assert first.usage is not None and second.usage is not None
    cached = second.usage.input_tokens_details.cached_tokens
    assert first.usage.input_tokens - 128 < cached <= first.usage.input_tokens


SCRIPT = b"""{
  "replies": [{"text": "default"}],
  "conversations": [{"match": "Fix the parser", "replies": [{"text": "parser reply"}]}]
}"""


def _scripted(tmp_path: Path) -> Emulator:
    path = tmp_path / "script.json"
    path.write_bytes(SCRIPT)
    return Emulator(clock=ManualClock(), script=load_script(str(path)))  # a str path


def test_match_reads_every_text_block_of_the_first_user_message(tmp_path: Path) -> None:
    reminder = {"type": "text", "text": "<system-reminder>context</system-reminder>"}
    with _scripted(tmp_path) as server:
        client = anthropic.Anthropic(api_key="k", base_url=server.base_url, max_retries=0)
        asked = client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=100,
            messages=[
                {"role": "user", "content": [reminder, {"type": "text", "text": "Fix the parser"}]}
            ],
        )
        other = client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=100,
            messages=[{"role": "user", "content": [reminder, {"type": "text", "text": "Hi"}]}],
        )
        chat = openai.OpenAI(api_key="k", base_url=server.openai_base_url, max_retries=0)
        parts = [{"type": "text", "text": "<env/>"}, {"type": "text", "text": "Fix the parser"}]
        completion = chat.chat.completions.create(
            model="gpt-5",
            messages=[{"role": "user", "content": parts}],  # type: ignore[list-item]
        )
        response = chat.responses.create(
            model="gpt-5",
            input=[
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "<env/>"},
                        {"type": "input_text", "text": "Fix the parser"},
                    ],
                }
            ],
        )
        client.close()
        chat.close()
    assert asked.content[0].type == "text" and asked.content[0].text == "parser reply"
    assert other.content[0].type == "text" and other.content[0].text == "default"
    assert completion.choices[0].message.content == "parser reply"
    assert response.output_text == "parser reply"


def test_load_script_accepts_str_and_path(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_bytes(SCRIPT)
    assert load_script(str(path)) == load_script(path) == parse_script(SCRIPT, str(path))
