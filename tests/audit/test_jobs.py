"""``llmcore audit --jobs N``: partitioned audits give the report of one process, byte for byte.

Most tests run the partitions and the merge in this process (``processes=False``: the same
tasks a pool runs); one runs a real pool of 2 workers through the command line.
"""

from __future__ import annotations

import io
import pickle
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import AuditInputError, audit_paths
from llmcore.audit import _rows as rows_module
from llmcore.audit import jobs as jobs_module
from llmcore.audit._maximum import Entry
from llmcore.audit._rows import (
    FIELDS,
    USAGE_AT,
    Encoder,
    Row,
    _Decoder,
    record_fields,
    record_of,
    rows_of,
    usage_of,
)
from llmcore.audit.jobs import _tasks, audit_jobs, plan
from llmcore.cli.audit import audit_command

from .keyed_logs import keyed_log, write_keyed_log, write_response_chain

REAL = Path(__file__).resolve().parent.parent / "real_traffic"


def _same(paths: list[Path], jobs: int = 3, group: str | None = None) -> None:
    one = audit_paths(paths, group=group)
    many = audit_jobs(paths, group=group, jobs=jobs, processes=False)
    assert many.to_json() == one.to_json()


def test_the_real_traffic_folder_partitioned_gives_the_same_report() -> None:
    report = audit_jobs([REAL], jobs=4, processes=False)
    assert report.to_json() == audit_paths([REAL]).to_json()
    assert len(report.requests) > 300 and report.skipped


def test_a_keyed_log_is_split_by_key_and_gives_the_same_report(tmp_path: Path) -> None:
    path = write_keyed_log(tmp_path / "log.jsonl", 7, conversations=6, turns=6)
    p = plan([path], None)
    assert len(p.keys) == 6 and p.shared  # plain lines stay together
    one = audit_paths([path])
    assert one.breaks and one.rejected and one.recorded and one.counts()["retry"]
    assert len({r.conversation for r in one.requests}) > 1
    _same([path])


def test_cross_key_maximum_is_merged_in_input_order(tmp_path: Path) -> None:
    # two keys sharing a long system prompt: the second conversation's first request reads
    # the prefix the first one wrote (the maximum spans partitions)
    system = "shared " * 2000
    lines = [
        jsonbytes.dumps(
            {
                "conversation": key,
                "body": jsonbytes.dumps(
                    {
                        "model": "gpt-4.1",
                        "messages": [
                            {"role": "system", "content": system},
                            {"role": "user", "content": f"question {key}"},
                        ],
                    }
                ).decode(),
            }
        )
        for key in ("a", "b")
    ]
    path = tmp_path / "two.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    report = audit_jobs([path], jobs=2, processes=False)
    assert report.requests[1].max_cacheable_tokens > 1000
    assert report.to_json() == audit_paths([path]).to_json()


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    conversations=st.integers(1, 4),
    turns=st.integers(1, 4),
    jobs=st.integers(2, 4),
    group=st.sampled_from([None, "file", "key", "prefix"]),
)
def test_partitioned_reports_equal_one_process(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    conversations: int,
    turns: int,
    jobs: int,
    group: str | None,
) -> None:
    folder = tmp_path_factory.mktemp("logs")
    for n in range(2):
        data = keyed_log(seed + n, conversations=conversations, turns=turns, answer_words=8)
        (folder / f"log{n}.jsonl").write_bytes(data)
    _same([folder], jobs=jobs, group=group)


def test_a_cassette_folder_with_logs_and_skips_gives_the_same_report(tmp_path: Path) -> None:
    folder = tmp_path / "mixed"
    shutil.copytree(REAL / "llm-anthropic", folder / "cassettes")
    write_keyed_log(folder / "gateway.jsonl", 3, conversations=3, turns=3)
    (folder / "broken.yaml").write_text("interactions: [\n")
    (folder / "notes.json").write_text('{"neither": 1}')
    _same([folder], jobs=2)


def test_an_unreadable_keyed_file_found_in_a_folder_is_skipped_whole(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    data = keyed_log(9, conversations=3, turns=4)
    bad = b'{"conversation": "c1", "body": "{}", "extra": 1}'
    (folder / "a.jsonl").write_bytes(data + bad + b"\n")
    write_keyed_log(folder / "b.jsonl", 4, conversations=2, turns=2)
    report = audit_jobs([folder], jobs=2, processes=False)
    assert any("ambiguous line" in line for line in report.skipped)
    assert {r.file for r in report.requests} == {str(folder / "b.jsonl")}
    assert report.to_json() == audit_paths([folder]).to_json()


def _error(paths: list[Path], **options: object) -> AuditInputError:
    with pytest.raises(AuditInputError) as caught:
        audit_jobs(paths, **options)  # type: ignore[arg-type]
    return caught.value


def test_errors_are_the_ones_one_process_raises(tmp_path: Path) -> None:
    good = write_keyed_log(tmp_path / "a.jsonl", 1, conversations=3, turns=3)
    lines = keyed_log(2, conversations=3, turns=3).splitlines()
    lines[5] = b'{"conversation": "c0", "body": 7}'  # a refused envelope, in one key's share
    lines[7] = b'{"conversation": "c2", "body": "{}", "oops": 1}'
    bad = tmp_path / "b.jsonl"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(AuditInputError) as caught:
        audit_paths([good, bad])
    expected = caught.value
    got = _error([good, bad], jobs=3, processes=False)
    assert (type(got), got.location, got.message) == (
        type(expected),
        expected.location,
        expected.message,
    )
    assert got.location == f"{bad}:6"
    # reading comes first: a missing file after a refused body is the error
    body = tmp_path / "c.jsonl"
    body.write_bytes(b'{"model": "x"}\n')
    missing = _error([body, tmp_path / "nope.jsonl"], jobs=2, processes=False)
    assert missing.message == "no such file or folder"


def test_the_command_line_with_two_worker_processes(tmp_path: Path) -> None:
    path = write_keyed_log(tmp_path / "log.jsonl", 1, conversations=6, turns=6)
    shutil.copytree(REAL / "llm-anthropic", tmp_path / "cassettes")
    outputs = []
    for jobs in (1, 2):
        out, err = io.StringIO(), io.StringIO()
        code = audit_command(
            [tmp_path / "cassettes", path], None, True, jobs=jobs, out=out, err=err
        )
        outputs.append((code, out.getvalue(), err.getvalue()))
    assert outputs[0] == outputs[1]
    assert outputs[0][0] == 1 and '"requests"' in outputs[0][1]


def test_a_worker_error_reaches_the_command_line_as_one_line(tmp_path: Path) -> None:
    lines = keyed_log(2, conversations=3, turns=3).splitlines()
    lines[4] = b'{"conversation": "c1", "body": "not json"}'
    bad = tmp_path / "b.jsonl"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    out, err = io.StringIO(), io.StringIO()
    assert audit_command([bad], None, False, jobs=2, out=out, err=err) == 2
    assert err.getvalue().startswith(f"llmcore: {bad}:5: ")
    assert err.getvalue().count("\n") == 1 and out.getvalue() == ""


def test_keyless_lines_join_a_key_bucket_so_each_worker_gets_one_task(tmp_path: Path) -> None:
    path = write_keyed_log(tmp_path / "log.jsonl", 5, conversations=6, turns=4)
    p = plan([path], None)
    assert p.shared and 0 < p.shared_bytes < p.size
    tasks = _tasks(p, None, None, 2, None)
    assert len(tasks) == 2
    lines = sorted(n for task in tasks for unit in task.units for _o, _l, n in unit.lines or ())
    assert lines == [n for n, line in enumerate(path.read_bytes().split(b"\n"), 1) if line]
    _same([path], jobs=2)


def test_two_worker_processes_on_repeated_cassettes_give_the_same_report(tmp_path: Path) -> None:
    # the copies repeat every item: a worker's tasks share one item cache
    for n in range(2):
        shutil.copytree(REAL / "pydantic-ai", tmp_path / f"copy{n}")
    one = audit_paths([tmp_path])
    many = audit_jobs([tmp_path], jobs=2)
    assert many.to_json() == one.to_json()
    assert len(one.requests) > 100


_TOKS = st.tuples(
    st.tuples(st.integers(0, 3), st.sampled_from(["user", "assistant"]), st.binary(max_size=8)),
    st.binary(max_size=8),
    st.integers(0, 50),
    st.sampled_from(["tools", "system", "messages"]),
)


@settings(max_examples=100, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(-1, 4), st.booleans(), st.lists(_TOKS, max_size=4)), max_size=12
    ),
    level=st.integers(0, 2),
    recent=st.sampled_from([1, 2, 4096]),
)
def test_rows_decode_to_the_rows_encoded(
    steps: list[tuple[int, bool, list[Any]]], level: int, recent: int
) -> None:
    """Rows of conversations whose histories grow, start again or are rewritten.

    ``recent`` conversations are kept by both sides (1 and 2: some are dropped between two
    rows of theirs, and their next entry is sent whole).
    """
    histories: dict[int, list[Any]] = {}
    encoder, decoder = Encoder(), _Decoder()
    kept = rows_module.RECENT
    rows_module.RECENT = recent
    try:
        for n, (conversation, grows, more) in enumerate(steps):
            toks = [*histories.get(conversation, []), *more] if grows else list(more)
            histories[conversation] = toks
            keys = tuple((tok[0], level) if tok[3] == "messages" else tok[0] for tok in toks)
            entry = Entry("anthropic", "m", None, True, True, keys, tuple(toks), (0,), 1024, 300.0)
            record = [None] * len(FIELDS)
            record[FIELDS.index("index")], record[FIELDS.index("conversation")] = n, conversation
            row = Row((0, n), tuple(record), entry if n % 5 else None, "server", n % 2 == 0)
            back = decoder.decode(pickle.loads(pickle.dumps(encoder.encode(row))))
            assert back == row
    finally:
        rows_module.RECENT = kept


def test_a_growing_history_sends_only_its_new_items() -> None:
    encoder = Encoder()
    toks = [((0, "user", bytes([n])), bytes([n]), 1, "messages") for n in range(6)]
    record = [None] * len(FIELDS)
    record[FIELDS.index("conversation")] = 0
    sent = []
    for n in (2, 4, 6):
        entry = Entry(
            "openai-chat",
            "m",
            None,
            False,
            False,
            tuple(t[0] for t in toks[:n]),
            tuple(toks[:n]),
            (),
            1024,
            300.0,
        )
        new, _base, shared, fields = encoder.encode(Row((0, n), tuple(record), entry))[2]
        sent.append((len(new), shared, len(fields[5])))
    # (table values sent: a key and an item per new one; items shared; keys numbered)
    assert sent == [(4, 0, 2), (4, 2, 2), (4, 4, 2)]


def test_workers_fork_only_from_a_single_threaded_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = threading.active_count() == 1
    assert jobs_module._context().get_start_method() == ("fork" if alone else "forkserver")
    monkeypatch.setattr(jobs_module.threading, "active_count", lambda: 2)
    assert jobs_module._context().get_start_method() == "forkserver"
    path = write_keyed_log(tmp_path / "log.jsonl", 3, conversations=4, turns=3)
    assert audit_jobs([path], jobs=2).to_json() == audit_paths([path]).to_json()


@settings(max_examples=100, deadline=None)
@given(
    files=st.lists(st.integers(1, 5), min_size=1, max_size=8),
    owners=st.data(),
)
def test_streams_merge_in_input_order_each_read_once_the_merge_reaches_it(
    files: list[int], owners: st.DataObject
) -> None:
    # runs of consecutive files, each a task: a task's rows are read only once every row
    # before its first file has been merged
    runs: list[list[tuple[int, int]]] = [[]]
    for ordinal, count in enumerate(files):
        if runs[-1] and owners.draw(st.booleans()):
            runs.append([])
        runs[-1].extend((ordinal, k) for k in range(count))
    merged: list[tuple[int, int]] = []

    def stream(number: int, positions: list[tuple[int, int]]) -> Iterator[Any]:
        assert all(p < positions[0] for p in merged) and len(merged) == positions[0][1] + sum(
            files[: positions[0][0]]
        )
        for position in positions:
            yield number, "mark", Row(position, None, skipped="x")

    streams = [stream(n, run) for n, run in enumerate(runs)]
    starts = [(run[0][0], -1) for run in runs]
    for _number, _mark, row in rows_of(streams, starts):
        merged.append(row.position)
    assert merged == sorted(p for run in runs for p in run)


def test_keyed_lines_on_standard_input_share_their_keys_with_the_files(tmp_path: Path) -> None:
    lines = keyed_log(4, conversations=4, turns=4).splitlines(keepends=True)
    piped = b"".join(lines[: len(lines) // 2])
    path = tmp_path / "rest.jsonl"
    path.write_bytes(b"".join(lines[len(lines) // 2 :]))
    one = audit_paths([Path("-"), path], stdin=lambda: piped)
    p = plan([Path("-"), path], None, lambda: piped)
    assert p.keyed_shared and p.keys
    many = audit_jobs([Path("-"), path], stdin=lambda: piped, jobs=2, processes=False)
    assert many.to_json() == one.to_json()
    assert one.conversations <= 4 + sum(b'"conversation"' not in line for line in lines)


def test_a_response_chain_across_keys_stays_in_one_partition(tmp_path: Path) -> None:
    path = write_response_chain(tmp_path / "responses.jsonl")
    one = audit_paths([path])
    assert one.requests[1].grouping.startswith("joined: previous_response_id names")
    p = plan([path], None)
    assert not p.keyed_shared and p.links.root("a") == p.links.root("b") != p.links.root("c")
    tasks = _tasks(p, None, None, 2, None)
    assert sorted(len(task.units[0].lines or ()) for task in tasks) == [1, 2]
    assert audit_jobs([path], jobs=2, processes=False).to_json() == one.to_json()


def test_records_built_from_their_fields_equal_the_records() -> None:
    records = audit_paths([REAL / "pydantic-ai"]).requests
    assert len(records) > 100
    for record in records:
        values = list(record_fields(record))
        values[USAGE_AT] = usage_of(values[USAGE_AT])
        built = record_of(values)
        assert built == record
        assert repr(built) == repr(record) and hash(built) == hash(record)
    assert any(record.usage is not None for record in records)
