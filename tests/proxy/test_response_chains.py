"""``previous_response_id`` chains joined live: proxy, record and hook (SPEC V6).

A Responses request carrying ``previous_response_id`` continues the conversation of the
response it names. The proxy and the hook read each answer's id as it passes (JSON or the
stream's ``response.created``), the record writes it (``response_id``), and ``llmcore audit``
over the record joins the chain as it does for a cassette's recorded ids.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import LiveAudit, Observation, audit_paths
from llmcore.audit.live import RecordWriter
from llmcore.audit.tap import UsageTap
from llmcore.emulator import Emulator
from tests.proxy.helpers import watched

RULES = "Answer from the house rules, briefly. " * 200
MODEL = "gpt-5"


def _chain(client: openai.OpenAI, plant: bool) -> list[str]:
    """Four requests, each after the first continuing the previous response (one streamed)."""
    first = client.responses.create(model=MODEL, instructions=RULES, input="What is rule one?")
    second = client.responses.create(
        model=MODEL, instructions=RULES, input="And rule two?", previous_response_id=first.id
    )
    with client.responses.stream(
        model=MODEL, instructions=RULES, input="Rule three?", previous_response_id=second.id
    ) as events:
        third = events.get_final_response()
    rules = RULES.replace("briefly", "at length") if plant else RULES
    fourth = client.responses.create(
        model=MODEL, instructions=rules, input="Thanks.", previous_response_id=third.id
    )
    return [first.id, second.id, third.id, fourth.id]


def _verdicts(observations: list[Observation]) -> list[tuple[int, int, str, str | None]]:
    return [(o.number, o.conversation, o.record.verdict.value, o.record.path) for o in observations]


@pytest.mark.parametrize("plant", [False, True], ids=["clean", "planted"])
def test_a_chain_is_one_conversation_for_proxy_record_and_hook(
    emulator: Emulator, tmp_path: Path, plant: bool
) -> None:
    with watched(emulator, tmp_path) as w:
        client = openai.OpenAI(
            base_url=w.proxy.base_url + "/v1", api_key="sk-x", http_client=w.http
        )
        ids = _chain(client, plant)
    seen, hooked, hook_audit, proxy, record = w.seen, w.hooked, w.hook_audit, w.proxy, w.record
    expected = [(0, 0, "new", None), (1, 0, "continuation", "input[0]")]
    expected.append((2, 0, "continuation", "input[0]"))
    expected.append(
        (3, 0, "break", "instructions") if plant else (3, 0, "continuation", "input[0]")
    )
    assert _verdicts(seen) == expected
    assert [(o.number, o.record.path) for o in hooked] == (
        [(3, "instructions")] if plant else []
    )  # the hook saw the same requests, before they were sent
    for rows in (proxy.audit.rows(), hook_audit.rows()):
        assert [(r.conversation, r.requests, r.break_count) for r in rows] == [(0, 4, int(plant))]
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    assert [line.get("response_id") for line in lines] == ids
    assert len({line["conversation"] for line in lines}) == 1
    report = audit_paths([record])
    assert [(r.index, r.conversation, r.verdict.value, r.path) for r in report.requests] == [
        (n, 0, verdict, path) for n, _, verdict, path in expected
    ]


def test_the_emulators_own_record_names_the_responses(tmp_path: Path) -> None:
    own = tmp_path / "emulator.jsonl"
    with Emulator(record=own) as emu, openai.OpenAI(base_url=emu.openai_base_url, api_key="k") as c:
        ids = _chain(c, plant=True)
    lines = [json.loads(line) for line in own.read_text().splitlines()]
    assert [line.get("response_id") for line in lines] == ids
    assert [(r.conversation, r.verdict.value) for r in audit_paths([own]).requests] == [
        (0, "new"),
        (0, "continuation"),
        (0, "continuation"),
        (0, "break"),
    ]


def test_a_chain_survives_the_audits_rebuild() -> None:
    audit = LiveAudit(max_conversations=1)  # rebuilt every 4 requests
    body = b'{"model":"gpt-5","instructions":"R","input":"q0"}'
    previous = audit.observe(body, path="/v1/responses")
    audit.answered(previous, 200, None, "resp_0")
    for n in range(1, 9):
        body = (
            b'{"model":"gpt-5","instructions":"R","input":"q%d","previous_response_id":"resp_%d"}'
        )
        observation = audit.observe(body % (n, n - 1), path="/v1/responses")
        assert (observation.conversation, observation.record.verdict.value) == (
            0,
            "continuation",
        ), n
        audit.answered(observation, 200, None, f"resp_{n}")
    assert [(r.conversation, r.requests) for r in audit.rows()] == [(0, 9)]


def test_an_unknown_response_id_starts_its_own_conversation(tmp_path: Path) -> None:
    audit = LiveAudit()
    first = audit.observe(b'{"model":"gpt-5","input":"a"}', path="/v1/responses")
    audit.answered(first, 200, None, "resp_a")
    body = b'{"model":"gpt-5","input":"b","previous_response_id":"resp_other"}'
    other = audit.observe(body, path="/v1/responses")
    assert (other.conversation, other.record.verdict.value) == (1, "new")
    failed = audit.observe(b'{"model":"gpt-5","input":"c"}', path="/v1/responses")
    audit.answered(failed, 500, None, "resp_c")  # an error answer names nothing
    body = b'{"model":"gpt-5","input":"d","previous_response_id":"resp_c"}'
    assert audit.observe(body, path="/v1/responses").conversation == 3
    writer = RecordWriter(tmp_path / "r.jsonl")
    writer.write(first, 200, None)
    writer.close()
    assert "response_id" not in json.loads((tmp_path / "r.jsonl").read_text())


def test_the_tap_reads_a_responses_id_from_json_and_from_the_stream() -> None:
    tap = UsageTap("application/json")
    tap.feed(b'{"id": "resp_1", "object": "response", "usage": {"input_tokens": 3}}')
    assert tap.finish() == {"input_tokens": 3} and tap.response_id == "resp_1"
    chat = UsageTap("application/json")
    chat.feed(b'{"id": "chatcmpl-1", "object": "chat.completion", "usage": {}}')
    assert chat.finish() == {} and chat.response_id is None
    stream = UsageTap("text/event-stream")
    created = b'{"type":"response.created","response":{"id":"resp_9","object":"response"}}'
    stream.feed(b"event: response.created\ndata: " + created[:30])
    stream.feed(created[30:] + b"\n\n")
    assert stream.response_id == "resp_9"  # known from the first event, before the end
    assert stream.finish() is None


RESPONSES_SSE = (
    b"event: response.created\n"
    b'data: {"type":"response.created","response":{"id":"resp_7","object":"response",'
    b'"usage":null}}\n\n'
    b"event: response.output_text.delta\n"
    b'data: {"type":"response.output_text.delta","delta":"hi"}\n\n'
    b"event: response.completed\n"
    b'data: {"type":"response.completed","response":{"id":"resp_7","object":"response",'
    b'"usage":{"input_tokens":5,"output_tokens":1}}}\n\n'
)


@settings(max_examples=50)
@given(st.lists(st.integers(min_value=1, max_value=len(RESPONSES_SSE) - 1), max_size=10))
def test_the_response_id_read_from_a_stream_does_not_depend_on_its_chunking(
    cuts: list[int],
) -> None:
    tap = UsageTap("text/event-stream")
    edges = [0, *sorted(set(cuts)), len(RESPONSES_SSE)]
    for start, end in itertools.pairwise(edges):
        tap.feed(RESPONSES_SSE[start:end])
    assert tap.finish() == {"input_tokens": 5, "output_tokens": 1}
    assert tap.response_id == "resp_7"


@settings(max_examples=20, deadline=None)
@given(
    length=st.integers(min_value=1, max_value=8),
    starts=st.lists(st.booleans(), min_size=8, max_size=8),
)
def test_every_chain_is_one_conversation_live_and_in_its_record(
    tmp_path_factory: pytest.TempPathFactory, length: int, starts: list[bool]
) -> None:
    """Chains of any length, interleaved with fresh requests: one conversation per chain."""
    path = tmp_path_factory.mktemp("chains") / "record.jsonl"
    audit, writer = LiveAudit(), RecordWriter(path)
    chain: list[int] = []
    previous: str | None = None
    for n in range(length):
        if starts[n]:  # a fresh request of its own between the chain's links
            fresh = audit.observe(b'{"model":"gpt-5","input":"fresh %d"}' % n, path="/v1/responses")
            audit.answered(fresh, 200, None, f"resp_fresh_{n}")
            writer.write(fresh, 200, None, f"resp_fresh_{n}")
        body = {"model": "gpt-5", "instructions": "R", "input": f"q{n}"}
        if previous is not None:
            body["previous_response_id"] = previous
        link = audit.observe(jsonbytes.dumps(body), path="/v1/responses")
        previous = f"resp_{n}"
        audit.answered(link, 200, None, previous)
        writer.write(link, 200, None, previous)
        chain.append(link.conversation)
    writer.close()
    assert len(set(chain)) == 1
    recorded = audit_paths([path]).requests
    by_line = {r.index: r.conversation for r in recorded}
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    chain_lines = [i for i, line in enumerate(lines) if "instructions" in line["body"]]
    assert len({by_line[i] for i in chain_lines}) == 1
    assert [recorded[i].verdict.value for i in chain_lines] == ["new"] + ["continuation"] * (
        length - 1
    )
