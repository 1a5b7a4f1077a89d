"""Inputs that are not HTTP request cassettes, bodies stored as mappings, ``--strict`` (V1)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from llmcore.audit import Verdict, audit_paths, read_inputs
from llmcore.cli import app
from llmcore.cli.audit import EXIT_BREAK, EXIT_INPUT, EXIT_STABLE, audit_command

from . import _bodies as b
from . import _wire as w

DATA = Path(__file__).parent / "data" / "pydantic-ai"
ANTHROPIC_URI = "https://api.anthropic.com/v1/messages"
FLASH = w.GEMINI_URI.format(model="gemini-2.5-flash")

WEBSOCKET = """\
version: 1
interactions:
- kind: message
  direction: sent
  data:
    type: session.update
    session: {instructions: Be brief.}
- kind: message
  direction: received
  data: {type: session.updated}
- kind: close
  code: 1000
  reason: ''
  ok: true
"""

PROTOBUF_SAMPLES = """\
version: 1
interactions:
- request_sample:
    json:
      messages:
      - content: [{text: Hi}]
        role: ROLE_USER
      model: grok-4
    raw: !!binary |
      CgQKAkhpEgZncm9rLTQ=
  response_sample:
    json: {id: x}
"""

GRPC_HTTP = """\
interactions:
- request:
    body: !!binary |
      AAAAAAUKA2hpIQ==
    headers:
      content-type:
      - application/grpc
    method: POST
    uri: https://api.x.ai/xai_api.Chat/GetCompletion
  response:
    status: {code: 200, message: OK}
"""

CONFIG = "name: build\nsteps:\n- run: make\n"


def _run(paths: list[Path], *, strict: bool = False, as_json: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = audit_command(paths, None, as_json, strict=strict, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _refused(path: Path) -> str:
    """Audit ``path`` alone, which must exit 2 printing nothing; return its stderr."""
    code, out, err = _run([path])
    assert (code, out) == (EXIT_INPUT, "")
    return err


def _cassette(bodies: list[bytes], uri: str = ANTHROPIC_URI) -> str:
    interactions = [{"request": {"body": x.decode(), "method": "POST", "uri": uri}} for x in bodies]
    return yaml.safe_dump({"interactions": interactions})


def _good(tmp_path: Path, name: str = "good.yaml") -> Path:
    msgs = b.session()
    path = tmp_path / name
    path.write_text(_cassette([b.anthropic(msgs[:1]), b.anthropic(msgs[:3])]))
    return path


def test_a_websocket_cassette_beside_a_good_one_is_listed_not_fatal(tmp_path: Path):
    good = _good(tmp_path, "b_good.yaml")
    (tmp_path / "a_realtime.yaml").write_text(WEBSOCKET)
    report = audit_paths([tmp_path])
    assert [r.source for r in report.requests] == [
        f"{good}: interactions[0]",
        f"{good}: interactions[1]",
    ]
    assert [r.verdict for r in report.requests] == [Verdict.NEW, Verdict.STABLE]
    assert report.skipped == (
        f"{tmp_path / 'a_realtime.yaml'}: a websocket cassette (messages sent and received, "
        "no HTTP requests)",
    )


def test_protobuf_cassettes_and_grpc_interactions_are_skipped_with_the_reason(tmp_path: Path):
    (tmp_path / "samples.xai.yaml").write_text(PROTOBUF_SAMPLES)
    (tmp_path / "grpc.yaml").write_text(GRPC_HTTP)
    good = _good(tmp_path, "z.yaml")
    report = audit_paths([tmp_path])
    assert len(report.requests) == 2
    assert {r.source.split(":")[0] for r in report.requests} == {str(good)}
    assert report.skipped == (
        f"{tmp_path / 'grpc.yaml'}: interactions[0]: a protobuf body (application/grpc), not a "
        "JSON request (POST https://api.x.ai/xai_api.Chat/GetCompletion)",
        f"{tmp_path / 'samples.xai.yaml'}: a protobuf (gRPC) cassette (binary payloads, no "
        "HTTP requests)",
    )


def test_a_websocket_cassette_named_on_the_command_line_is_skipped_too(tmp_path: Path):
    path = tmp_path / "ws.yaml"
    path.write_text(WEBSOCKET)
    inputs, skipped = read_inputs([path])
    assert inputs == [] and len(skipped) == 1 and skipped[0].startswith(f"{path}: a websocket")


def test_yaml_that_is_not_a_cassette_is_skipped_in_a_folder_and_refused_by_name(tmp_path: Path):
    config = tmp_path / "ci.yml"
    config.write_text(CONFIG)
    _good(tmp_path)
    report = audit_paths([tmp_path])
    assert len(report.requests) == 2
    assert report.skipped == (f"{config}: YAML but not a cassette (no 'interactions' list)",)
    assert _refused(config) == f"llmcore: {config}: a cassette needs an 'interactions' list\n"


def test_strict_turns_any_skip_into_exit_2_after_the_report(tmp_path: Path):
    _good(tmp_path)
    (tmp_path / "ws.yaml").write_text(WEBSOCKET)
    code, out, err = _run([tmp_path])
    assert code == EXIT_STABLE and err == ""
    joined = " ".join(line.strip() for line in out.splitlines())  # plain: wrapped at 100
    assert "skipped 1 input:" in out and f"{tmp_path / 'ws.yaml'}: a websocket cassette" in joined
    code, out, err = _run([tmp_path], strict=True)
    assert code == EXIT_INPUT
    assert "2 requests in 1 conversation" in out  # the report is still printed
    assert err == (
        f"llmcore: --strict: 1 input skipped (first: {tmp_path / 'ws.yaml'}: a websocket "
        "cassette (messages sent and received, no HTTP requests))\n"
    )


def test_strict_without_skips_keeps_the_verdict_codes(tmp_path: Path):
    msgs = b.session()
    broken = b.anthropic(msgs[:3]).replace(b"You are terse.", b"You are brief.")
    path = tmp_path / "c.yaml"
    path.write_text(_cassette([b.anthropic(msgs[:1]), broken]))
    assert _run([path], strict=True)[0] == EXIT_BREAK
    assert _run([_good(tmp_path, "g.yaml")], strict=True)[0] == EXIT_STABLE


@pytest.mark.parametrize("as_json", [False, True])
def test_a_run_that_audited_nothing_exits_2_with_one_line(tmp_path: Path, as_json: bool):
    (tmp_path / "ws.yaml").write_text(WEBSOCKET)
    code, out, err = _run([tmp_path], as_json=as_json)
    assert (code, out) == (EXIT_INPUT, "")
    assert err == (
        f"llmcore: no request audited: 1 input skipped (first: {tmp_path / 'ws.yaml'}: a "
        "websocket cassette (messages sent and received, no HTTP requests))\n"
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert _run([empty]) == (
        EXIT_INPUT,
        "",
        "llmcore: no request audited: the inputs hold no request bodies\n",
    )


def _parsed_cassette(bodies: list[dict[str, Any]], key: str) -> str:
    """pydantic-ai's form (``parsed_body``, keys sorted) or a custom serializer's (``body``)."""
    interactions = [
        {"request": {"method": "POST", key: body, "uri": FLASH}, "response": {}} for body in bodies
    ]
    return yaml.safe_dump({"interactions": interactions}, sort_keys=True)


@pytest.mark.parametrize("key", ["parsed_body", "body"])
def test_a_body_stored_as_a_mapping_is_read_and_marked(tmp_path: Path, key: str):
    turns = [w.g_user("Weather in Paris?"), w.g_model("21."), w.g_user("Rome?")]
    first = json.loads(w.gemini(turns[:1]))
    second = json.loads(w.gemini(turns, system="Answer kindly."))
    path = tmp_path / "g.yaml"
    path.write_text(_parsed_cassette([first, second], key))
    inputs, skipped = read_inputs([path])
    assert skipped == []
    assert [i.key_order_recorded for i in inputs] == [False, False]
    assert [i.uri for i in inputs] == [FLASH, FLASH]
    assert json.loads(inputs[1].body) == second  # the same values, keys in the stored order
    report = audit_paths([path])
    rec = report.requests[1]
    assert (rec.provider, rec.model, rec.verdict) == ("gemini", "gemini-2.5-flash", Verdict.BREAK)
    assert rec.path == "systemInstruction.parts[0].text"
    assert rec.key_order_recorded is False
    code, out, _ = _run([path], as_json=True)
    assert code == EXIT_BREAK
    assert [r["key_order_recorded"] for r in json.loads(out)["records"]] == [False, False]
    code, out, _ = _run([path])
    assert "(key order not recorded: no byte offset)" in out
    assert "2 requests read from a parsed body (key order not recorded" in out


def test_a_body_recorded_as_a_string_keeps_its_key_order_flag(tmp_path: Path):
    inputs, _ = read_inputs([_good(tmp_path)])
    assert [(i.key_order_recorded, i.uri) for i in inputs] == [(True, ANTHROPIC_URI)] * 2


def test_a_bedrock_invoke_body_of_another_model_is_skipped(tmp_path: Path):
    uri = w.INVOKE_URI.format(model="meta.llama3-8b-instruct-v1%3A0")
    path = tmp_path / "invoke.yaml"
    path.write_text(_cassette([b'{"prompt":"hi","max_gen_len":5}'], uri))
    report_inputs, skipped = read_inputs([path])
    assert report_inputs == []
    assert skipped == [
        f"{path}: interactions[0]: a Bedrock InvokeModel body of a model other than "
        f"Anthropic's ({uri})"
    ]


def test_real_pydantic_ai_cassettes(tmp_path: Path):
    """The vendored cassettes: Converse and Gemini are audited, websocket and protobuf listed."""
    report = audit_paths([DATA])
    converse = [r for r in report.requests if "bedrock" in r.source]
    gemini = [r for r in report.requests if "google" in r.source]
    assert [(r.provider, r.verdict) for r in converse] == [
        ("bedrock-converse", Verdict.NEW),
        ("bedrock-converse", Verdict.STABLE),
    ]
    assert {r.model for r in converse} == {"us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
    assert [r.key_order_recorded for r in converse] == [True, True]
    assert [(r.provider, r.model, r.key_order_recorded) for r in gemini] == [
        ("gemini", "gemini-2.5-flash-lite", False)
    ] * 2
    assert len(report.requests) == 4
    assert sorted(s.split(": ", 1)[1] for s in report.skipped) == [
        "a protobuf (gRPC) cassette (binary payloads, no HTTP requests)",
        "a websocket cassette (messages sent and received, no HTTP requests)",
    ]
    assert _run([DATA], strict=True)[0] == EXIT_INPUT


@pytest.mark.parametrize(
    "item",
    [
        "- request_stream:\n    json: {model: grok-4}\n    raw: !!binary |\n      CgQKAkhp\n",
        "- collections_method:\n    method: create\n    response_raw: !!binary |\n      CgQKAkhp\n",
    ],
)
def test_every_protobuf_cassette_item_kind_is_skipped(tmp_path: Path, item: str):
    path = tmp_path / "p.xai.yaml"
    path.write_text("version: 1\ninteractions:\n" + item)
    assert read_inputs([path]) == (
        [],
        [f"{path}: a protobuf (gRPC) cassette (binary payloads, no HTTP requests)"],
    )


def test_items_without_request_or_payloads_stay_an_error(tmp_path: Path):
    path = tmp_path / "odd.yaml"
    path.write_text("interactions:\n- response: {status: {code: 200}}\n")
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0]: an interaction needs a 'request' mapping\n"
    )


def test_the_strict_option_reaches_the_command_line(tmp_path: Path):
    _good(tmp_path)
    (tmp_path / "ws.yaml").write_text(WEBSOCKET)
    runner = CliRunner()
    assert runner.invoke(app, ["audit", str(tmp_path)]).exit_code == EXIT_STABLE
    strict = runner.invoke(app, ["audit", str(tmp_path), "--strict"])
    assert strict.exit_code == EXIT_INPUT
    assert strict.stderr.startswith("llmcore: --strict: 1 input skipped")
    assert "--strict" in runner.invoke(app, ["audit", "--help"]).stdout


def test_a_truncated_body_in_a_folder_is_listed_and_refused_by_name(tmp_path: Path):
    good = _good(tmp_path, "b_good.yaml")
    cut = tmp_path / "a_cut.yaml"
    cut.write_text(_cassette([b'{"model": "claude-sonnet-4-6", "messages": [{"role": "us']))
    report = audit_paths([tmp_path])
    assert [r.source for r in report.requests] == [
        f"{good}: interactions[0]",
        f"{good}: interactions[1]",
    ]
    assert len(report.skipped) == 1
    assert report.skipped[0].startswith(f"{cut}:2: interactions[0]: ")
    code, out, err = _run([tmp_path], strict=True)
    assert code == EXIT_INPUT and "2 requests in 1 conversation" in out
    assert err.startswith(f"llmcore: --strict: 1 input skipped (first: {cut}:2: interactions[0]")
    code, out, err = _run([cut])
    assert (code, out) == (EXIT_INPUT, "") and err.startswith(f"llmcore: {cut}:2: interactions[0]")


def test_a_json_cassette_is_read_like_a_yaml_one(tmp_path: Path):
    doc = yaml.safe_load(_cassette([b.anthropic([b.user("hi")]), b.anthropic([b.user("ho")])]))
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    report = audit_paths([path])
    assert [r.source for r in report.requests] == [
        f"{path}: interactions[0]",
        f"{path}: interactions[1]",
    ]
    assert all(r.file == str(path) for r in report.requests)
