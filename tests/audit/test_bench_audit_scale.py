"""A small sample of ``benchmarks/bench_audit_scale.py``: its rows, floors and equality checks."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.bench_audit_scale import CEILING_ROW, REAL, measure, write_log, write_responses


def test_a_small_keyed_log_and_cassette_folder_give_every_row(tmp_path: Path) -> None:
    log = tmp_path / "gateway.jsonl"
    write_log(log, 100_000)
    assert 100_000 <= log.stat().st_size < 200_000
    result = measure("keyed JSONL", [log], 1, None, True)
    rows = {r["row"]: r for r in result["rows"]}
    assert list(rows) == [
        "floor: read bytes",
        "floor: parse only",
        "--jobs 1",
        "--jobs 2",
        CEILING_ROW,
    ]
    assert rows["--jobs 2"]["equal_to_jobs_1"] is True
    # two processes did twice the work: their requests/s count both
    ceiling = rows[CEILING_ROW]
    assert ceiling["requests_per_s"] * ceiling["seconds"] == pytest.approx(
        2 * result["requests"], rel=0.01
    )
    assert rows["floor: parse only"]["requests_per_s"] > 0 and result["requests"] > 20
    folder = tmp_path / "cassettes"
    shutil.copytree(REAL / "llm-gemini", folder)
    cassettes = measure("cassettes", [folder], 1, None, False)
    same = {r["row"]: r["equal_to_jobs_1"] for r in cassettes["rows"]}
    assert same["--jobs 2"] is True and same["--jobs 1, PyYAML reader (before)"] is True


def test_a_small_responses_log_with_chained_keys_gives_the_same_report(tmp_path: Path) -> None:
    log = tmp_path / "responses.jsonl"
    write_responses(log, 200_000)
    assert log.stat().st_size >= 200_000
    result = measure("Responses JSONL", [log], 1, None, True, ceiling=False)
    rows = {r["row"]: r for r in result["rows"]}
    assert rows["--jobs 2"]["equal_to_jobs_1"] is True and result["requests"] > 100
