"""The scripted model, the built-in agent script, determinism, and the emulate command."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from llmcore.cli.emulate import emulate_command
from llmcore.emulator import (
    AGENT_SCRIPT,
    AGENT_TOOLS,
    AGENT_WORKSPACE,
    AgentWorkspace,
    Emulator,
    ManualClock,
    ScriptError,
    load_script,
    parse_script,
)
from llmcore.emulator.session import run_agent_session
from tests.emulator.helpers import ANTHROPIC_HEADERS, ANTHROPIC_TOOLS


def test_script_file_format(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(
        '{"replies": [{"text": "one"}, {"tool_calls": [{"name": "f", "arguments": "{ \\"a\\" : 1 }"}]}],'
        ' "conversations": [{"match": "special", "replies": [{"text": "special reply"}]}],'
        ' "after_end": {"text": "bye"}}'
    )
    script = load_script(path)
    assert script.reply_for("hello", 0).text == "one"
    assert script.reply_for("hello", 1).tool_calls[0].arguments == '{ "a" : 1 }'
    assert script.reply_for("hello", 2).text == "bye"
    assert script.reply_for("a special request", 0).text == "special reply"
    assert script.reply_for("a special request", 1).text == "bye"
    assert parse_script(b'[{"text": "x"}]').replies[0].text == "x"


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"[{}]", "s.json: $[0]"),
        (
            b'[{"tool_calls": [{"name": "f", "arguments": "[1]"}]}]',
            "s.json: $[0].tool_calls[0].arguments",
        ),
        (b'{"replies": [], "extra": 1}', "s.json: $"),
        (b"not json", "s.json"),
    ],
)
def test_script_errors_name_the_place(data: bytes, where: str) -> None:
    with pytest.raises(ScriptError) as caught:
        parse_script(data, "s.json")
    assert caught.value.location == where


@pytest.mark.parametrize(
    ("data", "where", "key"),
    [
        (b'{"replies": [], "replies": []}', "s.json: $.replies", "replies"),
        (b'[{"text": "a", "text": "b"}]', "s.json: $[0].text", "text"),
        (
            b'{"conversations": [{"match": "x", "match": "y", "replies": []}]}',
            "s.json: $.conversations[0].match",
            "match",
        ),
        (
            b'[{"tool_calls": [{"name": "f", "arguments": {"p": 1, "p": 2}}]}]',
            "s.json: $[0].tool_calls[0].arguments.p",
            "p",
        ),
    ],
)
def test_a_script_repeating_a_key_is_refused_by_path(data: bytes, where: str, key: str) -> None:
    with pytest.raises(ScriptError) as caught:
        parse_script(data, "s.json")
    assert caught.value.location == where
    assert caught.value.message == f'duplicate key "{key}"'


def test_emulate_command_names_a_repeated_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "dup.json"
    bad.write_text('{"replies": [], "replies": []}')
    assert emulate_command(0, bad) == 2
    err = capsys.readouterr().err
    assert err.startswith("llmcore: ") and f"{bad}: $.replies" in err and "duplicate key" in err


def test_replies_follow_the_conversation_history() -> None:
    with Emulator(clock=ManualClock()) as emu, httpx.Client() as client:
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 10,
            "messages": [],
            "tools": ANTHROPIC_TOOLS,
        }
        first = [{"role": "user", "content": "go"}]
        one = client.post(
            emu.base_url + "/v1/messages",
            json={**body, "messages": first},
            headers=ANTHROPIC_HEADERS,
        ).json()
        assert one["content"][0]["name"] == "list_files"
        # the same request again gets the same reply (no server-side conversation state)
        again = client.post(
            emu.base_url + "/v1/messages",
            json={**body, "messages": first},
            headers=ANTHROPIC_HEADERS,
        ).json()
        assert again["content"] == one["content"]


def test_agent_script_and_workspace() -> None:
    assert len(AGENT_SCRIPT.replies) >= 20
    names = {tool.name for tool in AGENT_TOOLS}
    assert names == {"list_files", "read_file", "write_file", "view_image"}
    assert all(c.name in names for r in AGENT_SCRIPT.replies for c in r.tool_calls)
    assert len(AGENT_WORKSPACE["data/big.log"]) > 10_000
    assert 0 < len(AGENT_WORKSPACE["images/logo.png"]) < 200_000
    workspace = AgentWorkspace()
    assert workspace.call("read_file", b'{"path": "nope"}').is_error
    assert workspace.call("view_image", b'{"path": "images/logo.png"}').image is not None
    assert workspace.call("write_file", '{"path": "é", "content": "ü"}'.encode()).content == (
        "wrote 2 bytes to é".encode()
    )


def _session_numbers() -> list[tuple[int, int, int]]:
    with Emulator(clock=ManualClock()) as emu, httpx.Client() as client:
        result = run_agent_session(client, emu.base_url)
    return [
        (u["input_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"])
        for u in result.usages
    ]


def test_agent_session_hits_every_turn_and_is_deterministic() -> None:
    numbers = _session_numbers()
    assert len(numbers) == 24
    assert numbers[0][1] == 0
    # every later request reads at least the previous request's whole prefix, except the one
    # that first adds an image (PROVIDER-RULES §1.6: images invalidate the messages level)
    for index in range(1, len(numbers)):
        previous = sum(numbers[index - 1])
        if index == 7:
            assert numbers[index][1] < previous
        else:
            assert numbers[index][1] == previous
    assert numbers == _session_numbers()


def test_emulate_command_refuses_a_bad_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[{}]")
    assert emulate_command(0, bad) == 2
    assert capsys.readouterr().err.startswith("llmcore: ")
    assert emulate_command(0, tmp_path / "missing.json") == 2


def test_a_request_offering_no_tools_gets_text_never_a_tool_call() -> None:
    from llmcore.emulator.script import NO_TOOLS_TEXT, Reply, Script, ScriptedCall

    with Emulator(clock=ManualClock()) as emu, httpx.Client() as client:
        anthropic = client.post(
            emu.base_url + "/v1/messages",
            json={
                "model": "claude-sonnet-4-5",
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "go"}],
            },
            headers=ANTHROPIC_HEADERS,
        ).json()
        assert anthropic["content"] == [{"type": "text", "text": NO_TOOLS_TEXT}]
        assert anthropic["stop_reason"] == "end_turn"
        chat = client.post(
            emu.openai_base_url + "/chat/completions",
            json={"model": "gpt-4.1", "messages": [{"role": "user", "content": "go"}]},
        ).json()
        assert chat["choices"][0]["message"]["content"] == NO_TOOLS_TEXT
        assert chat["choices"][0]["message"].get("tool_calls") is None
        responses = client.post(
            emu.openai_base_url + "/responses", json={"model": "gpt-5", "input": "go"}
        ).json()
        assert [item["type"] for item in responses["output"]] == ["message"]
    both = Reply(text="Reading.", tool_calls=(ScriptedCall(name="read_file", arguments="{}"),))
    assert Script(replies=(both,)).reply_for("go", 0, tools_offered=False) == Reply(text="Reading.")
