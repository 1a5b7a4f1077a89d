"""Finding a keyed log's lines in byte ranges: the ranges joined are one scan of the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import audit_paths
from llmcore.audit import jobs as jobs_module
from llmcore.audit._keyscan import find_range, joined, ranges
from llmcore.audit.jobs import audit_jobs

from .keyed_logs import keyed_log, responses_log

_LINES = st.one_of(
    st.sampled_from([b"", b"   ", b"\r", b"not json", b'{"body": 1']),
    st.builds(
        lambda key, rid: jsonbytes.dumps(
            {"conversation": key, "body": {"model": "m", "input": "x"}, "response_id": rid}
        ),
        st.sampled_from(["a", "b", "c"]),
        st.sampled_from(["r1", "r2"]),
    ),
    st.builds(
        lambda key: jsonbytes.dumps({"conversation": key, "body": "{}"}),
        st.sampled_from(["a", "b", "\u00e9"]),
    ),
    st.just(b'{"model":"m","input":"x","previous_response_id":"r1"}'),
)


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.tuples(_LINES, st.sampled_from([b"\n", b"\r\n"])), max_size=12),
    last=st.booleans(),
    cuts=st.lists(st.floats(0, 1), max_size=6),
)
def test_ranges_joined_are_one_scan_of_the_file(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[tuple[bytes, bytes]],
    last: bool,
    cuts: list[float],
) -> None:
    data = b"".join(line + end for line, end in lines)
    if lines and not last:  # the last line without its newline
        data = data.removesuffix(lines[-1][1])
    path = tmp_path_factory.mktemp("scan") / "log.jsonl"
    path.write_bytes(data)
    points = sorted({0, len(data), *(int(c * len(data)) for c in cuts)})
    parts = [find_range(str(path), a, b) for a, b in zip(points, points[1:], strict=False)]
    whole = find_range(str(path))
    got = joined(parts) if parts else find_range(str(path), 0, 0)
    assert (got.lines, got.key_bytes, got.links) == (whole.lines, whole.key_bytes, whole.links)
    assert got.count == (whole.count if parts else 0)


def test_ranges_cover_the_bytes_in_order() -> None:
    assert ranges(10, 4) == [(0, 2), (2, 5), (5, 7), (7, 10)]
    assert ranges(2, 4) == [(0, 1), (1, 2)]
    assert ranges(0, 4) == [(0, 0)]


def test_workers_find_the_keys_of_a_large_log_and_give_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs_module, "RANGE_MIN", 1)
    log = tmp_path / "log.jsonl"
    log.write_bytes(keyed_log(5, conversations=5, turns=4) + responses_log(6, 12, 3, "a"))
    one = audit_paths([log])
    assert audit_jobs([log], jobs=2).to_json() == one.to_json()
