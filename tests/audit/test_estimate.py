"""The auditor's token estimates (llmcore.audit.estimate), each rule against its documented example."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.audit import audit_bodies
from llmcore.audit._pixels import image_size, pdf_pages
from llmcore.audit.estimate import (
    FAMILIES,
    image_tokens,
    item_tokens,
    text_tokens,
    tool_prompt_tokens,
)

ANTHROPIC, OPENAI, GEMINI = FAMILIES["anthropic"], FAMILIES["openai"], FAMILIES["gemini"]


def png(width: int, height: int) -> bytes:
    """A valid PNG header: signature and IHDR chunk (the pixels are never read)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    return (
        b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk + struct.pack(">I", zlib.crc32(chunk))
    )


def jpeg(width: int, height: int) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + bytes(9)
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + bytes(9)
    return b"\xff\xd8" + app0 + sof0 + b"\xff\xd9"


def gif(width: int, height: int) -> bytes:
    return b"GIF89a" + struct.pack("<HH", width, height) + bytes(3)


def webp_lossless(width: int, height: int) -> bytes:
    bits = (width - 1) | ((height - 1) << 14)
    chunk = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + bits.to_bytes(4, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


@settings(max_examples=50)
@given(st.integers(1, 16383), st.integers(1, 16383))
def test_image_sizes_are_read_from_every_format(width: int, height: int):
    for make in (png, jpeg, gif, webp_lossless):
        assert image_size(make(width, height)) == (width, height), make.__name__


def test_bytes_that_are_no_image_have_no_size():
    assert image_size(b"") is None
    assert image_size(bytes(300)) is None
    assert image_size(b"\x89PNG\r\n\x1a\n") is None  # a signature without its IHDR


def test_anthropic_image_tokens_follow_width_times_height_over_750():
    assert image_tokens(ANTHROPIC, (1000, 1000), None) == 1334  # the vision doc's example
    assert image_tokens(ANTHROPIC, (1, 1), None) == 1
    # larger than ~1.15 megapixels: scaled down first, aspect kept, to about 1,600 tokens
    assert image_tokens(ANTHROPIC, (2000, 2000), None) == 1599
    assert image_tokens(ANTHROPIC, None, None) == 1600  # a size that cannot be read: the cap


def test_openai_image_tokens_follow_the_tile_rule():
    assert image_tokens(OPENAI, (1024, 1024), "high") == 765  # the guide's example
    assert image_tokens(OPENAI, (2048, 4096), "high") == 1105  # the guide's example
    assert image_tokens(OPENAI, (4096, 8192), "low") == 85


def test_gemini_image_tokens_follow_the_tile_rule():
    assert image_tokens(GEMINI, (384, 384), None) == 258
    assert image_tokens(GEMINI, (1000, 1000), None) == 4 * 258


def test_a_one_pixel_png_costs_a_token_not_1600():
    data = base64.b64encode(png(1, 1)).decode()
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}
    body = jsonbytes.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 5,
            "messages": [{"role": "user", "content": [block]}],
        }
    )
    # issue 19: every image counted a flat 1,600 tokens, so a 1x1 PNG cost 1,630
    assert audit_bodies([body]).requests[0].total_tokens == 1 + 5


def test_pdf_pages_are_counted():
    pdf = b"%PDF-1.4\n1 0 obj << /Type /Pages /Kids [2 0 R 3 0 R] >>\n2 0 obj << /Type /Page >>"
    assert pdf_pages(pdf + b"\n3 0 obj << /Type/Page >>") == 2
    data = base64.b64encode(pdf).decode()
    block = {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": data},
    }
    assert item_tokens(block, ANTHROPIC) == 2250 + 5


@pytest.mark.parametrize(
    ("model", "choice", "expected"),
    [
        ("claude-sonnet-4-5", None, 346),
        ("claude-sonnet-4-5", {"type": "auto"}, 346),
        ("claude-opus-4-1", {"type": "none"}, 346),
        ("claude-sonnet-4-5", {"type": "any"}, 313),
        ("claude-haiku-4-5", {"type": "tool", "name": "t"}, 313),
        ("claude-3-opus-20240229", None, 530),
        ("claude-3-sonnet-20240229", {"type": "any"}, 235),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", {"type": "any"}, 340),
        ("anthropic/claude-3-haiku", None, 264),
    ],
)
def test_the_tool_use_system_prompt_per_model_and_tool_choice(model, choice, expected):
    assert tool_prompt_tokens(model, choice) == expected


def test_a_request_with_tools_counts_the_tool_use_system_prompt():
    tool = {"name": "t", "description": "d", "input_schema": {"type": "object"}}
    msgs = [{"role": "user", "content": "hi"}]
    plain = jsonbytes.dumps({"model": "claude-sonnet-4-5", "max_tokens": 5, "messages": msgs})
    with_tool = jsonbytes.dumps(
        {"model": "claude-sonnet-4-5", "max_tokens": 5, "tools": [tool], "messages": msgs}
    )
    a, b = audit_bodies([plain, with_tool]).requests
    assert b.total_tokens - a.total_tokens == 346 + item_tokens(tool, ANTHROPIC, tool=True)


def test_text_is_counted_by_words_digits_and_punctuation():
    assert text_tokens("hi", ANTHROPIC) == 1
    # "Fact": 1 + (4 - 3) / 2.5 past Anthropic's 3 letters; digits one by one; ":", "ok", "."
    assert text_tokens("Fact 0012: ok.", ANTHROPIC) == pytest.approx(1.4 + 4 + 1 + 1 + 1)
    # OpenAI: "Fact" is one token (4 letters), digits up to 3 a token
    assert text_tokens("Fact 0012: ok.", OPENAI) == pytest.approx(1 + 4 / 3 + 1 + 1 + 1)
    assert text_tokens("a\n\nb", OPENAI) == 3
