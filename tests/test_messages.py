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


# Tool results sent as text: validity is checked once per result, never for one read as text.
def test_utf8_content_is_the_content_when_valid_and_repaired_when_not():
    valid = ToolResult(call_id="c", tool_name="t", content="é\n".encode())
    assert valid.utf8_content is valid.content
    broken = ToolResult(call_id="c", tool_name="t", content=b"a\xffb\xe6\x97")
    assert broken.utf8_content == "a\ufffdb\ufffd".encode()
    assert broken.utf8_content == broken.content.decode("utf-8", "replace").encode()


def test_validity_is_checked_once_per_result_and_is_not_part_of_the_value(monkeypatch):
    import llmcore.messages as messages

    checks = []
    real = messages._is_utf8
    monkeypatch.setattr(messages, "_is_utf8", lambda data: checks.append(data) or real(data))
    result = ToolResult(call_id="c", tool_name="t", content="日本".encode())
    assert [result.utf8_content, result.utf8_content] == [result.content] * 2
    assert len(checks) == 1
    ascii_only = ToolResult(call_id="c", tool_name="t", content=b"plain")
    assert ascii_only.utf8_content == b"plain" and len(checks) == 1  # ASCII needs no decode
    fresh = ToolResult(call_id="c", tool_name="t", content="日本".encode())
    assert fresh == result and hash(fresh) == hash(result) and repr(fresh) == repr(result)


def test_a_result_made_from_text_is_never_checked(monkeypatch):
    import llmcore.messages as messages

    monkeypatch.setattr(messages, "_is_utf8", lambda data: pytest.fail("checked again"))
    result = ToolResult.from_text(call_id="c", tool_name="t", text='日本 "q"\n', is_error=True)
    assert result.content == '日本 "q"\n'.encode() and result.is_error
    assert result.utf8_content is result.content
    assert result == ToolResult(call_id="c", tool_name="t", content=result.content, is_error=True)


def test_a_result_made_from_text_with_a_lone_surrogate_or_no_text_is_refused():
    with pytest.raises(InvalidMessageError, match="lone surrogate"):
        ToolResult.from_text(call_id="c", tool_name="t", text="a\ud800")
    with pytest.raises(InvalidMessageError, match="text must be a str"):
        ToolResult.from_text(call_id="c", tool_name="t", text=b"bytes")  # type: ignore[arg-type]


class ClaimsUtf8(str):
    """A text whose own ``encode`` gives bytes that are not UTF-8."""

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        return b"\xff\xfe"


class ClaimsAscii(bytes):
    """Bytes whose own ``isascii`` says yes whatever they hold."""

    def isascii(self) -> bool:
        return True


def test_a_str_subclass_is_kept_as_a_plain_str_and_its_own_encode_never_runs():
    result = ToolResult.from_text(call_id=ClaimsUtf8("c"), tool_name="t", text=ClaimsUtf8("hi"))
    assert (result.content, result.utf8_content) == (b"hi", b"hi")
    assert type(result.call_id) is str
    text = Text(text=ClaimsUtf8("x"))
    message = Message(role=ClaimsUtf8("user"), content=[text])
    assert (type(text.text), type(message.role), type(message.content)) == (str, str, tuple)


def test_a_bytes_subclass_is_kept_as_plain_bytes_and_its_own_methods_never_run():
    result = ToolResult(call_id="c", tool_name="t", content=ClaimsAscii(b"a\xff"))
    assert type(result.content) is bytes
    assert result.utf8_content == "a\ufffd".encode()
    call = ToolCall(id="c", name="t", arguments=ClaimsAscii(b"{}"))
    image = Image(data=ClaimsAscii(b"GIF89a"), mime_type="image/gif")
    assert (type(call.arguments), type(image.data)) == (bytes, bytes)


def test_the_validity_mark_follows_the_content_through_copies_pickles_and_replace():
    import copy
    import pickle

    made = ToolResult.from_text(call_id="c", tool_name="t", text="é")
    checked = ToolResult(call_id="c", tool_name="t", content="é".encode())
    assert made == checked and hash(made) == hash(checked)
    for twin in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert twin == made and twin.utf8_content == "é".encode()
    broken = dataclasses.replace(made, content=b"\xc3")
    assert broken.utf8_content == "\ufffd".encode()
