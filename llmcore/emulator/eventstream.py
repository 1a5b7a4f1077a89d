"""The AWS event-stream framing written by the emulator (Bedrock's streamed answers).

One message: total length and headers length (uint32, big-endian), the CRC-32 of those 8
bytes, the headers, the payload, and the CRC-32 of everything before it. Headers here are
strings (value type 7: uint16 length, UTF-8), as Bedrock sends ``:event-type``,
``:content-type`` and ``:message-type``. Source:
https://docs.aws.amazon.com/transcribe/latest/dg/event-stream.html (one framing for every AWS
event stream). The emulator writes it itself, apart from the decoder llmcore's transport reads
it with (SPEC V4); botocore's ``EventStreamBuffer`` reads it back in the tests.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Sequence
from typing import Final

__all__ = ["CONTENT_TYPE", "encode_message"]

CONTENT_TYPE: Final = "application/vnd.amazon.eventstream"
"""The content type of an event-stream response."""


def encode_message(headers: Sequence[tuple[str, str]], payload: bytes) -> bytes:
    """Return one event-stream message with string headers (type 7), in the given order.

    Args:
        headers: ``(name, value)`` pairs, e.g. ``(":event-type", "chunk")``.
        payload: The payload bytes.

    Raises:
        ValueError: A name over 255 bytes or a value over 65,535 bytes.
    """
    parts = bytearray()
    for name, value in headers:
        raw_name, raw_value = name.encode(), value.encode()
        if len(raw_name) > 0xFF or len(raw_value) > 0xFFFF:
            raise ValueError(f"event-stream header {name!r} is too long")
        parts += bytes([len(raw_name)]) + raw_name + b"\x07" + struct.pack(">H", len(raw_value))
        parts += raw_value
    total = 16 + len(parts) + len(payload)  # prelude (12) and message CRC (4)
    prelude = struct.pack(">II", total, len(parts))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + bytes(parts) + payload
    return head + struct.pack(">I", zlib.crc32(head))
