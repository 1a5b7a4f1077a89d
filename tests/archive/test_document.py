"""A save's file as chunks: the same bytes, hash and comparisons as the file joined (SPEC A2)."""

from __future__ import annotations

import hashlib
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.archive._document import _GROUP, Document
from llmcore.archive.fs import _IOV_MAX, FileSystem
from tests.examples import examples

_PIECES = st.lists(st.binary(max_size=40), max_size=3 * _GROUP)


def _view(piece: bytes, wrap: bool) -> bytes | memoryview:
    return memoryview(b"#" + piece)[1:] if wrap else piece


@pytest.mark.full_count
@settings(max_examples=examples(full=1000, sample=200))
@given(pieces=_PIECES, wrap=st.booleans())
def test_a_document_holds_the_bytes_of_its_pieces_in_order(pieces, wrap):
    whole = b"".join(pieces)
    doc = Document([_view(piece, wrap) for piece in pieces])
    assert b"".join(doc.chunks) == whole
    assert len(doc) == len(whole)
    assert len(doc.chunks) == (len(pieces) if len(pieces) <= 1 else -(-len(pieces) // _GROUP))
    assert doc.version() == hashlib.sha256(whole).hexdigest()
    assert doc.equals(whole)


@pytest.mark.full_count
@settings(max_examples=examples(full=1000, sample=200))
@given(pieces=_PIECES, at=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_a_document_equals_no_other_bytes(pieces, at, byte):
    whole = b"".join(pieces)
    doc = Document(list(pieces))
    assert not doc.equals(None)
    assert not doc.equals(whole + b"x")
    assert not doc.equals(whole[:-1]) or not whole
    if whole:
        index = at % len(whole)
        changed = whole[:index] + bytes([byte]) + whole[index + 1 :]
        assert doc.equals(changed) == (changed == whole)


def _written(path, pieces: list[bytes | memoryview]) -> bytes:
    """The bytes on disk after :meth:`FileSystem.write` of ``pieces`` to a new file."""
    fs = FileSystem()
    fd = fs.open_write(path)
    fs.write(fd, pieces)
    fs.close(fd)
    return path.read_bytes()


def test_pieces_are_written_in_order_past_the_iovec_limit(tmp_path):
    pieces: list[bytes | memoryview] = [f"{n:05d},".encode() for n in range(2 * _IOV_MAX + 7)]
    pieces[3] = memoryview(b"--view--")[2:6]
    assert _written(tmp_path / "out", pieces) == b"".join(pieces)


def test_a_short_writev_is_continued_from_where_it_stopped(tmp_path, monkeypatch):
    real = os.writev
    cuts = iter([5, 0, 13])  # bytes each call writes before it "stops" (then whole calls)

    def short(fd: int, buffers: list[bytes]) -> int:
        limit = next(cuts, None)
        if limit is None:
            return real(fd, buffers)
        return os.write(fd, b"".join(buffers)[:limit]) if limit else 0

    monkeypatch.setattr(os, "writev", short)
    pieces: list[bytes | memoryview] = [b"abc", b"", b"defgh", b"ij", b"klmnopqrstuvwxyz"] * 700
    assert _written(tmp_path / "out", pieces) == b"".join(pieces)


@pytest.mark.full_count
@settings(max_examples=examples(full=1000, sample=200))
@given(
    pieces=_PIECES,
    edits=st.lists(st.tuples(st.integers(0, 3 * _GROUP), st.binary(max_size=8)), max_size=6),
)
def test_a_document_made_after_another_holds_its_own_bytes(pieces, edits):
    # Runs of the same objects take the earlier document's chunks; whatever moved, changed or
    # is new is joined: the bytes are the new pieces' either way.
    first = Document(list(pieces))
    later = list(pieces)
    for at, piece in edits:
        later.insert(at % (len(later) + 1), piece)
    if later:
        later.pop(len(later) // 2)
    doc = Document(later, first)
    assert b"".join(doc.chunks) == b"".join(later)
    assert doc.version() == hashlib.sha256(b"".join(later)).hexdigest()
    again = Document(list(later), doc)
    assert b"".join(again.chunks) == b"".join(later)


def test_an_unchanged_run_of_pieces_takes_the_earlier_chunk():
    pieces = [f"{n:04d}".encode() for n in range(4 * _GROUP)]
    first = Document(pieces)
    appended = Document([b"new head", *pieces, b"new tail"], first)
    assert appended.chunks == [b"new head", *first.chunks, b"new tail"]
    assert all(new is old for new, old in zip(appended.chunks[1:], first.chunks, strict=False))
    changed = Document([*pieces[:5], b"edited", *pieces[6:]], appended)
    assert changed.chunks[1:] == first.chunks[1:]  # the first run is joined again, not the rest
    assert all(new is old for new, old in zip(changed.chunks[1:], first.chunks[1:], strict=True))
