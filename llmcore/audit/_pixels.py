"""Pixel size of an image and page count of a PDF, read from their bytes (SPEC V5).

The auditor's image token rules (:mod:`llmcore.audit.estimate`) need each image's width and
height. They are read from the file's own header, as each format defines it, without decoding
the image and without a dependency:

* PNG: the ``IHDR`` chunk that follows the 8-byte signature holds width and height as big-endian
  32-bit integers (https://www.w3.org/TR/png-3/#11IHDR);
* GIF: the logical screen descriptor after ``GIF87a`` / ``GIF89a`` holds them as little-endian
  16-bit integers (https://www.w3.org/Graphics/GIF/spec-gif89a.txt, section 18);
* JPEG: the first start-of-frame marker (``SOF0``–``SOF15`` but ``DHT`` ``0xC4``, ``JPG`` ``0xC8``
  and ``DAC`` ``0xCC``) holds height then width as big-endian 16-bit integers
  (ITU-T T.81, B.2.2);
* WebP: the ``VP8 `` (lossy), ``VP8L`` (lossless) or ``VP8X`` (extended) chunk of the RIFF file
  (https://developers.google.com/speed/webp/docs/riff_container).

A PDF's pages are its ``/Type /Page`` objects (ISO 32000-1, 7.7.3.3), counted in the raw bytes;
a compressed object stream hides them, and then the count is 1.

Leaves out: what an image costs in tokens (:mod:`llmcore.audit.estimate`).
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from typing import Final

__all__ = ["decode_base64", "head_bytes", "image_size", "pdf_pages"]

_HEAD: Final = 64 * 1024
"""Bytes of an image read for its header: a JPEG's frame header can follow large metadata."""

_SOF: Final = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_PAGE: Final = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


def decode_base64(data: str, limit: int | None = None) -> bytes | None:
    """Decode (the first ``limit`` characters of) base64 text; ``None`` when it is not base64.

    Args:
        data: Base64 text, standard or URL-safe alphabet, padding optional.
        limit: Decode only a prefix of this many characters (rounded down to a multiple of 4).
    """
    text = data if limit is None else data[: limit - limit % 4]
    text = text.strip()
    text += "=" * (-len(text) % 4)
    try:
        if "-" in text or "_" in text:
            return base64.urlsafe_b64decode(text)
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """Return ``(width, height)`` in pixels of a PNG, GIF, JPEG or WebP image, else ``None``.

    Args:
        data: The image file's first bytes (64 KiB are enough for every format here).
    """
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return _sane(width, height)
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return _sane(width, height)
    if data.startswith(b"\xff\xd8"):
        return _jpeg(data)
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return _webp(data)
    return None


def _sane(width: int, height: int) -> tuple[int, int] | None:
    return (width, height) if width > 0 and height > 0 else None


def _jpeg(data: bytes) -> tuple[int, int] | None:
    i = 2
    while i + 9 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # markers without a length
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[i + 5 : i + 9])
            return _sane(width, height)
        i += 2 + length
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    kind = data[12:16]
    if kind == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", data[26:30])
        return _sane(width & 0x3FFF, height & 0x3FFF)
    if kind == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return _sane((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    if kind == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return _sane(width, height)
    return None


def pdf_pages(data: bytes) -> int:
    """Return the number of ``/Type /Page`` objects in a PDF's bytes (at least 1)."""
    return max(1, len(_PAGE.findall(data)))


def head_bytes(payload: str) -> bytes | None:
    """Decode the first 64 KiB of a base64 payload (an image's header), or ``None``."""
    return decode_base64(payload, _HEAD * 4 // 3 + 4)
