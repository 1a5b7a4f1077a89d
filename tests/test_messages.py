import dataclasses

import pytest

from llmcore import OMITTED_IMAGE_PLACEHOLDER, Image, Message, Text, ToolCall, ToolResult
from llmcore.errors import InvalidMessageError
from llmcore.messages import ImageTypeCorrectedWarning, sniff_image_type

PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 8
JPEG = b"\xff\xd8\xff\xe0" + b"\0" * 8


def test_values_are_frozen_and_equal_by_value():
    a = Message.user("hi", Image(data=PNG, mime_type="image/png"))
    b = Message.user("hi", Image(data=PNG, mime_type="image/png"))
    assert a == b and hash(a) == hash(b)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.role = "assistant"  # type: ignore[misc]


def test_roles_hold_only_their_cases():
    with pytest.raises(InvalidMessageError, match="content\\[1\\]"):
        Message(role="user", content=(Text(text="x"), ToolCall(id="1", name="f", arguments=b"{}")))
    with pytest.raises(InvalidMessageError):
        Message(role="tool", content=(Text(text="x"),))
    with pytest.raises(InvalidMessageError, match="unknown role"):
        Message(role="system", content=(Text(text="x"),))  # type: ignore[arg-type]


@pytest.mark.parametrize("content", [(), (Text(text=""),), (Text(text=""), Text(text=""))])
def test_empty_only_text_is_refused(content):
    with pytest.raises(InvalidMessageError, match="non-empty"):
        Message(role="user", content=content)


def test_lone_surrogates_become_replacement_characters():
    msg = Message.user("a\ud800b")
    assert msg.content[0] == Text(text="a\ufffdb")
    call = ToolCall(id="x\udfff", name="n", arguments=b"{}")
    assert call.id == "x\ufffd"


def test_omitted_image_is_text_with_its_mime_type():
    part = Text.omitted_image("image/png")
    assert part.text == OMITTED_IMAGE_PLACEHOLDER
    assert part.is_omitted_image and part.omitted_image_mime_type == "image/png"
    assert not Text(text=OMITTED_IMAGE_PLACEHOLDER).is_omitted_image


def test_image_signature_corrects_contradicting_type_with_a_warning():
    with pytest.warns(ImageTypeCorrectedWarning):
        image = Image(data=JPEG, mime_type="image/png")
    assert image.mime_type == "image/jpeg"


@pytest.mark.parametrize("data", [b"", b"not an image", b"RIFF\0\0\0\0WEBX"])
def test_unknown_signature_keeps_declared_type(data):
    assert Image(data=data, mime_type="image/png").mime_type == "image/png"


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (b"GIF89a..", "image/gif"),
        (b"GIF87a..", "image/gif"),
        (b"RIFF\x10\0\0\0WEBPVP8 ", "image/webp"),
    ],
)
def test_sniff(data, mime):
    assert sniff_image_type(data) == mime


def test_tool_bytes_stay_bytes():
    with pytest.raises(InvalidMessageError):
        ToolResult(call_id="1", tool_name="f", content="text")  # type: ignore[arg-type]
    result = ToolResult(call_id="1", tool_name="f", content=b"\xff\x00")
    assert result.content == b"\xff\x00"
