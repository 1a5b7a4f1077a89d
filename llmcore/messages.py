"""The message model (SPEC M1–M5): messages and their four content cases.

A :class:`Message` has a role and a tuple of :data:`MessageContent` values, each one of exactly
four cases — :class:`Text`, :class:`Image`, :class:`ToolCall`, :class:`ToolResult`. An image
dropped from storage is a :class:`Text` carrying :data:`OMITTED_IMAGE_PLACEHOLDER` and the mime
type it had (M3). Values are frozen, slotted and keyword-only; equality and hashing are by value
(M5).

What enters here is cleaned once, so every body built before and after a save is the same:

* **Lone surrogates** (text that has no UTF-8 form, e.g. from ``surrogateescape``) are replaced
  by U+FFFD in every ``str`` field when the value is made. This is the one treatment; nothing
  downstream sees a surrogate.
* **Image types** (A5): a known signature (PNG, JPEG, GIF, WebP) that contradicts the declared
  ``mime_type`` corrects it and warns with :class:`ImageTypeCorrectedWarning`; bytes with no known
  signature (0 bytes included) keep the declared type.

Provider-only data (thinking, signatures, encrypted reasoning, message ids) has no place here
(M4). System prompts and tool definitions belong to the request (:mod:`llmcore.request`).
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias

from llmcore.errors import InvalidMessageError

__all__ = [
    "OMITTED_IMAGE_PLACEHOLDER",
    "Image",
    "ImageTypeCorrectedWarning",
    "Message",
    "MessageContent",
    "Role",
    "Text",
    "ToolCall",
    "ToolResult",
    "clean_text",
    "sniff_image_type",
]

Role: TypeAlias = Literal["user", "assistant", "tool"]

OMITTED_IMAGE_PLACEHOLDER: Final = (
    "[Image omitted: an image was here but was dropped from the saved conversation to save space.]"
)
"""The text the model is sent where an image was dropped from storage (SPEC M3)."""

_b64encode: Callable[[bytes], bytes]
try:  # the same bytes as base64.b64encode, with SIMD where the CPU has it
    from pybase64 import b64encode as _b64encode
except ImportError:  # pragma: no cover - a dependency; a test builds without it in a subprocess
    from base64 import b64encode as _b64encode

_SURROGATE = re.compile("[\ud800-\udfff]")
_SHA256 = re.compile("[0-9a-f]{64}")


def clean_text(value: str) -> str:
    """Return ``value`` with every lone surrogate replaced by U+FFFD (the model's one treatment).

    Lone surrogates cannot be encoded as UTF-8; replacing them when a value is made keeps the
    body built from a live conversation equal to the one built after a save and reopen.
    """
    if _SURROGATE.search(value) is None:
        return value
    return _SURROGATE.sub("\ufffd", value)


class ImageTypeCorrectedWarning(UserWarning):
    """An image's bytes carry a known signature that contradicts its declared type (SPEC A5)."""


_SIGNATURES: Final[tuple[tuple[bytes, str], ...]] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image_type(data: bytes) -> str | None:
    """Return the mime type a known signature (PNG, JPEG, GIF, WebP) declares, else ``None``."""
    for magic, mime in _SIGNATURES:
        if data.startswith(magic):
            return mime
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Text:
    """A text content case.

    An omitted image (SPEC M3) is a ``Text`` whose ``text`` is :data:`OMITTED_IMAGE_PLACEHOLDER`
    and whose ``omitted_image_mime_type`` remembers the dropped image's type; build one with
    :meth:`omitted_image`.
    """

    text: str
    """The text; lone surrogates are replaced by U+FFFD."""
    omitted_image_mime_type: str | None = None
    """For an omitted image, the mime type it had; ``None`` for ordinary text."""
    unread_image_sha256: str | None = None
    """For an image whose archive file could not be read when the archive was opened (an I/O
    error other than a missing file, SPEC A7), the image's SHA-256 hex: the model is sent the
    placeholder, and saves keep the ``image`` block and its file until the bytes are really gone
    or wrong. Set only by the archive reader; ``None`` otherwise."""
    type: Literal["text"] = field(default="text", init=False)
    """The case tag."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", clean_text(_need_str(self.text, "text")))
        mime = self.omitted_image_mime_type
        if mime is not None:
            mime = clean_text(_need_str(mime, "omitted_image_mime_type"))
            object.__setattr__(self, "omitted_image_mime_type", mime)
        digest = self.unread_image_sha256
        if digest is not None and (mime is None or _SHA256.fullmatch(str(digest)) is None):
            raise InvalidMessageError(
                "unread_image_sha256 must be 64 lowercase hex digits on an omitted image"
            )

    @classmethod
    def omitted_image(cls, mime_type: str, *, unread_sha256: str | None = None) -> Text:
        """Return the text case that stands for an image dropped from storage (SPEC M3).

        Args:
            mime_type: The dropped image's type.
            unread_sha256: The image's hash when its file exists but could not be read (see
                :attr:`unread_image_sha256`).
        """
        return cls(
            text=OMITTED_IMAGE_PLACEHOLDER,
            omitted_image_mime_type=clean_text(mime_type),
            unread_image_sha256=unread_sha256,
        )

    @property
    def is_omitted_image(self) -> bool:
        """Whether this text stands for an omitted image."""
        return self.omitted_image_mime_type is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Image:
    """An image content case: raw bytes and their mime type.

    Identity is the SHA-256 of ``data`` (:attr:`sha256`), which also names its archive file (A5).
    A known signature that contradicts ``mime_type`` corrects it with a warning (A5).
    """

    data: bytes
    """The image bytes as the user gave them."""
    mime_type: str
    """The mime type, e.g. ``image/png``; corrected from the bytes' signature when they disagree."""
    type: Literal["image"] = field(default="image", init=False)
    """The case tag."""
    _base64: bytes | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.data, bytes):
            raise InvalidMessageError(f"image data must be bytes, not {type(self.data).__name__}")
        object.__setattr__(self, "data", _exact_bytes(self.data))
        declared = clean_text(_need_str(self.mime_type, "mime_type"))
        sniffed = sniff_image_type(self.data)
        if sniffed is not None and sniffed != declared:
            warnings.warn(
                f"image declared as {declared!r} has a {sniffed} signature; using {sniffed}",
                ImageTypeCorrectedWarning,
                stacklevel=3,
            )
            declared = sniffed
        object.__setattr__(self, "mime_type", declared)

    @property
    def base64(self) -> bytes:
        """The standard base64 of :attr:`data` (ASCII bytes), computed once per image."""
        encoded = self._base64
        if encoded is None:
            encoded = _b64encode(self.data)
            object.__setattr__(self, "_base64", encoded)
        return encoded

    @property
    def sha256(self) -> str:
        """The lowercase hex SHA-256 of :attr:`data`."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool call the model made.

    ``arguments`` are the raw bytes exactly as the model produced them (SPEC M2): for Anthropic
    the concatenated ``input_json_delta`` strings or the byte span of ``input`` in a non-streamed
    body; for OpenAI the UTF-8 bytes of the decoded ``arguments`` string. They are never parsed
    and re-serialized.
    """

    id: str
    """The provider's call id, kept as received (providers rewrite invalid ids on the wire)."""
    name: str
    """The tool's name."""
    arguments: bytes
    """The argument bytes, usually a JSON object; any bytes are kept."""
    type: Literal["tool_call"] = field(default="tool_call", init=False)
    """The case tag."""

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, bytes):
            raise InvalidMessageError("tool call arguments must be bytes")
        object.__setattr__(self, "arguments", _exact_bytes(self.arguments))
        object.__setattr__(self, "id", clean_text(_need_str(self.id, "id")))
        object.__setattr__(self, "name", clean_text(_need_str(self.name, "name")))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The result of running a tool call; ``content`` is the raw bytes the tool returned."""

    call_id: str
    """The :attr:`ToolCall.id` this answers."""
    tool_name: str
    """The tool's name."""
    content: bytes
    """The result bytes as the tool returned them (any bytes; sent as UTF-8 with U+FFFD)."""
    is_error: bool = False
    """Whether the tool failed; the content then describes the failure."""
    type: Literal["tool_result"] = field(default="tool_result", init=False)
    """The case tag."""
    _valid_utf8: bool | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.content, bytes):
            raise InvalidMessageError("tool result content must be bytes")
        object.__setattr__(self, "content", _exact_bytes(self.content))
        if not isinstance(self.is_error, bool):
            raise InvalidMessageError(
                f"is_error must be a bool, not {type(self.is_error).__name__}"
            )
        object.__setattr__(self, "call_id", clean_text(_need_str(self.call_id, "call_id")))
        object.__setattr__(self, "tool_name", clean_text(_need_str(self.tool_name, "tool_name")))

    @classmethod
    def from_text(
        cls, *, call_id: str, tool_name: str, text: str, is_error: bool = False
    ) -> ToolResult:
        """Return the result whose content is the UTF-8 of ``text``, known to be valid UTF-8.

        Readers that hold the result as text (the archive, recorded bodies) make it this way,
        so no body build checks its bytes again (:attr:`utf8_content`).

        Raises:
            InvalidMessageError: ``text`` holds a lone surrogate (it has no UTF-8 form), or a
                field has the wrong type.
        """
        try:
            content = _need_str(text, "text").encode("utf-8")  # an exact str's own encode
        except UnicodeEncodeError:
            raise InvalidMessageError("holds a lone surrogate (not UTF-8 text)") from None
        result = cls(call_id=call_id, tool_name=tool_name, content=content, is_error=is_error)
        object.__setattr__(result, "_valid_utf8", True)
        return result

    @property
    def utf8_content(self) -> bytes:
        """:attr:`content` as valid UTF-8: itself when it is, else with U+FFFD replacements.

        The bytes are ``content.decode("utf-8", "replace").encode("utf-8")``. Whether the
        content is valid is checked once per result (and never for one made by
        :meth:`from_text`); bodies send these bytes as the result's text.
        """
        valid = self._valid_utf8
        if valid is None:
            valid = self.content.isascii() or _is_utf8(self.content)
            object.__setattr__(self, "_valid_utf8", valid)
        if valid:
            return self.content
        return self.content.decode("utf-8", "replace").encode("utf-8")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


MessageContent: TypeAlias = Text | Image | ToolCall | ToolResult
"""One content case of a message (SPEC M2)."""

_ALLOWED: Final[dict[str, tuple[type, ...]]] = {
    "user": (Text, Image),
    "assistant": (Text, ToolCall),
    "tool": (ToolResult,),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of a conversation history (SPEC M1).

    ``user`` messages hold text and images, ``assistant`` messages text and tool calls, ``tool``
    messages tool results only.

    Raises:
        InvalidMessageError: An unknown role, a case the role cannot hold, no content, or content
            that is only empty text.
    """

    role: Role
    """``user``, ``assistant`` or ``tool``."""
    content: tuple[MessageContent, ...]
    """The content cases, in order."""

    def __post_init__(self) -> None:
        allowed = _ALLOWED.get(self.role) if isinstance(self.role, str) else None
        if allowed is None:
            raise InvalidMessageError(
                f"unknown role {self.role!r} (expected user, assistant or tool)", location="role"
            )
        if type(self.role) is not str:
            object.__setattr__(self, "role", _need_str(self.role, "role"))
        if type(self.content) is not tuple:  # a tuple subclass's own == never runs either
            object.__setattr__(self, "content", _content_tuple(self.content))
        for index, part in enumerate(self.content):
            if not isinstance(part, allowed):
                article = "an" if self.role == "assistant" else "a"
                raise InvalidMessageError(
                    f"{article} {self.role} message cannot hold {type(part).__name__}",
                    location=f"content[{index}]",
                )
        if all(isinstance(part, Text) and not part.text for part in self.content):
            raise InvalidMessageError(f"a {self.role} message needs non-empty content")

    @classmethod
    def user(cls, *parts: str | MessageContent) -> Message:
        """Return a user message; ``str`` parts become :class:`Text`."""
        return cls(role="user", content=_parts(parts))

    @classmethod
    def assistant(cls, *parts: str | MessageContent) -> Message:
        """Return an assistant message; ``str`` parts become :class:`Text`."""
        return cls(role="assistant", content=_parts(parts))

    @classmethod
    def tool(cls, *results: ToolResult) -> Message:
        """Return a tool message holding the given results."""
        return cls(role="tool", content=tuple(results))


def _content_tuple(content: object) -> tuple[MessageContent, ...]:
    if isinstance(content, str | bytes) or not hasattr(content, "__iter__"):
        kind = type(content).__name__
        raise InvalidMessageError(
            f"content must be a tuple of cases, not {kind}", location="content"
        )
    return tuple(content)


def _need_str(value: object, name: str) -> str:
    """Return ``value`` as an exact ``str`` (a subclass's own ``==`` or ``encode`` never runs).

    Messages are compared (the encode cache reuses an equal message's bytes) and encoded, so a
    ``str`` subclass is copied into a plain ``str`` when a value is made.
    """
    if type(value) is str:
        return value
    if not isinstance(value, str):
        raise InvalidMessageError(f"{name} must be a str, not {type(value).__name__}")
    return str.__str__(value)


def _exact_bytes(value: bytes) -> bytes:
    """Return ``value`` as exact ``bytes`` (a subclass's own methods never run on it)."""
    return value if type(value) is bytes else b"".join((value,))


def _parts(parts: tuple[str | MessageContent, ...]) -> tuple[MessageContent, ...]:
    return tuple(Text(text=p) if isinstance(p, str) else p for p in parts)
