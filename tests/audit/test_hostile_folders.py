"""A folder run survives any one bad file inside it: the file is listed, the others audited.

And standard input that is closed is named in one line, not an internal error.

Each case is an input that once aborted the whole run with exit 2 when found in a folder (a
cassette that is not YAML, binary junk, a bad ``request.method``, a JSONL envelope with a
number for its body, a file that cannot be read), although the same file named on the command
line is rightly refused in one line. ``--strict`` still exits 2, after the report.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from llmcore.audit import audit_paths
from llmcore.audit.inputs import input_files
from llmcore.cli.audit import EXIT_INPUT, EXIT_STABLE, audit_command

from .test_input_kinds import _good

BAD_FILES = {
    "cut.yaml": b"interactions:\n- request: [\n",
    "junk.yaml": bytes(range(256)) * 4,
    "method.yaml": b"interactions:\n- request: {method: [POST], uri: 5, body: '{}'}\n",
    "envelope.jsonl": b'{"body": 5}\n',
    "junk.json": b"\xff\xfe{",
}


def _run(paths: list[Path], *, strict: bool = False) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = audit_command(paths, None, False, strict=strict, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_one_bad_file_in_a_folder_is_listed_and_the_rest_audited(tmp_path: Path, name: str):
    bad = tmp_path / f"a_{name}"
    bad.write_bytes(BAD_FILES[name])
    good = _good(tmp_path, "b_good.yaml")
    report = audit_paths([tmp_path])
    assert [r.source for r in report.requests] == [
        f"{good}: interactions[0]",
        f"{good}: interactions[1]",
    ]
    assert len(report.skipped) == 1 and report.skipped[0].startswith(f"{bad}")
    code, out, err = _run([tmp_path])
    assert (code, err) == (EXIT_STABLE, "") and "skipped 1 input:" in out
    code, out, err = _run([tmp_path], strict=True)
    assert code == EXIT_INPUT and "2 requests in 1 conversation" in out
    assert err.startswith(f"llmcore: --strict: 1 input skipped (first: {bad}")
    code, out, err = _run([bad])  # named on its own: refused in one line
    assert (code, out) == (EXIT_INPUT, "") and err.count("\n") == 1, err
    assert err.startswith(f"llmcore: {bad}")


def test_a_file_that_cannot_be_read_in_a_folder_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    locked = _good(tmp_path, "a_locked.yaml")
    good = _good(tmp_path, "b_good.yaml")
    read_bytes = Path.read_bytes

    def refuse(self: Path) -> bytes:  # chmod 000 does not stop root: refuse by name
        if self == locked:
            raise PermissionError(13, os.strerror(13), str(self))
        return read_bytes(self)

    monkeypatch.setattr(Path, "read_bytes", refuse)
    report = audit_paths([tmp_path])
    assert {r.file for r in report.requests} == {str(good)}
    assert report.skipped == (f"{locked}: cannot read: {os.strerror(13)}",)


def test_a_symlink_loop_in_a_folder_ends(tmp_path: Path):
    good = _good(tmp_path)
    (tmp_path / "loop").mkdir()
    (tmp_path / "loop" / "up").symlink_to("..", target_is_directory=True)
    report = audit_paths([tmp_path])
    assert {r.file for r in report.requests} == {str(good)} and len(report.requests) == 2


def test_a_folder_lists_its_input_files_as_rglob_does(tmp_path: Path):
    """By relative POSIX path; links to files listed, links to folders not followed; only
    the input suffixes (any case), only regular files."""
    for name in ["b/z.yaml", "b/a.JSONL", "a.b/c.json", "ab.har", "readme.md", "b/c/d.yml"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"{}")
    (tmp_path / "link.yaml").symlink_to(tmp_path / "b" / "z.yaml")
    (tmp_path / "folder.yaml").mkdir()
    (tmp_path / "dangling.json").symlink_to(tmp_path / "missing.json")
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "x.yaml").write_bytes(b"{}")
    (tmp_path / "b" / "out").symlink_to(outside, target_is_directory=True)
    os.mkfifo(tmp_path / "fifo.jsonl")
    listed = [path.relative_to(tmp_path).as_posix() for path, _ in input_files([tmp_path], False)]
    expected = sorted(
        p.relative_to(tmp_path).as_posix()
        for p in tmp_path.rglob("*")
        if p.is_file() and p.suffix.lower() in {".yaml", ".yml", ".jsonl", ".json", ".har"}
    )
    assert (
        listed
        == expected
        == ["a.b/c.json", "ab.har", "b/a.JSONL", "b/c/d.yml", "b/z.yaml", "link.yaml"]
    )


def test_standard_input_closed_is_named_in_one_line(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("sys.stdin", None)  # what Python sets when started with `<&-`
    code, out, err = _run([Path("-")])
    assert (code, out) == (EXIT_INPUT, "")
    assert err == "llmcore: <stdin>: cannot read: standard input is closed\n"
