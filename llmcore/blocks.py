r"""The A3 history-block JSON form, shared by the archive and request files (SPEC A3, R1).

Blocks (JSON ``type``): ``text`` {``text``}; ``image`` {``sha256``, ``mimeType``} in the archive,
or {``data`` (base64), ``mimeType``} in a standalone request file; ``imageOmitted``
{``mimeType``}; ``toolCall`` {``id``, ``name``, ``arguments`` | ``argumentsBase64``};
``toolResult`` {``callID``, ``toolName``, ``isError``, ``content`` | ``contentBase64``}.
Messages are {``role``, ``content``}. Tool bytes that are valid UTF-8 are stored as strings,
others as base64, so every byte survives (P5).

Reading a string form (``arguments``, ``content``) gives its UTF-8 bytes; a lone surrogate in
it (a ``\ud800`` escape: no UTF-8 form) becomes U+FFFD, the message model's one treatment
(:func:`~llmcore.messages.clean_text`), so the bytes are always valid UTF-8. Bytes that are not
UTF-8 travel only as ``…Base64``, which this module writes for them. A block holding both forms
is refused.

How images are stored is the caller's: :func:`decode_message` takes an ``image`` callback that
turns an ``image`` block into a content case, and :func:`encode_message` one that turns an
:class:`~llmcore.messages.Image` into its block.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, assert_never

from llmcore.errors import InvalidMessageError, RequestFileError
from llmcore.messages import (
    Image,
    Message,
    MessageContent,
    Text,
    ToolCall,
    ToolResult,
    clean_text,
)

__all__ = [
    "ImageDecoder",
    "ImageEncoder",
    "OmittedEncoder",
    "decode_message",
    "encode_message",
    "inline_image_decoder",
    "inline_image_encoder",
    "omitted_image_block",
]

ImageDecoder = Callable[[dict[str, Any], str], MessageContent]
"""Turns an ``image`` block (and its JSON path) into a content case."""
ImageEncoder = Callable[[Image], dict[str, Any]]
"""Turns an image into its ``image`` block."""
OmittedEncoder = Callable[[Text], dict[str, Any]]
"""Writes the block of an omitted image (a :class:`~llmcore.messages.Text` standing for one)."""


def _error(message: str, at: str) -> RequestFileError:
    return RequestFileError(message, location=at)


def _str(obj: dict[str, Any], key: str, at: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise _error(f"expected a string at key {key!r}", f"{at}.{key}")
    return value


def _bytes(obj: dict[str, Any], key: str, at: str) -> bytes:
    b64 = f"{key}Base64"
    if key in obj and b64 in obj:
        raise _error(f"holds both {key!r} and {b64!r}; give one", f"{at}.{b64}")
    if key in obj:
        return clean_text(_str(obj, key, at)).encode("utf-8")
    if b64 in obj:
        try:
            return base64.b64decode(_str(obj, b64, at), validate=True)
        except (binascii.Error, ValueError) as exc:
            raise _error("invalid base64", f"{at}.{b64}") from exc
    raise _error(f"needs {key!r} or {b64!r}", at)


def _put_bytes(block: dict[str, Any], key: str, data: bytes) -> None:
    try:
        block[key] = data.decode("utf-8")
    except UnicodeDecodeError:
        block[f"{key}Base64"] = base64.b64encode(data).decode("ascii")


def inline_image_decoder(block: dict[str, Any], at: str) -> MessageContent:
    """Read a request-file ``image`` block: ``data`` (base64) and ``mimeType`` (R1)."""
    data = _str(block, "data", at)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _error("invalid base64", f"{at}.data") from exc
    return Image(data=raw, mime_type=_str(block, "mimeType", at))


def inline_image_encoder(image: Image) -> dict[str, Any]:
    """Write a request-file ``image`` block with the bytes inline as base64 (R1)."""
    data = base64.b64encode(image.data).decode("ascii")
    return {"type": "image", "data": data, "mimeType": image.mime_type}


def _decode_block(block: Any, at: str, image: ImageDecoder) -> MessageContent:
    if not isinstance(block, dict):
        raise _error("a content block must be an object", at)
    kind = block.get("type")
    if kind == "text":
        return Text(text=_str(block, "text", at))
    if kind == "image":
        return image(block, at)
    if kind == "imageOmitted":
        return Text.omitted_image(_str(block, "mimeType", at))
    if kind == "toolCall":
        args = _bytes(block, "arguments", at)
        return ToolCall(id=_str(block, "id", at), name=_str(block, "name", at), arguments=args)
    if kind == "toolResult":
        is_error = block.get("isError", False)
        if not isinstance(is_error, bool):
            raise _error("expected true or false", f"{at}.isError")
        return ToolResult(
            call_id=_str(block, "callID", at),
            tool_name=_str(block, "toolName", at),
            content=_bytes(block, "content", at),
            is_error=is_error,
        )
    raise _error(f"unknown block type {kind!r}", f"{at}.type")


def decode_message(obj: Any, at: str, image: ImageDecoder = inline_image_decoder) -> Message:
    """Read one A3 message ``{"role", "content": [blocks]}``.

    Raises:
        RequestFileError: A wrong type, an unknown block type or role, bad base64, or content
            the role cannot hold; the location is the JSON path (``$.messages[2].content[0]``).
    """
    if not isinstance(obj, dict):
        raise _error("a message must be an object", at)
    role = obj.get("role")
    if not isinstance(role, str):
        raise _error("expected a string: user, assistant or tool", f"{at}.role")
    content = obj.get("content")
    if not isinstance(content, list):
        raise _error("content must be an array of blocks", f"{at}.content")
    parts = tuple(_decode_block(b, f"{at}.content[{i}]", image) for i, b in enumerate(content))
    try:
        return Message(role=role, content=parts)  # type: ignore[arg-type]
    except InvalidMessageError as exc:
        where = f"{at}.{exc.location}" if exc.location else at
        raise _error(exc.message, where) from exc


def omitted_image_block(part: Text) -> dict[str, Any]:
    """Return the ``imageOmitted`` block of an omitted image (SPEC A3, M3)."""
    return {"type": "imageOmitted", "mimeType": part.omitted_image_mime_type}


def _encode_block(
    part: MessageContent, image: ImageEncoder, omitted: OmittedEncoder
) -> dict[str, Any]:
    match part:
        case Text(omitted_image_mime_type=str()):
            return omitted(part)
        case Text(text=text):
            return {"type": "text", "text": text}
        case Image():
            return image(part)
        case ToolCall(id=call_id, name=name, arguments=arguments):
            block: dict[str, Any] = {"type": "toolCall", "id": call_id, "name": name}
            _put_bytes(block, "arguments", arguments)
            return block
        case ToolResult(call_id=call_id, tool_name=name, content=content, is_error=is_error):
            block = {"type": "toolResult", "callID": call_id, "toolName": name}
            block["isError"] = is_error
            _put_bytes(block, "content", content)
            return block
        case _:
            assert_never(part)


def encode_message(
    message: Message,
    image: ImageEncoder = inline_image_encoder,
    omitted: OmittedEncoder = omitted_image_block,
) -> dict[str, Any]:
    """Return the A3 JSON form of ``message`` (a dict ready for :mod:`llmcore.jsonbytes`).

    Args:
        message: The message.
        image: Writes an image case's block.
        omitted: Writes an omitted image's block (the archive keeps an unread image's
            ``image`` block, :attr:`~llmcore.messages.Text.unread_image_sha256`).
    """
    content = [_encode_block(p, image, omitted) for p in message.content]
    return {"role": message.role, "content": content}
