"""``llmcore audit --engine dask``: the audit on a local 2-worker Dask cluster equals ``--jobs 1``.

One in-process cluster (2 workers, one thread each) serves the whole module and is closed after.
"""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from distributed import Client, LocalCluster

from llmcore import jsonbytes
from llmcore.audit import AuditInputError, audit_paths
from llmcore.audit.engine import Columns, _aliases, _chains, _Piece, audit_dask
from llmcore.cli.audit import audit_command

from .keyed_logs import keyed_log, responses_log, write_keyed_log, write_response_chain


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        yield client


def _renamed(report_json: bytes, old: str, new: str) -> bytes:
    return report_json.replace(old.encode(), new.encode())


def test_a_keyed_log_on_the_cluster_equals_one_process(client: Client, tmp_path: Path) -> None:
    a = write_keyed_log(tmp_path / "a.jsonl", 3, conversations=6, turns=6)
    b = write_keyed_log(tmp_path / "b.jsonl", 2, conversations=3, turns=4)
    one = audit_paths([a, b])
    assert one.breaks and one.rejected
    got = audit_dask([str(a), str(b)], scheduler=client)
    assert got.to_json() == one.to_json()
    grouped = audit_dask([str(tmp_path)], scheduler=client, group="file")
    assert grouped.to_json() == audit_paths([tmp_path], group="file").to_json()


def test_a_response_chain_across_keys_equals_one_process(client: Client, tmp_path: Path) -> None:
    path = write_response_chain(tmp_path / "responses.jsonl")
    one = audit_paths([path])
    assert one.requests[1].grouping.startswith("joined: previous_response_id names")
    got = audit_dask([str(path)], scheduler=client, partitions=8)
    assert got.to_json() == one.to_json()


def test_response_chains_join_only_the_keys_they_link(client: Client, tmp_path: Path) -> None:
    paths = []
    for n, tag in enumerate(("a", "other_file")):
        path = tmp_path / f"log{n}.jsonl"
        path.write_bytes(responses_log(9 + n, 10, 6, tag))
        paths.append(path)
    found = [_chains(_Piece(n, str(path), True), Columns()) for n, path in enumerate(paths)]
    aliases = _aliases(found)
    assert set(aliases.values()) == {None, "k0"} and len(aliases) < 6  # not every key shared
    one = audit_paths(paths)
    assert any(r.grouping.startswith("joined: previous_response_id") for r in one.requests)
    got = audit_dask([str(path) for path in paths], scheduler=client, partitions=8)
    assert got.to_json() == one.to_json()


def test_gzip_and_an_fsspec_url_read_the_same_lines(client: Client, tmp_path: Path) -> None:
    data = keyed_log(4, conversations=4, turns=5)
    plain = tmp_path / "log.jsonl"
    plain.write_bytes(data)
    packed = tmp_path / "log.jsonl.gz"
    packed.write_bytes(gzip.compress(data))
    expected = audit_paths([plain]).to_json()
    got = audit_dask([str(packed)], scheduler=client).to_json()
    assert _renamed(got, str(packed), str(plain)) == expected
    with fsspec.open("memory://logs/log.jsonl", "wb") as file:
        file.write(data)
    url = audit_dask(["memory://logs"], scheduler=client).to_json()
    assert _renamed(url, "memory://logs/log.jsonl", str(plain)) == expected


def _rows(data: bytes) -> list[dict[str, object]]:
    rows = []
    for line in data.splitlines():
        value = jsonbytes.loads(line)
        if "body" not in value:
            value = {"body": line.decode()}
        if value.get("status", 0) is None:
            value["status"] = 503  # no Parquet form for "no response" (a null is not recorded)
        rows.append(value)
    return rows


def test_parquet_columns_with_a_mapping(client: Client, tmp_path: Path) -> None:
    rows = _rows(keyed_log(6, conversations=4, turns=5))
    jsonl = tmp_path / "same.jsonl"
    jsonl.write_bytes(b"\n".join(jsonbytes.dumps(r) for r in rows) + b"\n")
    table = pa.table(
        {
            "request_body": [r["body"] for r in rows],
            "session": [r.get("conversation") for r in rows],
            "usage": [jsonbytes.dumps(r["usage"]).decode() if "usage" in r else None for r in rows],
            "sent": [r.get("time") for r in rows],
            "status": pa.array([r.get("status") for r in rows], pa.int64()),
        }
    )
    path = tmp_path / "log.parquet"
    pq.write_table(table, path, row_group_size=7)
    columns = Columns(body="request_body", conversation="session", time="sent")
    got = audit_dask([str(path)], scheduler=client, columns=columns).to_json()
    assert _renamed(got, str(path), str(jsonl)) == audit_paths([jsonl]).to_json()
    with pytest.raises(AuditInputError, match="no body column 'body'"):
        audit_dask([str(path)], scheduler=client)


def test_errors_name_the_file_and_line(client: Client, tmp_path: Path) -> None:
    lines = keyed_log(2, conversations=3, turns=3).splitlines()
    lines[4] = b'{"conversation": "c1", "body": "{}", "extra": 1}'
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(AuditInputError) as caught:
        audit_dask([str(bad)], scheduler=client)
    assert caught.value.location == f"{bad}:5"
    with pytest.raises(AuditInputError, match="no such file or folder"):
        audit_dask([str(tmp_path / "missing.jsonl")], scheduler=client)


def test_the_command_line_on_a_scheduler(client: Client, tmp_path: Path) -> None:
    path = write_keyed_log(tmp_path / "log.jsonl", 1, conversations=6, turns=6)
    address = client.scheduler.address
    outputs = []
    for options in ({"jobs": 1}, {"engine": "dask", "scheduler": address}):
        out, err = io.StringIO(), io.StringIO()
        code = audit_command([str(path)], None, True, out=out, err=err, **options)  # type: ignore[arg-type]
        outputs.append((code, out.getvalue(), err.getvalue()))
    assert outputs[0] == outputs[1] and outputs[0][0] == 1


def test_without_the_scale_extra_the_error_names_it(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text("{}\n")
    code = (
        "import sys; sys.modules['dask'] = None\n"
        "from llmcore.errors import MissingDependencyError\n"
        "from llmcore.audit.engine import audit_dask\n"
        "try:\n"
        f"    audit_dask([{str(path)!r}])\n"
        "except MissingDependencyError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout == (
        "llmcore audit --engine dask needs the 'scale' extra (dask is not installed):"
        " pip install 'llmcore[scale]'\n"
    )
