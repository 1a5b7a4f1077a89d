"""Bad input ``llmcore audit`` must refuse in one line (exit 2) or audit, never crash or hang.

Each case is a tester's input that once gave a traceback or ran forever: a JSON ``type`` that
is a list (a nullable field in a tool schema), lone surrogates, deep nesting, YAML aliases
(self-referencing and "billion laughs"), and YAML-only values in ``parsed_body``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from llmcore.audit import Verdict, audit_bodies, first_difference, normalize_body
from llmcore.cli.audit import EXIT_INPUT, EXIT_STABLE, audit_command
from llmcore.messages import Message, Text
from llmcore.providers import PROVIDER_NAMES, get_provider
from llmcore.request import Params, Request, Tool

NULLABLE = {"type": "object", "properties": {"note": {"type": ["string", "null"]}}}
MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai-chat": "gpt-4.1",
    "openai-responses": "gpt-5",
    "openrouter": "anthropic/claude-sonnet-4.5",
    "gemini": "gemini-2.5-flash",
    "bedrock-converse": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
}
CASSETTE_HEAD = (
    "interactions:\n- request:\n    method: POST\n    uri: https://api.anthropic.com/v1/messages\n"
)


def _run(*paths: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = audit_command(list(paths), None, False, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _refused(path: Path) -> str:
    """Audit ``path``; assert exit 2 with one line on stderr and nothing on stdout."""
    code, out, err = _run(path)
    assert (code, out) == (EXIT_INPUT, ""), err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("llmcore: ")
    return err.removesuffix("\n")


@pytest.mark.parametrize("provider", PROVIDER_NAMES)
def test_llmcore_bodies_with_a_nullable_tool_field_are_audited(provider: str) -> None:
    tool = Tool.from_schema("note", "Take a note.", NULLABLE)
    builder = get_provider(provider)
    history = [Message(role="user", content=(Text(text="hi"),))]
    bodies = []
    for reply in ("one", "two"):
        request = Request(
            model=MODELS[provider],
            tools=(tool,),
            messages=tuple(history),
            params=Params(max_tokens=64),
        )
        bodies.append(builder.build_body(request))
        history += [
            Message(role="assistant", content=(Text(text=reply),)),
            Message(role="user", content=(Text(text="more"),)),
        ]
    assert b'"type":["string","null"]' in bodies[0]
    report = audit_bodies(bodies, provider=provider)
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.STABLE]
    assert report.requests[0].total_tokens > 0


def test_object_and_list_type_values_anywhere_are_audited(tmp_path: Path) -> None:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 10,
        "tools": [{"name": "t", "description": "d", "input_schema": NULLABLE}],
        "messages": [
            {"role": "user", "content": [{"type": {"odd": 1}, "text": "x"}]},
            {"role": "assistant", "content": [{"type": ["image"], "text": "y"}]},
        ],
    }
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps(body) + "\n")
    code, out, err = _run(path)
    assert (code, err) == (EXIT_STABLE, "")
    assert "1 request in 1 conversation: new 1" in out


def test_a_lone_surrogate_in_request_raw_is_refused_by_place(tmp_path: Path) -> None:
    path = tmp_path / "case.json"
    raw = '{"model":"x","messages":[{"role":"user","content":"\\ud800"}]}'
    # json.dumps writes the lone surrogate as the escape "\ud800" inside request_raw
    path.write_text(json.dumps({"request": {}, "request_raw": raw.replace("\\ud800", "\ud800")}))
    assert _refused(path) == (
        f"llmcore: {path}: request_raw: lone surrogate \\ud800 at character 51 is not valid "
        "Unicode, so the body cannot have been sent as UTF-8"
    )


def test_a_lone_surrogate_in_a_corpus_request_is_refused_by_place(tmp_path: Path) -> None:
    path = tmp_path / "case.json"
    path.write_text(
        '{"request": {"model": "x", "messages": [{"role": "user", "content": "\\udc01"}]}}'
    )
    assert _refused(path).startswith(f"llmcore: {path}: request: cannot write 'request': ")


def test_an_escaped_lone_surrogate_inside_a_body_is_still_audited(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"model":"claude-x","messages":[{"role":"user","content":"\\ud800"}]}\n')
    assert _run(path)[0] == EXIT_STABLE


def test_a_100000_level_json_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"messages":' + "[" * 100_000 + "]" * 100_000 + "}")
    assert _refused(path) == (
        f"llmcore: {path}: the JSON is nested too deeply to read (Python's recursion limit)"
    )


@pytest.mark.parametrize("depth", [100_000, 650, 700])
def test_a_deep_jsonl_line_is_refused_naming_the_line(tmp_path: Path, depth: int) -> None:
    # 100,000 levels stop the C scanner; 650/700 pass it but stop the item walkers (two frames
    # per level under the default recursion limit of 1,000): both are one line naming the line.
    path = tmp_path / "deep.jsonl"
    ok = '{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"hi"}]}'
    deep = (
        '{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":[{"type":"text",'
        '"text":"x","z":' + "[" * depth + "]" * depth + "}]}]}"
    )
    path.write_text(ok + "\n" + deep + "\n")
    assert _refused(path) == (
        f"llmcore: {path}:2: request body is nested too deeply to audit (Python's recursion limit)"
    )


def test_a_self_referencing_yaml_alias_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "alias.yaml"
    path.write_text(CASSETTE_HEAD + "    parsed_body: &p {x: *p}\n")
    assert _refused(path) == (f"llmcore: {path}:5: YAML aliases are not allowed in a cassette (*p)")


def test_billion_laughs_is_refused_at_once(tmp_path: Path) -> None:
    lines = ['      l0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for k in range(1, 9):
        lines.append(f"      l{k}: &a{k} [" + ",".join([f"*a{k - 1}"] * 9) + "]")
    path = tmp_path / "laughs.yaml"
    path.write_text(
        CASSETTE_HEAD
        + "    parsed_body:\n      model: x\n"
        + "\n".join(lines)
        + "\n      messages: [{role: user, content: [*a8]}]\n"
    )
    assert _refused(path) == f"llmcore: {path}:8: YAML aliases are not allowed in a cassette (*a0)"


def test_ampersands_and_stars_in_bodies_are_not_aliases(tmp_path: Path) -> None:
    path = tmp_path / "amp.yaml"
    path.write_text(
        "interactions:\n- request:\n    method: POST\n"
        "    uri: https://api.anthropic.com/v1/messages?a=1&b=2\n"
        '    body: \'{"model":"claude-x","messages":[{"role":"user","content":"2*3 & more"}]}\'\n'
    )
    assert _run(path)[0] == EXIT_STABLE


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("2024-01-01", "cannot write a date as JSON"),
        (".inf", "inf has no JSON form"),
        ("!!binary aGVsbG8=", "cannot write a bytes as JSON"),
        ("!!set {a, b}", "cannot write a set as JSON"),
    ],
)
def test_yaml_only_values_in_parsed_body_name_the_interaction(
    tmp_path: Path, value: str, problem: str
) -> None:
    path = tmp_path / "pb.yaml"
    good = CASSETTE_HEAD.removeprefix("interactions:\n") + "    body: '{\"messages\": []}'\n"
    path.write_text(
        "interactions:\n"
        + good
        + CASSETTE_HEAD.removeprefix("interactions:\n")
        + f"    parsed_body:\n      model: x\n      when: {value}\n"
    )
    assert _refused(path) == (
        f"llmcore: {path}:6: interactions[1].request.parsed_body: parsed_body is not JSON: "
        f"{problem}"
    )


def test_an_integer_key_in_parsed_body_names_the_interaction(tmp_path: Path) -> None:
    path = tmp_path / "pb.yaml"
    path.write_text(CASSETTE_HEAD + "    parsed_body:\n      model: x\n      1: a\n")
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0].request.parsed_body: parsed_body is not JSON: "
        "object key 1 is not a string"
    )


def test_a_bad_interaction_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(CASSETTE_HEAD + "    body: '{}'\n" + "- response: {}\n")
    assert _refused(path) == (
        f"llmcore: {path}:6: interactions[1]: an interaction needs a 'request' mapping"
    )


def test_a_deep_yaml_cassette_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(CASSETTE_HEAD + "    parsed_body: " + "[" * 100_000 + "]" * 100_000 + "\n")
    message = _refused(path)
    assert message.startswith(f"llmcore: {path}:5: not a valid YAML cassette: ")


@pytest.mark.parametrize("depth", [700, 100_000])
def test_the_matcher_compares_deep_bodies_byte_for_byte(depth: int) -> None:
    deep = (
        b'{"messages":[{"role":"user","content":[{"type":"text","text":"x","z":'
        + b"[" * depth
        + b"]" * depth
        + b"}]}]}"
    )
    assert normalize_body(deep) == deep
    assert first_difference(deep, deep) is None
    diff = first_difference(deep, deep[:-1] + b"x")
    assert diff is not None
    assert (diff.offset_a, diff.offset_b) == (len(deep) - 1, len(deep) - 1)


def test_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    from llmcore.audit.inputs import AuditInputError, read_inputs

    fifo = tmp_path / "bodies.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(AuditInputError, match="not a regular file"):
        read_inputs([fifo])
