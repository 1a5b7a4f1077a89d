"""Response chains under ``--jobs``: only the keys a chain links share a partition.

Generated Responses logs whose lines name earlier responses (of their key, of another key, of
a line without a key, of another file, or a response never recorded) give the report of one
process, byte for byte; keys no chain links stay apart, so the log keeps its partitions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import audit_paths
from llmcore.audit._links import ANY, Links, line_links
from llmcore.audit.jobs import _tasks, audit_jobs, plan

from .keyed_logs import keyed_log, paired_responses_log, responses_log

_SYSTEM = "shared instructions " * 300


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    lines=st.integers(1, 14),
    keys=st.integers(1, 5),
    files=st.integers(1, 3),
    jobs=st.integers(2, 4),
    piped=st.booleans(),
)
def test_generated_response_chains_give_the_report_of_one_process(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    lines: int,
    keys: int,
    files: int,
    jobs: int,
    piped: bool,
) -> None:
    folder = tmp_path_factory.mktemp("chains")
    paths = []
    for n in range(files):
        path = folder / f"log{n}.jsonl"
        path.write_bytes(responses_log(seed + n, lines, keys, "other_file" if n else "a"))
        paths.append(path)
    data = responses_log(seed + 99, lines, keys, "pipe")
    stdin = (lambda: data) if piped else None
    if piped:
        paths.insert(0, Path("-"))
    one = audit_paths(paths, stdin=stdin)
    many = audit_jobs(paths, stdin=stdin, jobs=jobs, processes=False)
    assert many.to_json() == one.to_json()


def test_keys_no_chain_links_stay_in_partitions_of_their_own(tmp_path: Path) -> None:
    rows = [
        {"conversation": "a", "response_id": "r1"},
        {"conversation": "b", "previous": "r1"},  # b joins a
        {"conversation": "c", "response_id": "r2"},
        {"conversation": "d", "previous": "r9"},  # never recorded: d stays alone
        {"previous": "r2"},  # a line without a key pulls c into the shared partition
        {"conversation": "e"},
    ]
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(_line(row) + b"\n" for row in rows))
    p = plan([path], None)
    roots = {key: p.links.root(key) for key in "abcde"}
    assert roots == {"a": "a", "b": "a", "c": None, "d": "d", "e": "e"}
    assert p.links.shared("c") and not p.links.shared("a")
    tasks = _tasks(p, None, None, 8, None)
    lines = sorted(tuple(n for u in t.units for _o, _l, n in u.lines or ()) for t in tasks)
    assert lines == [(1, 2), (3, 5), (4,), (6,)]
    assert audit_jobs([path], jobs=4, processes=False).to_json() == audit_paths([path]).to_json()


def test_a_chain_across_files_joins_nothing(tmp_path: Path) -> None:
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    first.write_bytes(_line({"conversation": "a", "response_id": "r1"}) + b"\n")
    second.write_bytes(_line({"conversation": "b", "previous": "r1"}) + b"\n")
    p = plan([first, second], None)
    assert not p.links.joined() and len(_tasks(p, None, None, 2, None)) == 2
    one = audit_paths([first, second])
    assert one.requests[1].grouping.startswith("new conversation")
    assert audit_jobs([first, second], jobs=2, processes=False).to_json() == one.to_json()


def test_line_links_reads_key_response_and_link() -> None:
    assert line_links(_line({"conversation": "a", "response_id": "r1"})) == ("a", "r1", None)
    assert line_links(_line({"conversation": "b", "previous": "r1"})) == ("b", None, "r1")
    assert line_links(_line({"previous": "r1"})) == (None, None, "r1")
    plain = jsonbytes.dumps({"model": "gpt-4.1", "input": "x", "previous_response_id": "r7"})
    assert line_links(plain) == (None, None, "r7")
    twice = b'{"model":"gpt-4.1","previous_response_id":"r1","previous_response_id":"r2"}'
    assert line_links(twice) == (None, None, ANY)
    assert line_links(b'{"body": not json, "response_id": "r"}') == (None, None, None)
    keyed = keyed_log(3, conversations=2, turns=1).splitlines()[0]
    assert line_links(keyed)[1:] == (None, None)


def test_a_name_read_twice_joins_every_response_of_its_file() -> None:
    links = Links()
    for link in [("a", "r1", None), ("b", "r2", None), ("c", None, ANY), ("d", None, None)]:
        links.add(link)
    links.end_file()
    assert links.root("a") == links.root("b") == links.root("c") == "a"
    assert links.root("d") == "d" and links.joined()


def _line(row: dict[str, Any]) -> bytes:
    body: dict[str, Any] = {"model": "gpt-4.1", "instructions": _SYSTEM, "input": "hi"}
    if "previous" in row:
        body["previous_response_id"] = row["previous"]
    envelope = {k: v for k, v in row.items() if k != "previous"}
    envelope["body"] = jsonbytes.dumps(body).decode()
    return jsonbytes.dumps(envelope)


def test_chains_within_pairs_of_keys_partition_by_pair(tmp_path: Path) -> None:
    path = tmp_path / "responses.jsonl"
    path.write_bytes(paired_responses_log(5, 400, 8, "a"))
    found = plan([path], None)
    groups = {found.links.root(key) for key in found.keys}
    assert len(found.keys) == 8 and len(groups) == 4
    for a, b in [("k0", "k1"), ("k2", "k3"), ("k4", "k5"), ("k6", "k7")]:
        assert found.links.root(a) == found.links.root(b)
    assert audit_jobs([path], jobs=2).to_json() == audit_paths([path]).to_json()
