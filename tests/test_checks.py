"""What providers reject is said: a warning by default, an error in strict mode (issue 22).

Before, llmcore silently accepted image bytes that are no image, tool names the providers'
pattern refuses, non-JSON tool arguments (sent as ``{"raw_arguments": …}``), non-UTF-8 tool
results (sent with U+FFFD) and an unpaired tool call in a saved archive.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from llmcore import (
    ArchiveStore,
    Conversation,
    FunctionTool,
    Image,
    Message,
    Request,
    Runner,
    Tool,
    ToolCall,
    ToolResult,
)
from llmcore.checks import STRICT_ENV, check_request, is_strict, strict
from llmcore.errors import ProviderRejectsError, ProviderRejectsWarning, UserError
from llmcore.providers.base import ParsedResponse

PNG = b"\x89PNG\r\n\x1a\n0000"


def _request(**changes: object) -> Request:
    parts: dict[str, object] = {
        "image": Image(data=PNG, mime_type="image/png"),
        "name": "read_file",
        "arguments": b'{"path": "a"}',
        "result": b"ok",
    }
    parts.update(changes)
    tool = Tool.from_schema(str(parts["name"]), "A tool.", {"type": "object"})
    return Request(
        model="m",
        tools=(tool,),
        messages=(
            Message.user("Look.", parts["image"]),  # type: ignore[arg-type]
            Message.assistant(ToolCall(id="c1", name="f", arguments=parts["arguments"])),  # type: ignore[arg-type]
            Message.tool(ToolResult(call_id="c1", tool_name="f", content=parts["result"])),  # type: ignore[arg-type]
        ),
    )


def test_a_request_providers_accept_has_no_finding() -> None:
    assert check_request(_request()) == []


@pytest.mark.parametrize(
    ("change", "location", "words"),
    [
        (
            {"image": Image(data=b"not an image", mime_type="image/png")},
            "messages[0].content[1]",
            "no PNG, JPEG, GIF or WebP signature",
        ),
        ({"name": "read file"}, "tools[0].name", "outside the providers' pattern"),
        ({"name": "x" * 65}, "tools[0].name", "outside the providers' pattern"),
        ({"arguments": b"not json"}, "messages[1].content[0]", "raw_arguments"),
        ({"arguments": b"[1, 2]"}, "messages[1].content[0]", "not a JSON object"),
        ({"result": b"caf\xe9"}, "messages[2].content[0]", "not UTF-8"),
    ],
)
def test_each_rejected_case_is_found(change: dict[str, object], location: str, words: str) -> None:
    findings = check_request(_request(**change))
    assert [f[0] for f in findings] == [location]
    assert words in findings[0][1]


def test_unpaired_calls_and_results_are_found() -> None:
    call = Message.assistant(ToolCall(id="c9", name="f", arguments=b"{}"))
    orphan = Message.tool(ToolResult(call_id="zz", tool_name="f", content=b"x"))
    request = Request(
        model="m", messages=(Message.user("hi"), call, Message.assistant("x"), orphan)
    )
    problems = [problem for _, problem in check_request(request)]
    assert problems == [
        "tool call 'c9' has no result before the next reply",
        "tool result for 'zz' answers no open tool call",
    ]


def test_strict_mode_comes_from_the_context_or_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(STRICT_ENV, raising=False)
    assert not is_strict()
    with strict():
        assert is_strict()
    assert not is_strict()
    monkeypatch.setenv(STRICT_ENV, "1")
    assert is_strict()
    assert issubclass(ProviderRejectsError, UserError)


class _Answers:
    """A transport that answers each request with a text reply (Anthropic JSON)."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send(self, provider, body: bytes, *, stream: bool = False) -> ParsedResponse:
        self.sent.append(body)
        reply = (
            b'{"id":"msg_1","type":"message","role":"assistant","model":"m","content":'
            b'[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":'
            b'{"input_tokens":1,"output_tokens":1}}'
        )
        return provider.parse_response(reply)


def test_the_runner_warns_then_sends_and_refuses_in_strict_mode() -> None:
    bad = Image(data=b"not an image", mime_type="image/png")
    transport = _Answers()
    runner = Runner(provider="anthropic", model="claude-sonnet-4-6", transport=transport)
    with pytest.warns(ProviderRejectsWarning, match=r"messages\[0\].content\[1\].*signature"):
        runner.run_turn(Conversation(), Message.user("Look.", bad))
    assert len(transport.sent) == 1
    conversation = Conversation()
    with strict(), pytest.raises(ProviderRejectsError, match="signature") as caught:
        runner.run_turn(conversation, Message.user("Look.", bad))
    assert caught.value.location == "messages[0].content[1]"
    assert len(transport.sent) == 1 and conversation.history == ()


def test_the_runner_warns_about_a_tool_name() -> None:
    tool = FunctionTool.create("read file", "Read.", {"type": "object"}, lambda args: "x")
    runner = Runner(provider="anthropic", model="m", transport=_Answers(), tools=[tool])
    with pytest.warns(ProviderRejectsWarning, match=r"tools\[0\].name"):
        runner.run_turn(Conversation(), "hi")


def test_saving_an_unpaired_tool_call_warns_or_raises(tmp_path: Path) -> None:
    conversation = Conversation()
    conversation.end_turn(
        messages=[
            Message.user("hi"),
            Message.assistant(ToolCall(id="c1", name="f", arguments=b"{}")),
        ],
        provider="anthropic",
        model="m",
    )
    with strict(), pytest.raises(ProviderRejectsError, match="'c1' has no result"):
        ArchiveStore(tmp_path / "strict").save(conversation)
    assert not (tmp_path / "strict").exists()
    with pytest.warns(ProviderRejectsWarning, match="'c1' has no result"):
        assert ArchiveStore(tmp_path / "agent").save(conversation).action == "written"


def test_a_paired_save_is_silent(tmp_path: Path) -> None:
    conversation = Conversation()
    conversation.end_turn(messages=list(_request().messages), provider="anthropic", model="m")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ArchiveStore(tmp_path / "agent").save(conversation)


def test_llmcore_body_warns_in_one_line_and_fails_in_strict_mode(tmp_path: Path) -> None:
    request = tmp_path / "req.json"
    request.write_text(
        '{"model": "m", "tools": [{"name": "read file", "description": "d", '
        '"inputSchema": {"type": "object"}}], "messages": [{"role": "user", '
        '"content": [{"type": "text", "text": "hi"}]}]}'
    )
    command = [
        sys.executable,
        "-c",
        "from llmcore.cli import main; main()",
        "body",
        str(request),
        "-p",
        "anthropic",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("{")
    assert done.stderr.splitlines() == [
        f"llmcore: warning: {request}: $.tools[0].name: tool name 'read file' is outside the "
        "providers' pattern ^[a-zA-Z0-9_-]{1,64}$"
    ]
    strict_run = subprocess.run(
        command,
        capture_output=True,
        text=True,
        check=False,
        env={**__import__("os").environ, STRICT_ENV: "1"},
    )
    assert strict_run.returncode == 2 and strict_run.stdout == ""
    assert len(strict_run.stderr.splitlines()) == 1 and "tools[0].name" in strict_run.stderr
