"""Live SDK sessions through the proxy, with the hook on the client (SPEC V6).

A planted break is reported by the proxy, by ``llmcore audit`` over its record and by the
httpx hook with the same request number and JSON path; a clean session reports none; the
record audits to the proxy's own verdicts; the recorded hit rate is what the SDK was told.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from llmcore.audit import audit_paths
from llmcore.emulator import Emulator
from llmcore.proxy import Proxy
from tests.proxy.helpers import watched

KEY = "sk-ant-SECRET-4f1c9e"
SYSTEM = "You are a careful assistant who answers in one line. " * 300
MODEL = "claude-sonnet-4-6"


def _system(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


def _anthropic_session(client: anthropic.Anthropic, plant: bool) -> list[Any]:
    """Three turns: create, stream, create (the third with an edited system prompt if planted)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is in the box?"}]
    usages = []
    first = client.messages.create(
        model=MODEL, max_tokens=50, system=_system(SYSTEM), messages=messages
    )
    usages.append(first.usage)
    messages += [
        {"role": "assistant", "content": first.content},
        {"role": "user", "content": "And then?"},
    ]
    with client.messages.stream(
        model=MODEL, max_tokens=50, system=_system(SYSTEM), messages=messages
    ) as stream:
        second = stream.get_final_message()
    usages.append(second.usage)
    messages += [
        {"role": "assistant", "content": second.content},
        {"role": "user", "content": "Thanks."},
    ]
    system = SYSTEM.replace("one line", "two lines") if plant else SYSTEM
    usages.append(
        client.messages.create(
            model=MODEL, max_tokens=50, system=_system(system), messages=messages
        ).usage
    )
    return usages


def _run(emulator: Emulator, tmp_path: Path, plant: bool) -> dict[str, Any]:
    with watched(emulator, tmp_path) as w:
        client = anthropic.Anthropic(base_url=w.proxy.base_url, api_key=KEY, http_client=w.http)
        usages = _anthropic_session(client, plant)
    seen, hooked, hook_audit, proxy, record = w.seen, w.hooked, w.hook_audit, w.proxy, w.record
    rows = proxy.audit.rows()  # the proxy has stopped: every request's audit has run
    report = audit_paths([record])
    return {
        "proxy": [(o.number, o.record.path) for o in seen if o.is_break],
        "proxy_verdicts": [o.record.verdict for o in seen],
        "hook": [(o.number, o.record.path) for o in hooked],
        "record": [(r.index, r.path) for r in report.requests if r.verdict == "break"],
        "record_verdicts": [r.verdict for r in report.requests],
        "rows": rows,
        "hook_rows": hook_audit.rows(),
        "usages": usages,
        "record_file": record,
    }


def test_a_planted_break_is_reported_alike_by_proxy_record_and_hook(
    emulator: Emulator, tmp_path: Path
) -> None:
    got = _run(emulator, tmp_path, plant=True)
    assert got["proxy"] == got["record"] == got["hook"] == [(2, "system[0].text")]
    assert got["proxy_verdicts"] == got["record_verdicts"] == ["new", "stable", "break"]


def test_a_clean_session_reports_no_break_anywhere(emulator: Emulator, tmp_path: Path) -> None:
    got = _run(emulator, tmp_path, plant=False)
    assert got["proxy"] == got["record"] == got["hook"] == []
    assert got["proxy_verdicts"] == got["record_verdicts"] == ["new", "stable", "stable"]
    usages = got["usages"]
    read = sum(u.cache_read_input_tokens or 0 for u in usages)
    total = sum(
        u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0)
        for u in usages
    )
    assert read > 0
    for rows in (got["rows"], got["hook_rows"]):
        assert len(rows) == 1 and rows[0].requests == 3
        assert rows[0].recorded_hit_rate == pytest.approx(read / total)
        assert 0 < rows[0].max_hit_rate <= 1


def test_the_api_key_is_never_written(
    emulator: Emulator,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    _run(emulator, tmp_path, plant=True)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    out = capsys.readouterr()
    assert KEY not in out.out + out.err
    assert not any(KEY in r.getMessage() for r in caplog.records)


def test_openai_chat_and_responses_create_and_stream_through_the_proxy(
    emulator: Emulator, tmp_path: Path
) -> None:
    record = tmp_path / "openai.jsonl"
    with Proxy(emulator.base_url, record=record) as proxy:
        client = openai.OpenAI(base_url=proxy.base_url + "/v1", api_key="sk-proj-SECRET")
        prompt = [{"role": "system", "content": "Rules. " * 900}, {"role": "user", "content": "hi"}]
        made = client.chat.completions.create(model="gpt-4o", messages=prompt)  # type: ignore[arg-type]
        again = list(
            client.chat.completions.create(
                model="gpt-4o",
                messages=prompt,
                stream=True,
                stream_options={"include_usage": True},  # type: ignore[arg-type]
            )
        )
        answer = client.responses.create(model="gpt-5", input="Rules. " * 900)
        with client.responses.stream(model="gpt-5", input="Rules. " * 900) as events:
            final = events.get_final_response()
        client.close()
    rows = proxy.audit.rows()  # the proxy has stopped: every request's audit has run
    assert made.choices[0].message.content and again[-1].usage is not None
    assert answer.output_text and final.output_text
    assert [(r.provider, r.requests) for r in rows] == [("openai-chat", 2), ("openai-responses", 2)]
    cached = again[-1].usage.prompt_tokens_details.cached_tokens  # type: ignore[union-attr]
    assert cached > 0
    assert rows[0].recorded_hit_rate == pytest.approx(
        cached / (made.usage.prompt_tokens + again[-1].usage.prompt_tokens)
    )  # type: ignore[union-attr]
    report = audit_paths([record])
    assert [r.verdict for r in report.requests] == ["new", "stable", "new", "stable"]
    assert [r.usage.cache_read_tokens for r in report.requests if r.usage] == [
        0,
        cached,
        0,
        final.usage.input_tokens_details.cached_tokens,
    ]  # type: ignore[union-attr]


def test_the_emulators_own_record_audits_as_the_proxys(tmp_path: Path) -> None:
    own, proxied = tmp_path / "emulator.jsonl", tmp_path / "proxy.jsonl"
    with Emulator(record=own) as emu, Proxy(emu.base_url, record=proxied) as proxy:
        with anthropic.Anthropic(base_url=proxy.base_url, api_key=KEY) as client:
            usages = _anthropic_session(client, plant=True)
    lines = [
        [
            {k: v for k, v in json.loads(line).items() if k != "time"}
            for line in f.read_text().splitlines()
        ]
        for f in (own, proxied)
    ]
    assert lines[0] == lines[1] and len(lines[0]) == 3  # the same lines but for the time
    mine, theirs = audit_paths([own]), audit_paths([proxied])
    assert [(r.verdict, r.path) for r in mine.requests] == [
        (r.verdict, r.path) for r in theirs.requests
    ]
    assert [(r.verdict, r.path) for r in mine.requests][2] == ("break", "system[0].text")
    assert [r.usage.cache_read_tokens for r in mine.requests if r.usage] == [
        u.cache_read_input_tokens for u in usages
    ]
    assert KEY.encode() not in own.read_bytes()
