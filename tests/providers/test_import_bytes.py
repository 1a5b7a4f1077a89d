"""Import keeps tool-call argument bytes: ``body(import(body)) == body`` (SPEC M2, P2; issue 22).

Anthropic ``tool_use.input`` is an object in the body; import takes its exact byte span when it
knows the body's bytes (``import_body(..., raw=)``, and ``llmcore import`` always does), instead
of writing it again compactly (``{"p": "a"}`` became ``{"p":"a"}``). OpenAI ``arguments`` are
strings and keep the UTF-8 bytes of their decoded text.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import Message, Request, Tool, ToolCall, ToolResult, get_provider, jsonbytes
from tests.examples import examples

SPACED = b'{"p": "a", "n" : [1, 2.50],\n "s": "\\u00e9"}'


def _request(arguments: bytes) -> Request:
    tool = Tool.from_schema("f", "A tool.", {"type": "object"})
    return Request(
        model="claude-sonnet-4-6",
        tools=(tool,),
        messages=(
            Message.user("go"),
            Message.assistant(ToolCall(id="toolu_1", name="f", arguments=arguments)),
            Message.tool(ToolResult(call_id="toolu_1", tool_name="f", content=b"ok")),
        ),
    )


def _round_trip(provider: str, body: bytes, *, raw: bool = True) -> bytes:
    chosen = get_provider(provider)
    imported = chosen.import_body(jsonbytes.loads(body), raw=body if raw else None)
    return chosen.build_body(imported.request)


def test_anthropic_import_keeps_the_input_span() -> None:
    body = get_provider("anthropic").build_body(_request(SPACED))
    assert SPACED in body
    assert _round_trip("anthropic", body) == body


def test_anthropic_import_without_the_bytes_writes_compact_json() -> None:
    body = get_provider("anthropic").build_body(_request(SPACED))
    again = _round_trip("anthropic", body, raw=False)
    assert b'"input":{"p":"a","n":[1,2.50],"s":"\xc3\xa9"}' in again or b'"p":"a"' in again
    assert again != body


def test_bytes_that_are_not_the_body_fall_back_to_compact_json() -> None:
    body = get_provider("anthropic").build_body(_request(SPACED))
    other = get_provider("anthropic").build_body(_request(b'{"q": 1}'))
    imported = get_provider("anthropic").import_body(jsonbytes.loads(body), raw=other)
    call = imported.request.messages[1].content[0]
    assert isinstance(call, ToolCall)
    assert json.loads(call.arguments) == json.loads(SPACED)


def test_openai_imports_keep_the_argument_bytes() -> None:
    for provider in ("openai-chat", "openai-responses"):
        body = get_provider(provider).build_body(_request(SPACED))
        assert _round_trip(provider, body) == body, provider
        assert _round_trip(provider, body, raw=False) == body, provider


_OBJECTS = st.builds(
    lambda obj, spaced, ascii_only: json.dumps(
        obj, ensure_ascii=ascii_only, separators=(", ", ": ") if spaced else (",", ":")
    ).encode(),
    st.dictionaries(
        st.text(max_size=6),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=6),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
            max_leaves=6,
        ),
        max_size=4,
    ),
    st.booleans(),
    st.booleans(),
)


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=200))
@given(_OBJECTS)
def test_any_argument_object_survives_anthropic_import(arguments: bytes) -> None:
    body = get_provider("anthropic").build_body(_request(arguments))
    imported = get_provider("anthropic").import_body(jsonbytes.loads(body), raw=body)
    call = imported.request.messages[1].content[0]
    assert isinstance(call, ToolCall)
    assert call.arguments == arguments


def _cli(*args: str) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-c", "from llmcore.cli import main; main()", *args]
    return subprocess.run(command, capture_output=True, check=False)


def test_llmcore_import_then_body_gives_the_recorded_body(tmp_path: Path) -> None:
    body = get_provider("anthropic").build_body(_request(SPACED))
    recorded = tmp_path / "body.json"
    recorded.write_bytes(body)
    case = tmp_path / "case.json"  # a corpus case holding the request as an object
    case.write_bytes(b'{"request": ' + body + b', "response": {}}')
    for source in (recorded, case):
        imported = _cli("import", str(source), "-p", "anthropic")
        assert imported.returncode == 0, imported.stderr
        request = tmp_path / "request.json"
        request.write_bytes(imported.stdout)
        rebuilt = _cli("body", str(request), "-p", "anthropic")
        assert rebuilt.stdout == body, source.name
