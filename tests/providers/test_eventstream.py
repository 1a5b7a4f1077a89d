"""The AWS event-stream framing: llmcore's decoder and the emulator's encoder, each against botocore."""

from __future__ import annotations

import struct
import uuid
import zlib

import pytest
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.emulator.eventstream import encode_message
from llmcore.errors import ResponseParseError
from llmcore.providers._eventstream import (
    MAX_PAYLOAD,
    EventMessage,
    EventStreamDecoder,
    event_kind,
)

names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=20).filter(
    lambda s: len(s.encode()) < 256
)
values = st.text(st.characters(codec="utf-8"), max_size=40)
messages = st.lists(
    st.tuples(
        st.lists(st.tuples(names, values), max_size=4, unique_by=lambda p: p[0]),
        st.binary(max_size=300),
    ),
    max_size=5,
)


def _decode(data: bytes, cuts: list[int]) -> list[EventMessage]:
    decoder = EventStreamDecoder("bedrock")
    out, start = [], 0
    for cut in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
        out += decoder.feed(data[start:cut])
        start = cut
    decoder.close()
    return out


@settings(max_examples=100)
@given(messages, st.lists(st.integers(0, 4000), max_size=8))
def test_encode_then_decode_in_any_chunks_gives_the_messages_back_as_botocore_reads_them(
    msgs, cuts
):
    data = b"".join(encode_message(h, p) for h, p in msgs)
    got = _decode(data, cuts)
    assert [(dict(m.headers), m.payload) for m in got] == [(dict(h), p) for h, p in msgs]
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    assert [(dict(m.headers), m.payload) for m in buffer] == [(dict(h), p) for h, p in msgs]


def _frame(header_bytes: bytes, payload: bytes) -> bytes:
    total = 16 + len(header_bytes) + len(payload)
    prelude = struct.pack(">II", total, len(header_bytes))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + header_bytes + payload
    return head + struct.pack(">I", zlib.crc32(head))


def test_every_header_value_type_decodes_as_botocore_decodes_it():
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    raw = (
        b"\x01t\x00"
        + b"\x01f\x01"
        + b"\x01b\x02\xff"
        + b"\x01s\x03\x01\x00"
        + b"\x01i\x04"
        + struct.pack(">i", -7)
        + b"\x01l\x05"
        + struct.pack(">q", 2**40)
        + b"\x01y\x06\x00\x02\x00\xff"
        + b"\x01z\x07\x00\x03h\xc3\xa9"
        + b"\x02ts\x08"
        + struct.pack(">q", 1700000000123)
        + b"\x01u\x09"
        + u.bytes
    )
    frame = _frame(raw, b"{}")
    (ours,) = EventStreamDecoder("bedrock").feed(frame)
    assert dict(ours.headers) == {
        "t": True,
        "f": False,
        "b": -1,
        "s": 256,
        "i": -7,
        "l": 2**40,
        "y": b"\x00\xff",
        "z": "hé",
        "ts": 1700000000123,
        "u": u,
    }
    buffer = EventStreamBuffer()
    buffer.add_data(frame)
    (theirs,) = list(buffer)
    assert {k: v for k, v in theirs.headers.items() if k not in ("ts", "u")} == {
        k: v for k, v in ours.headers.items() if k not in ("ts", "u")
    }
    assert theirs.headers["u"] == u.bytes


def test_event_kind_reads_the_message_type_headers():
    chunk = EventMessage(headers={":message-type": "event", ":event-type": "chunk"}, payload=b"")
    boom = EventMessage(
        headers={":message-type": "exception", ":exception-type": "throttlingException"},
        payload=b"",
    )
    err = EventMessage(
        headers={":message-type": "error", ":error-code": "InternalFailure"}, payload=b""
    )
    assert [event_kind(m) for m in (chunk, boom, err)] == [
        ("event", "chunk"),
        ("exception", "throttlingException"),
        ("error", "InternalFailure"),
    ]
    assert event_kind(EventMessage(headers={}, payload=b"")) == ("", "")


@pytest.mark.parametrize(
    ("offset", "what"),
    [
        (9, "message 1: prelude CRC mismatch"),
        (-1, "message 1: message CRC mismatch"),
        (20, "message 1: message CRC mismatch"),
    ],
)
def test_a_corrupted_byte_is_a_typed_error_naming_the_message(offset, what):
    first = encode_message([(":event-type", "chunk")], b"one")
    second = bytearray(encode_message([(":event-type", "chunk")], b"two"))
    second[offset] ^= 0x01
    decoder = EventStreamDecoder("bedrock")
    with pytest.raises(ResponseParseError, match=f"^bedrock: event stream {what}$"):
        decoder.feed(first + bytes(second))


def test_a_cut_stream_and_bad_lengths_are_typed_errors():
    data = encode_message([(":event-type", "chunk")], b"payload")
    decoder = EventStreamDecoder("bedrock")
    assert decoder.feed(data[:-3]) == []
    with pytest.raises(
        ResponseParseError, match=r"message 0: the stream ended inside a message \(40 bytes\)"
    ):
        decoder.close()
    big = struct.pack(">II", 16 + MAX_PAYLOAD + 1, 0)
    with pytest.raises(ResponseParseError, match=f"payload of {MAX_PAYLOAD + 1} bytes"):
        EventStreamDecoder("b").feed(big + struct.pack(">I", zlib.crc32(big)))
    short = struct.pack(">II", 16, 8)
    with pytest.raises(ResponseParseError, match="shorter than its headers"):
        EventStreamDecoder("b").feed(short + struct.pack(">I", zlib.crc32(short)))
    with pytest.raises(ResponseParseError, match="unknown header value type 10"):
        EventStreamDecoder("b").feed(_frame(b"\x01x\x0a", b""))
    with pytest.raises(ResponseParseError, match="a header is cut or not UTF-8"):
        EventStreamDecoder("b").feed(_frame(b"\x01x\x07\x00\x09ab", b""))


def test_encode_refuses_a_header_it_cannot_frame():
    with pytest.raises(ValueError, match="too long"):
        encode_message([("n" * 256, "v")], b"")
