"""``llmcore body`` / ``llmcore import`` on bad input: one line on stderr, exit 2, no traceback.

Each case is the exact input from the tester's report.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from llmcore.cli import app

PAIRING = (
    '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"q"}]},'
    '{"role":"assistant","content":[{"type":"toolCall","id":"toolu_1","name":"f","arguments":"{}"}]}]}'
)
OK = '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"q"}]}]}'


def _nest(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _one_line_error(code: int, err: str) -> str:
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("llmcore: "), err
    assert "Traceback" not in err
    return err.strip()


@pytest.mark.parametrize(
    ("text", "provider", "expected"),
    [
        (PAIRING, "anthropic", "$.messages[1]: tool call 'toolu_1' has no tool result"),
        (
            '{"model":"m","params":{"stopSequences":["x"]}}',
            "openai-responses",
            "$.params.stopSequences: ",
        ),
        (
            '{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"q"}]}],'
            '"params":{"extra":{"model":"y"}}}',
            "anthropic",
            "$.params.extra.model: ",
        ),
        ('{"model":"m","params":{"temperature":1e999}}', "anthropic", "the number 1e999"),
        ('{"model":"m","params":{"extra":null}}', "anthropic", "$.params.extra: "),
        ('{"model":"m","params":{"toolChoice":"x"}}', "anthropic", "$.params.toolChoice: "),
        ('{"model":"m","params":{"cacheTtl":"2h"}}', "anthropic", "$.params.cacheTtl: "),
        ('{"model":"m","params":{"cacheMode":"x"}}', "anthropic", "$.params.cacheMode: "),
        (
            '{"model":"m","params":{"extra":{"x":' + _nest(600) + "}}}",
            "anthropic",
            "$.params.extra.x: nests more than 256",
        ),
        (
            '{"model":"m","tools":[{"name":"f","inputSchema":{"a":' + _nest(500) + "}}]}",
            "anthropic",
            "$.tools[0].inputSchema: nests",
        ),
        (
            '{"model":"m","params":{"extra":{"x":' + _nest(990) + "}}}",
            "anthropic",
            "nests more than 256",
        ),
        (
            '{"model":"m","messages":[{"role":["user"],"content":[]}]}',
            "anthropic",
            "$.messages[0].role: ",
        ),
        (
            '{"model":"m","tools":[{"name":"f"},{"name":"f"}]}',
            "anthropic",
            "$.tools[1].name: a second tool",
        ),
        (
            '{"model":"m","tools":[{"name":"f"}],"params":{"toolChoice":{"name":"g"}}}',
            "openai-chat",
            "$.params.toolChoice.name: ",
        ),
        (
            '{"model":"m","messages":[{"role":"assistant","content":[{"type":"image","data":"","mimeType":"image/png"}]}]}',
            "anthropic",
            "an assistant message cannot hold Image",
        ),
    ],
)
def test_body_errors_name_the_file_and_json_path(tmp_path, text, provider, expected):
    path = tmp_path / "r.json"
    path.write_text(text)
    code, out, err = _run("body", str(path), "-p", provider)
    line = _one_line_error(code, err)
    assert line.startswith(f"llmcore: {path}: ")
    assert expected in line
    assert out == ""


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ('{"model":"m"}'.encode("utf-16"), "not valid UTF-8 at byte 0"),
        (b'{"model":"m\xff"}', "not valid UTF-8 at byte 11"),
    ],
)
def test_body_reads_strict_utf8(tmp_path, data, expected):
    path = tmp_path / "r.json"
    path.write_bytes(data)
    code, _, err = _run("body", str(path), "-p", "anthropic")
    assert expected in _one_line_error(code, err)


@pytest.mark.parametrize(
    ("body", "provider", "expected"),
    [
        (
            '{"model":"","max_tokens":5,"messages":[{"role":"user","content":"q"}]}',
            "anthropic",
            "$.model: ",
        ),
        (
            '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"q"}]}',
            "openai-responses",
            "$.input: missing key 'input'",
        ),
        (
            '{"request":{},"request_raw":"{\\"model\\":\\"m\\",\\"x\\":' + _nest(5000) + '}"}',
            "anthropic",
            "$.request_raw: nests",
        ),
        (
            '{"model":"m","max_tokens":5,"messages":[],"metadata":' + _nest(700) + "}",
            "anthropic",
            "$.metadata",
        ),
        (
            '{"model":"m","input":[],"text":' + _nest(900) + "}",
            "openai-responses",
            "nests more than 256",
        ),
        (
            '{"modelId":"m","messages":[{"role":"user","content":[{"text":"a"}]},'
            '{"role":"user","content":[{"text":"b"}]}]}',
            "bedrock-converse",
            "$.messages[1].role: 'user' follows 'user' (messages[0]): Converse roles must"
            " alternate",
        ),
    ],
)
def test_import_errors_are_one_line(tmp_path, body, provider, expected):
    path = tmp_path / "b.json"
    path.write_text(body)
    code, out, err = _run("import", str(path), "-p", provider)
    assert expected in _one_line_error(code, err)
    assert out == ""


def test_import_with_lone_surrogates_writes_replacement_characters(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(
        '{"model":"m","input":[{"role":"user","content":"q"},'
        '{"type":"function_call","call_id":"c","name":"f","arguments":"{\\"a\\":\\"\\ud800\\"}"},'
        '{"type":"function_call_output","call_id":"c","output":"\\ud800"}]}'
    )
    code, out, err = _run("import", str(path), "-p", "openai-responses")
    assert code == 0, err
    assert '"arguments": "{\\"a\\":\\"\ufffd\\"}"' in out
    assert '"content": "\ufffd"' in out


def test_a_directory_is_refused(tmp_path):
    code, _, err = _run("body", str(tmp_path), "-p", "anthropic")
    assert "it is a folder, not a regular file" in _one_line_error(code, err)


def _cli(*args: str, stdout: object = subprocess.PIPE) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", "from llmcore.cli import main; main()", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize("command", ["body", "import"])
def test_a_fifo_is_refused_without_blocking(tmp_path, command):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = _cli(command, str(fifo), "-p", "anthropic")
    assert done.returncode == 2
    assert (
        done.stderr.decode()
        == f"llmcore: {fifo}: cannot read the file (it is a FIFO (named pipe), not a regular file)\n"
    )


@pytest.mark.parametrize("command", ["body", "import"])
def test_a_failed_stdout_write_is_one_line(tmp_path, command):
    path = tmp_path / "r.json"
    recorded = '{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"q"}]}'
    path.write_text(OK if command == "body" else recorded)
    with open("/dev/full", "wb") as full:
        done = _cli(command, str(path), "-p", "anthropic", stdout=full)
    assert done.returncode == 2
    assert done.stderr.decode() == "llmcore: cannot write to stdout (No space left on device)\n"


@pytest.mark.parametrize("command", ["body", "import"])
def test_an_integer_of_5000_digits_is_one_line(tmp_path, command):
    path = tmp_path / "r.json"
    path.write_text('{"model":"m","params":{"maxTokens":' + "9" * 5000 + "}}")
    code, _out, err = _run(command, str(path), "--provider", "anthropic")
    assert _one_line_error(code, err) == (
        f"llmcore: {path}: not valid JSON (an integer of 5000 digits is longer than the 4300 "
        "digits Python reads)"
    )


_EMPTY = '{"model":"m","messages":[]}'
_SYSTEM_ONLY = '{"model":"m","system":"Be terse.","messages":[]}'


@pytest.mark.parametrize(
    ("request_file", "provider", "words"),
    [
        (_EMPTY, "anthropic", 'Anthropic refuses a body without one ("at least one message'),
        (_SYSTEM_ONLY, "anthropic", "Anthropic refuses"),
        (_EMPTY, "openai-chat", "the OpenAI Chat API refuses an empty messages array"),
        ('{"model":"m"}', "gemini", 'Gemini refuses a body without contents ("contents is not'),
    ],
)
def test_body_refuses_a_request_without_messages_where_the_provider_does(
    tmp_path, request_file, provider, words
):
    path = tmp_path / "r.json"
    path.write_text(request_file)
    code, out, err = _run("body", str(path), "-p", provider)
    line = _one_line_error(code, err)
    assert line.startswith(f"llmcore: {path}: $.messages: no messages: {words}")
    assert out == ""


@pytest.mark.parametrize(
    ("request_file", "provider"),
    [
        (_SYSTEM_ONLY, "openai-chat"),  # the system prompt is the body's one message
        (_EMPTY, "openai-responses"),
        (_EMPTY, "openrouter"),
        (_EMPTY, "bedrock-converse"),
    ],
)
def test_body_keeps_an_empty_history_where_the_provider_accepts_it(
    tmp_path, request_file, provider
):
    path = tmp_path / "r.json"
    path.write_text(request_file)
    code, out, err = _run("body", str(path), "-p", provider)
    assert (code, err) == (0, "")
    assert out.startswith("{")


@pytest.mark.parametrize(
    ("body", "provider", "extra", "key"),
    [
        ('{"model":"m","max_tokens":5,"messages":[]}', "anthropic", [], "messages"),
        ('{"model":"m","messages":[]}', "openai-chat", [], "messages"),
        ('{"contents":[]}', "gemini", ["--model", "gemini-2.5-pro"], "contents"),
    ],
)
def test_import_refuses_a_recorded_body_without_messages(tmp_path, body, provider, extra, key):
    path = tmp_path / "b.json"
    path.write_text(body)
    code, out, err = _run("import", str(path), "-p", provider, *extra)
    line = _one_line_error(code, err)
    assert line.startswith(f"llmcore: {path}: $.{key}: no {key}: ")
    assert out == ""
