"""Encode and decode ``conversation.json``, format 1 (SPEC A1–A4, A7, U1, U2, F1).

:func:`encode` turns a :class:`~llmcore.archive.state.ConversationState` into the file's bytes
(history blocks through the shared A3 writer, :func:`llmcore.blocks.encode_message`):
keys sorted, :data:`~llmcore.archive.format.INDENT` spaces, one trailing newline, so an unchanged
conversation always gives the same bytes (A2). Images whose hash is not in ``kept_images`` are
written as ``imageOmitted`` (the budget of A6 is decided by :mod:`llmcore.archive.images`).

:func:`decode` reads the bytes back; image bytes come from a ``load_image`` callback, and an image
it cannot supply reads as an omitted image (A7). Every way a file can be wrong raises
:class:`~llmcore.errors.ArchiveReadError` whose ``location`` is the JSON path (``$.history[3]
.content[1].sha256``) and nothing else escapes. What counts as wrong:

* not UTF-8, not JSON, nesting too deep for the parser, a number out of range, an object that
  repeats a key (the location is the repeated member's path; one value would be lost);
* ``formatVersion`` missing, not an integer, or not 1 (a newer version is named as such);
* an unknown top-level key, an unknown item ``type`` or history block ``type``;
* a value of the wrong type anywhere, a missing field of a block, message, usage, cost,
  feedback or turn record, or an unknown key inside one of those llmcore-owned objects (a field
  this version cannot read, A8). Host fields of items and card states are free JSON.

A missing top-level key reads as its empty default. The reader is stricter than the request-file
reader of :mod:`llmcore.blocks` (unknown fields, lone surrogates in tool bytes and missing
``isError`` are refused) because a file it cannot fully read must be kept, not rewritten (A8).
It leaves out files and folders
(:mod:`llmcore.archive.store`).
"""

from __future__ import annotations

import base64
import binascii
import re
import warnings
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final, NoReturn

from llmcore import jsonbytes
from llmcore.errors import ArchiveReadError, InvalidMessageError
from llmcore.facts import SentFacts, TurnFacts
from llmcore.messages import (
    Image,
    ImageTypeCorrectedWarning,
    Message,
    MessageContent,
    Text,
    ToolCall,
    ToolResult,
    clean_text,
    sniff_image_type,
)
from llmcore.usage import Cost, Usage, UsageTotals

from ._encode import _COST_KINDS, _USAGE_KEYS, _items_json, encode, encode_pieces
from ._history import history_json
from .format import FORMAT_VERSION, TOP_LEVEL_KEYS
from .fragments import FragmentCache
from .images import DigestCache
from .state import (
    CardMap,
    ConversationState,
    Feedback,
    InvalidArchiveValueError,
    Item,
    canonical_json,
    short_repr,
)

__all__ = [
    "UNREAD",
    "FragmentCache",
    "ImageLoader",
    "Unread",
    "decode",
    "encode",
    "encode_pieces",
    "is_sha256",
]


class Unread:
    """What an image loader returns for an image file it could not read (an I/O error, A7)."""

    __slots__ = ()


UNREAD: Final = Unread()
"""The one :class:`Unread` value."""

ImageLoader = Callable[[str, str], "bytes | None | Unread"]
"""``load_image(sha256_hex, mime_type)`` → the verified image bytes, ``None`` when the file is
missing or its bytes do not match (A7), or :data:`UNREAD` when it could not be read (the image
reads as omitted but keeps its hash, :attr:`~llmcore.messages.Text.unread_image_sha256`)."""

_SHA256: Final = re.compile(r"[0-9a-f]{64}")


def is_sha256(value: str) -> bool:
    """Return whether ``value`` is 64 lowercase hex digits (an image name's stem, A5)."""
    return _SHA256.fullmatch(value) is not None


# ---------------------------------------------------------------------------------- decoding


def _fail(message: str, location: str) -> NoReturn:
    raise ArchiveReadError(message, location=location)


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _str(value: Any, loc: str) -> str:
    if not isinstance(value, str):
        _fail(f"expected a string, found {_type_name(value)}", loc)
    return clean_text(value)


def _bool(value: Any, loc: str) -> bool:
    if not isinstance(value, bool):
        _fail(f"expected true or false, found {_type_name(value)}", loc)
    return value


def _count(value: Any, loc: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(f"expected an integer, found {_type_name(value)}", loc)
    if value < 0:
        _fail("expected a non-negative integer", loc)
    return value


def _number(value: Any, loc: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        _fail(f"expected a number, found {_type_name(value)}", loc)
    try:
        number = float(value)
    except OverflowError:
        _fail("number out of range", loc)
    if number != number or number in (float("inf"), float("-inf")):
        _fail("number out of range", loc)
    return number


def _list(value: Any, loc: str) -> list[Any]:
    if not isinstance(value, list):
        _fail(f"expected an array, found {_type_name(value)}", loc)
    return value


def _dict(value: Any, loc: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _fail(f"expected an object, found {_type_name(value)}", loc)
    return value


def _owned(
    value: Any, loc: str, required: Collection[str], optional: Collection[str] = ()
) -> dict[str, Any]:
    """Check an llmcore-owned object: every required key present, no key it does not know."""
    obj = _dict(value, loc)
    for key in obj:
        if key not in required and key not in optional:
            _fail(f"unknown field {key!r}", f"{loc}.{key}")
    for key in required:
        if key not in obj:
            _fail(f"missing field {key!r}", loc)
    return obj


def _strings(value: Any, loc: str) -> tuple[str, ...]:
    return tuple(_str(s, f"{loc}[{i}]") for i, s in enumerate(_list(value, loc)))


def decode(
    data: bytes,
    *,
    load_image: ImageLoader | None = None,
    fragments: FragmentCache | None = None,
    digests: DigestCache | None = None,
) -> ConversationState:
    """Return the conversation stored in ``data`` (the bytes of ``conversation.json``).

    Args:
        data: The file's bytes; must be UTF-8 JSON.
        load_image: Supplies verified image bytes by hash and mime type; ``None`` (or a ``None``
            answer) reads the image as an omitted image (A7).
        fragments: Filled with the text :func:`encode` writes for the decoded history and
            items, so the next save encodes only what is new.
        digests: Told the SHA-256 of each image ``load_image`` supplied (it verified them).

    Raises:
        ArchiveReadError: The file is unreadable by this version; ``location`` is the JSON path
            (``$`` for the whole file) and the message says what is wrong.
    """
    top = _parse(data)
    _check_version(top)
    for key in top:
        if key not in TOP_LEVEL_KEYS:
            _fail(f"unknown field {key!r}", f"$.{key}")
    loader = load_image or _no_image
    loaded: dict[int, tuple[bytes, str]] = {}
    if fragments is not None:
        loader = _remembering(loader, loaded)
    try:
        state = _decode_top(top, loader)
    except RecursionError:
        _fail("nested too deeply", "$")
    if fragments is not None:
        _fill(state, fragments, loaded, digests)
    return state


def _remembering(load_image: ImageLoader, loaded: dict[int, tuple[bytes, str]]) -> ImageLoader:
    """``load_image``, noting the hash of each bytes object it returns (the loader checked it)."""

    def load(sha256: str, mime_type: str) -> bytes | None | Unread:
        data = load_image(sha256, mime_type)
        if isinstance(data, bytes):
            loaded[id(data)] = (data, sha256)
        return data

    return load


def _fill(
    state: ConversationState,
    fragments: FragmentCache,
    loaded: dict[int, tuple[bytes, str]],
    digests: DigestCache | None,
) -> None:
    """Encode the decoded history and items into ``fragments`` with the images the file kept."""

    def digest(part: Image) -> str:
        entry = loaded.get(id(part.data))
        sha = entry[1] if entry is not None and entry[0] is part.data else part.sha256
        if digests is not None:
            digests.remember(part, sha)
        return sha

    unread = frozenset(
        part.unread_image_sha256
        for message in state.history
        for part in message.content
        if isinstance(part, Text) and part.unread_image_sha256 is not None
    )
    # the file kept every image it holds: the next save compares its plan with these
    images = frozenset(
        digest(part) for msg in state.history for part in msg.content if isinstance(part, Image)
    )
    history_json(state.history, fragments, kept_images=images, kept_unread=unread, digest=digest)
    _items_json(state.items, fragments)


def _no_image(sha256: str, mime_type: str) -> bytes | None:
    return None


def _parse(data: bytes) -> dict[str, Any]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ArchiveReadError(f"not UTF-8 (byte {exc.start} is invalid)", location="$") from None
    try:
        value = jsonbytes.loads(text, unique_keys=True, exact_floats=True)
    except RecursionError:
        _fail("nested too deeply", "$")
    except jsonbytes.DuplicateKeyError as exc:
        _fail(exc.reason, exc.key_path)
    except ValueError as exc:
        raise ArchiveReadError(f"not JSON ({exc})", location="$") from None
    return _dict(value, "$")


def _check_version(top: Mapping[str, Any]) -> None:
    if "formatVersion" not in top:
        _fail("missing field 'formatVersion'", "$")
    version = top["formatVersion"]
    if isinstance(version, bool) or not isinstance(version, int):
        _fail(f"expected an integer, found {_type_name(version)}", "$.formatVersion")
    if version > FORMAT_VERSION:
        _fail(
            f"formatVersion {version} is newer than this version reads ({FORMAT_VERSION})",
            "$.formatVersion",
        )
    if version < FORMAT_VERSION:
        _fail(f"unknown formatVersion {version}", "$.formatVersion")


def _decode_top(top: dict[str, Any], load_image: ImageLoader) -> ConversationState:
    history = _history(top.get("history", []), load_image)
    zero = {disk: 0 for disk in _USAGE_KEYS}
    totals = UsageTotals(
        total=_usage(top.get("usage", zero), "$.usage"),
        last_round=_usage(top.get("lastRoundUsage", zero), "$.lastRoundUsage"),
        cost=_cost(top.get("estimatedCost", {"kind": "notBilled"}), "$.estimatedCost"),
    )
    return ConversationState(
        provider=_str(top.get("provider", ""), "$.provider"),
        model=_str(top.get("model", ""), "$.model"),
        items=_items(top.get("items", []), "$.items"),
        feedback=_feedback(top.get("feedback", {}), "$.feedback"),
        skill_cards=_cards(top.get("skillCards", {}), "$.skillCards"),
        lint_rule_cards=_cards(top.get("lintRuleCards", {}), "$.lintRuleCards"),
        approval_cards=_cards(top.get("approvalCards", {}), "$.approvalCards"),
        resolved_cards=_strings(top.get("resolvedCards", []), "$.resolvedCards"),
        history=history,
        queued=_strings(top.get("queued", []), "$.queued"),
        unsent=_strings(top.get("unsent", []), "$.unsent"),
        usage=totals,
        sent_facts=_facts(top.get("sentFacts", []), "$.sentFacts"),
    )


def _items(value: Any, loc: str) -> tuple[Item, ...]:
    out = []
    for index, obj in enumerate(_list(value, loc)):
        where = f"{loc}[{index}]"
        try:
            out.append(Item.from_json(_dict(obj, where), where))
        except InvalidArchiveValueError as exc:
            raise ArchiveReadError(exc.message, location=exc.location) from None
    return tuple(out)


def _cards(value: Any, loc: str) -> CardMap:
    out = []
    for key, state in _dict(value, loc).items():
        try:
            out.append((clean_text(key), canonical_json(state, f"{loc}.{key}")))
        except InvalidArchiveValueError as exc:
            raise ArchiveReadError(exc.message, location=exc.location) from None
    return tuple(sorted(out))


def _feedback(value: Any, loc: str) -> tuple[tuple[str, Feedback], ...]:
    out = []
    for key, entry in _dict(value, loc).items():
        where = f"{loc}.{key}"
        obj = _owned(entry, where, ("rating", "reasons"))
        rating = obj["rating"]
        if rating not in ("good", "bad"):
            _fail("expected 'good' or 'bad'", f"{where}.rating")
        reasons = _strings(obj["reasons"], f"{where}.reasons")
        out.append((clean_text(key), Feedback(rating=rating, reasons=reasons)))
    return tuple(sorted(out, key=lambda pair: pair[0]))


def _usage(value: Any, loc: str) -> Usage:
    obj = _owned(value, loc, tuple(_USAGE_KEYS), ("cacheWrite1h", "reportedCost"))
    fields: dict[str, Any] = {
        attr: _count(obj[disk], f"{loc}.{disk}") for disk, attr in _USAGE_KEYS.items()
    }
    if "cacheWrite1h" in obj:
        fields["cache_write_1h"] = _count(obj["cacheWrite1h"], f"{loc}.cacheWrite1h")
    if "reportedCost" in obj:
        fields["reported_cost"] = _number(obj["reportedCost"], f"{loc}.reportedCost")
    return Usage(**fields)


def _cost(value: Any, loc: str) -> Cost:
    obj = _owned(value, loc, ("kind",), ("dollars",))
    kind = _COST_KINDS.get(obj["kind"]) if isinstance(obj["kind"], str) else None
    if kind is None:
        _fail("expected reported, estimated, unknown or notBilled", f"{loc}.kind")
    has_dollars = kind in ("reported", "estimated")
    if has_dollars != ("dollars" in obj):
        _fail(f"a {obj['kind']} cost {'needs' if has_dollars else 'has no'} dollars", loc)
    dollars = _number(obj["dollars"], f"{loc}.dollars") if has_dollars else None
    return Cost(kind=kind, dollars=dollars)


def _facts(value: Any, loc: str) -> SentFacts:
    turns = []
    for index, entry in enumerate(_list(value, loc)):
        where = f"{loc}[{index}]"
        obj = _owned(entry, where, ("message",), ("sections",))
        sections = None
        if "sections" in obj:
            raw = _dict(obj["sections"], f"{where}.sections")
            sections = tuple(
                sorted((clean_text(k), _str(v, f"{where}.sections.{k}")) for k, v in raw.items())
            )
        turns.append(
            TurnFacts(message=_count(obj["message"], f"{where}.message"), sections=sections)
        )
    return SentFacts(turns=tuple(turns))


def _history(value: Any, load_image: ImageLoader) -> tuple[Message, ...]:
    messages = []
    for index, entry in enumerate(_list(value, "$.history")):
        loc = f"$.history[{index}]"
        obj = _owned(entry, loc, ("role", "content"))
        role = obj["role"]
        if role not in ("user", "assistant", "tool"):
            _fail("expected user, assistant or tool", f"{loc}.role")
        content = _list(obj["content"], f"{loc}.content")
        parts = tuple(
            _block(block, f"{loc}.content[{i}]", load_image) for i, block in enumerate(content)
        )
        try:
            messages.append(Message(role=role, content=parts))
        except InvalidMessageError as exc:
            _fail(exc.message, loc)
    return tuple(messages)


def _block(value: Any, loc: str, load_image: ImageLoader) -> MessageContent:
    obj = _dict(value, loc)
    kind = obj.get("type")
    if kind == "text":
        obj = _owned(obj, loc, ("type", "text"))
        return Text(text=_str(obj["text"], f"{loc}.text"))
    if kind == "image":
        return _image(_owned(obj, loc, ("type", "sha256", "mimeType")), loc, load_image)
    if kind == "imageOmitted":
        obj = _owned(obj, loc, ("type", "mimeType"))
        return Text.omitted_image(_str(obj["mimeType"], f"{loc}.mimeType"))
    if kind == "toolCall":
        obj = _owned(obj, loc, ("type", "id", "name"), ("arguments", "argumentsBase64"))
        return ToolCall(
            id=_str(obj["id"], f"{loc}.id"),
            name=_str(obj["name"], f"{loc}.name"),
            arguments=_bytes(obj, "arguments", loc),
        )
    if kind == "toolResult":
        required = ("type", "callID", "toolName", "isError")
        obj = _owned(obj, loc, required, ("content", "contentBase64"))
        call_id = _str(obj["callID"], f"{loc}.callID")
        tool_name = _str(obj["toolName"], f"{loc}.toolName")
        is_error = _bool(obj["isError"], f"{loc}.isError")
        text = obj.get("content")
        if isinstance(text, str) and "contentBase64" not in obj:  # known to be valid UTF-8
            try:
                return ToolResult.from_text(
                    call_id=call_id, tool_name=tool_name, text=text, is_error=is_error
                )
            except InvalidMessageError as exc:
                _fail(exc.message, f"{loc}.content")
        content = _bytes(obj, "content", loc)
        return ToolResult(call_id=call_id, tool_name=tool_name, content=content, is_error=is_error)
    _fail(f"unknown block type {short_repr(kind)}", f"{loc}.type")


def _image(obj: dict[str, Any], loc: str, load_image: ImageLoader) -> MessageContent:
    digest = _str(obj["sha256"], f"{loc}.sha256")
    if not is_sha256(digest):
        _fail("expected 64 lowercase hex digits", f"{loc}.sha256")
    mime = _str(obj["mimeType"], f"{loc}.mimeType")
    data = load_image(digest, mime)
    if data is None:
        return Text.omitted_image(mime)
    if isinstance(data, Unread):
        return Text.omitted_image(mime, unread_sha256=digest)
    sniffed = sniff_image_type(data)
    if sniffed is None or sniffed == mime:
        return Image(data=data, mime_type=mime)
    with warnings.catch_warnings():  # the type was corrected when the image was first made
        warnings.simplefilter("ignore", ImageTypeCorrectedWarning)
        return Image(data=data, mime_type=mime)


def _bytes(obj: dict[str, Any], key: str, loc: str) -> bytes:
    b64 = key + "Base64"
    if (key in obj) == (b64 in obj):
        _fail(f"expected exactly one of {key!r} and {b64!r}", loc)
    if key in obj:
        text = obj[key]
        if not isinstance(text, str):
            _fail(f"expected a string, found {_type_name(text)}", f"{loc}.{key}")
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            _fail("holds a lone surrogate (not UTF-8 text)", f"{loc}.{key}")
    encoded = obj[b64]
    if not isinstance(encoded, str):
        _fail(f"expected a string, found {_type_name(encoded)}", f"{loc}.{b64}")
    try:
        return base64.b64decode(encoded.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        _fail("not valid base64", f"{loc}.{b64}")
