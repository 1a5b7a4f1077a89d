"""The history on the wire: the checks every body build makes and the encoded history.

* :func:`check_request` — the model name, tool-call pairing (:func:`validate_pairing`) and
  image types (:func:`check_images`), checked before any body is built.
* :class:`EncodeCache` — the append-only encoded history of one conversation: each message is
  checked and encoded once, when it first appears, into one growing buffer; a request costs the
  new messages' encoding plus one copy of the stored bytes into the body (SPEC P2, P4).
* :func:`history_array` / :func:`wire_array` — a request's messages as the ``messages`` (or
  ``input``) array: a view of the cache's buffer, or (no cache) one list written in one pass.
* :class:`NativePieces` — a provider's pieces written in C (``llmcore.providers._speedups``,
  built at install where a compiler is present), the Python encoder standing in for any message
  the C writer leaves to it; the bytes are the same either way.

A message's wire bytes are stored as a *piece*: each JSON value it becomes, preceded by a comma
(``b',{"role":"user",…}'``; Chat writes one value per tool result); a message that becomes
nothing is ``b""``. The array is the pieces joined, less the first comma.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import ModuleType
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.errors import InvalidRequestError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.request import Request

_speedups: ModuleType | None
try:
    _speedups = importlib.import_module("llmcore.providers._speedups")
except ImportError:  # installed without the C extension: every piece is written in Python
    _speedups = None

__all__ = [
    "SUPPORTED_IMAGE_TYPES",
    "EncodeCache",
    "MessageEncoder",
    "MessageValues",
    "NativePieces",
    "check_images",
    "check_request",
    "history_array",
    "validate_pairing",
    "wire_array",
]

MessageEncoder = Callable[[int, Message, Hashable], bytes]
"""Encodes message ``i`` under its option (``None`` when it has none) into its piece."""

MessageValues = Callable[[int, Message, Hashable], list[Any]]
"""Returns the JSON values message ``i`` becomes under its option (none, one, or several)."""

SUPPORTED_IMAGE_TYPES: Final = ("image/jpeg", "image/png", "image/gif", "image/webp")
"""The image types every provider accepts (Anthropic vision docs: "image/jpeg, image/png,
image/gif, image/webp"; OpenAI images guide: PNG, JPEG, WEBP, non-animated GIF)."""


def validate_pairing(messages: tuple[Message, ...], start: int = 0) -> None:
    """Check that every tool call is answered and every tool result answers a call.

    A ``tool`` message must follow an assistant message with tool calls (other ``tool`` messages
    may stand between); together those tool messages must answer every call of that assistant
    message, each exactly once, before any other message.

    Args:
        messages: The history.
        start: Check from this index on; the messages before it must be a checked history
            whose last message is settled (:func:`_settled`), so no call is pending there.

    Raises:
        InvalidRequestError: naming ``messages[i]`` and the orphaned or unanswered id.
    """
    pending: dict[str, int] = {}
    pending_from = -1
    for index in range(start, len(messages)):
        message = messages[index]
        if message.role == "tool":
            for part in message.content:
                assert isinstance(part, ToolResult)
                if pending_from < 0:
                    raise InvalidRequestError(
                        f"tool result {part.call_id!r} follows no assistant tool call",
                        location=f"messages[{index}]",
                    )
                if part.call_id not in pending:
                    raise InvalidRequestError(
                        f"tool result {part.call_id!r} answers no pending tool call",
                        location=f"messages[{index}]",
                    )
                del pending[part.call_id]
            continue
        _raise_unanswered(pending, pending_from)
        pending_from = -1
        if message.role == "assistant":
            calls = [p.id for p in message.content if isinstance(p, ToolCall)]
            if calls:
                if len(set(calls)) != len(calls):
                    raise InvalidRequestError(
                        "an assistant message repeats a tool call id",
                        location=f"messages[{index}]",
                    )
                pending = dict.fromkeys(calls, index)
                pending_from = index
    _raise_unanswered(pending, pending_from)


def _raise_unanswered(pending: dict[str, int], pending_from: int) -> None:
    if pending:
        first = next(iter(pending))
        raise InvalidRequestError(
            f"tool call {first!r} has no tool result in the messages that follow",
            location=f"messages[{pending_from}]",
        )


def _settled(message: Message) -> bool:
    """Whether no tool call is pending after ``message`` (a user message, or assistant text).

    After such a message :func:`validate_pairing` is back at its empty starting state.
    """
    if message.role == "tool":
        return False
    return message.role == "user" or not any(isinstance(p, ToolCall) for p in message.content)


def check_images(messages: tuple[Message, ...], start: int = 0) -> None:
    """Refuse an image whose type no provider accepts (A5 keeps such a declared type).

    Args:
        messages: The history.
        start: Check the messages from this index on.

    Raises:
        InvalidRequestError: naming ``messages[i].content[j]`` and the type.
    """
    for index in range(start, len(messages)):
        message = messages[index]
        if message.role != "user":
            continue
        for position, part in enumerate(message.content):
            if isinstance(part, Image) and part.mime_type not in SUPPORTED_IMAGE_TYPES:
                raise InvalidRequestError(
                    f"image type {part.mime_type!r} cannot be sent; providers accept "
                    + ", ".join(SUPPORTED_IMAGE_TYPES),
                    location=f"messages[{index}].content[{position}]",
                )


_CONTENT_TYPES: Final = (Text, Image, ToolCall, ToolResult)


def check_request(request: Request, cache: EncodeCache | None = None) -> None:
    """Run the checks every provider makes before building a body.

    With ``cache``, the messages it already holds (checked when they were first built) are not
    checked again: pairing resumes at the last settled message before the first new one, and
    images are checked in the new messages only. With the C extension, a history it finds
    certainly valid is not checked again in Python; any other runs the Python checks.

    Raises:
        InvalidRequestError: Unpaired tool calls/results, an image type no provider accepts,
            or an empty model name.
    """
    if not request.model:
        raise InvalidRequestError("the request names no model", location="model")
    messages = request.messages
    known = cache.known(messages) if cache is not None else 0
    resume = known
    while resume > 0 and not _settled(messages[resume - 1]):
        resume -= 1
    messages = _frozen(messages)
    if _speedups is None or not _speedups.history_ok(
        messages, resume, known, _CONTENT_TYPES, SUPPORTED_IMAGE_TYPES
    ):  # the C answer is "certainly passes" or "ask Python", which raises the precise error
        validate_pairing(messages, resume)
        check_images(messages, known)


@dataclass(slots=True)
class EncodeCache:
    """The encoded history of one conversation, for one provider (append-only).

    It keeps the messages of the latest build and their wire pieces, concatenated in one buffer
    with each piece's end offset. The next build reuses the pieces of the messages it shares
    with that one from the start (the same objects, or equal values after a reopen), re-encodes
    the shared messages whose option changed (a cache breakpoint moved, carried data came or
    went) and puts each new piece in place of the old one, and appends the new messages'
    pieces, each encoded once. History that is edited rather than appended to is cut at the
    first change and encoded again from there. So a build costs the new (or changed) messages'
    encoding and one comparison of the message tuples, whatever the history's length, and the
    array it hands out is one view of the buffer. Keep one per conversation and provider.

    ``copy.copy`` and ``copy.deepcopy`` give an independent cache (its own buffer); a pickled
    cache loads as one.

    Builds of one cache from two threads take turns (a lock held while the cache is read and
    written), so each gets its own request's bytes; the array a build returns keeps its bytes
    while another build changes the cache (:meth:`encode_all`). An error raised while the
    buffer is being changed (out of memory, an encoder returning something other than bytes)
    empties the cache, so the next build encodes the whole history again.
    """

    hits: int = 0
    """Messages whose stored piece was reused, over this cache's life."""
    misses: int = 0
    """Messages encoded, over this cache's life."""
    _messages: tuple[Message, ...] = field(default=(), repr=False)
    _options: dict[int, Hashable] = field(default_factory=dict, repr=False)
    _buffer: bytearray = field(default_factory=bytearray, repr=False)
    """The pieces of ``_messages``, concatenated."""
    _ends: list[int] = field(default_factory=list, repr=False)
    """Where each message's piece ends in ``_buffer`` (each starts where the one before ends)."""
    _asked: tuple[Message, ...] | None = field(default=None, repr=False)
    """The messages :meth:`known` was last asked about (a build asks twice: checks, encoding)."""
    _answer: int = field(default=0, repr=False)
    _said: set[str] = field(default_factory=set, repr=False, compare=False)
    """The keys :meth:`first_time` was asked about (warnings said once per conversation)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    """Held while a build (or :meth:`known`) reads and changes the fields above."""

    def __copy__(self) -> EncodeCache:
        """Return a cache with the same contents and its own buffer (a build changes it).

        The copy's buffer has room to grow (:func:`_copy_with_room`), so its next build appends
        in place.
        """
        with self._lock:
            return EncodeCache(
                hits=self.hits,
                misses=self.misses,
                _messages=self._messages,
                _options=dict(self._options),
                _buffer=_copy_with_room(self._buffer),
                _ends=list(self._ends),
                _said=set(self._said),
            )

    def __getstate__(self) -> dict[str, Any]:
        """Return the fields but the lock (``pickle`` and ``copy.deepcopy``)."""
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_lock"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore :meth:`__getstate__`'s fields, with a lock of its own."""
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self._lock = threading.Lock()

    def first_time(self, key: str) -> bool:
        """Return ``True`` the first time ``key`` is asked of this cache, then ``False``.

        A builder uses it to say a warning once per conversation rather than once per request
        (Gemini's ``cachedContent``, :class:`~llmcore.errors.FieldsNotSentWarning`).
        """
        with self._lock:
            if key in self._said:
                return False
            self._said.add(key)
            return True

    def known(self, messages: tuple[Message, ...]) -> int:
        """Return how many leading messages of ``messages`` the latest build also began with."""
        with self._lock:
            return self._known(_frozen(messages))

    def _known(self, messages: tuple[Message, ...]) -> int:
        if messages is self._asked:
            return self._answer
        self._answer = self._shared(messages)
        self._asked = messages
        return self._answer

    def _shared(self, messages: tuple[Message, ...]) -> int:
        previous = self._messages
        if len(previous) <= len(messages):
            if _begins(messages, previous):
                return len(previous)
        elif _begins(previous, messages):
            return len(messages)
        for index in range(min(len(previous), len(messages))):
            if previous[index] is not messages[index] and previous[index] != messages[index]:
                return index
        return min(len(previous), len(messages))  # pragma: no cover - _begins found a difference

    def encode_all(
        self,
        messages: tuple[Message, ...],
        options: Mapping[int, Hashable],
        encode: MessageEncoder,
    ) -> memoryview:
        """Return the messages' pieces, concatenated, encoding only what the latest build lacked.

        The messages are encoded before the stored history changes, so an error raised by
        ``encode`` leaves the cache as it was.

        Args:
            messages: The request's messages.
            options: The encoding options of the messages that have one (breakpoint TTL,
                carried data), by index; every other message's option is ``None``.
            encode: Encodes message ``i`` under its option.

        Returns:
            A read-only view of the cache's buffer. While it (or a view made from it) is alive
            the buffer cannot be resized; the next build that changes the history then writes
            into a copy, and the view keeps the bytes it had.
        """
        messages = _frozen(messages)
        with self._lock:
            known = self._known(messages)
            previous = self._options
            options = {
                i: o for i, o in options.items() if isinstance(i, int) and 0 <= i < len(messages)
            }
            changed = previous.keys() | options.keys()
            moved = sorted(i for i in changed if i < known and previous.get(i) != options.get(i))
            replaced = {i: encode(i, messages[i], options.get(i)) for i in moved}
            added = [encode(i, messages[i], options.get(i)) for i in range(known, len(messages))]
            if replaced or added or known < len(self._ends):
                try:
                    self._update(known, replaced, added)
                except BaseException:
                    self._clear()
                    raise
            self.misses += len(moved) + len(messages) - known
            self.hits += known - len(moved)
            self._messages, self._options = messages, options
            self._asked = None
            return memoryview(self._buffer).toreadonly()

    def _update(self, known: int, replaced: Mapping[int, bytes], added: list[bytes]) -> None:
        """Cut the buffer after ``known`` messages, put in ``replaced``, append ``added``."""
        buffer, ends = self._writable(), self._ends
        if known < len(ends):
            del buffer[self._start(known) :]
            del ends[known:]
        if replaced:
            self._replace(replaced)
        for piece in added:
            buffer += piece
            ends.append(len(buffer))

    def _clear(self) -> None:
        """Forget every stored message (the buffer no longer matches them)."""
        self._messages, self._options = (), {}
        self._buffer, self._ends = bytearray(), []
        self._asked = None

    def pieces(self) -> list[bytes]:
        """Return a copy of each stored message's piece, in order (for inspection)."""
        with self._lock, memoryview(self._buffer) as view:
            return [bytes(view[self._start(i) : end]) for i, end in enumerate(self._ends)]

    def _start(self, index: int) -> int:
        return self._ends[index - 1] if index else 0

    def _writable(self) -> bytearray:
        """Return the buffer, copied first if a view of it is still alive (it cannot resize).

        A view handed out by :meth:`encode_all` is normally gone once the body is written; a
        caller that kept it (or an array made from it) keeps the bytes it had, and this cache
        goes on in a copy (the one case where a build copies the whole history).
        """
        buffer = self._buffer
        try:
            buffer.append(0)  # resizing raises BufferError while a view exists
        except BufferError:
            buffer = self._buffer = _copy_with_room(buffer)
        else:
            del buffer[-1]
        return buffer

    def _replace(self, pieces: Mapping[int, bytes]) -> None:
        """Put each ``pieces[i]`` in place of message ``i``'s; the later pieces move with it."""
        buffer, ends = self._buffer, self._ends
        for index in sorted(pieces, reverse=True):  # from the end: earlier offsets stay valid
            buffer[self._start(index) : ends[index]] = pieces[index]
        first = min(pieces)
        old_start = new_end = self._start(first)
        for index in range(first, len(ends)):
            old_end = ends[index]
            piece = pieces.get(index)
            new_end += old_end - old_start if piece is None else len(piece)
            ends[index], old_start = new_end, old_end


def _frozen(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """Return ``messages`` as a plain tuple (the cache keeps it).

    A list the caller changes in place, or a tuple subclass's own comparison, never decides
    what the cache holds.
    """
    return messages if type(messages) is tuple else tuple(messages)


def _copy_with_room(buffer: bytearray) -> bytearray:
    """Return a copy of ``buffer`` with room to grow by an eighth before it is reallocated.

    As much as a buffer grown by appends has (CPython over-allocates a ``bytearray`` by about an
    eighth), so appending the next turn's pieces does not copy the whole history again.
    """
    size = len(buffer)
    copied = bytearray(size + (size >> 3))
    copied[:size] = buffer
    del copied[size:]  # a shrink by less than half keeps the allocation
    return copied


def _begins(longer: tuple[Message, ...], shorter: tuple[Message, ...]) -> bool:
    """Return whether ``longer`` begins with ``shorter``'s messages (the same, or equal values).

    ``len(shorter) <= len(longer)``. One comparison in C that copies neither tuple (a slice
    would touch every message to count a reference to it): tuples compare item by item,
    identity first, then ``==``, and the first unequal pair decides ``<=``, which
    :class:`~llmcore.messages.Message` does not define (``TypeError``). So ``shorter <= longer``
    is true exactly when every message of ``shorter`` equals its counterpart in ``longer``.
    """
    try:
        return shorter <= longer
    except TypeError:  # two messages differ, and messages have no order
        return False


@dataclass(frozen=True, slots=True)
class NativePieces:
    """A provider's message pieces written by ``llmcore.providers._speedups`` (C).

    The C writer writes each message the way the provider's :data:`MessageValues` function and
    :func:`jsonbytes.dumps_float_free` do, key for key and byte for byte (property tests compare
    the two on every provider it serves); a message it does not write itself — one with an
    encoding option other than an Anthropic cache breakpoint's TTL (carried data), or a value of
    a type other than the model's own — is written by the Python encoder, and without the
    compiled extension every message is (:func:`history_array`).

    Attributes:
        function: The extension's writer (``"anthropic_pieces"``, ``"chat_pieces"``,
            ``"responses_pieces"``, ``"converse_pieces"``, ``"gemini_pieces"``).
        hooks: What the writer needs from the provider module: the content classes, the
            provider's ``wire_id`` and ``arguments_json``, the id length limit, whether ids must
            match ``[a-zA-Z0-9_-]+``, and the JSON of Chat's error-result text part (or
            ``None``).
    """

    function: str
    hooks: tuple[Any, ...]


_NO_OPTIONS: Final[dict[int, Hashable]] = {}


def history_array(
    messages: tuple[Message, ...],
    options: Mapping[int, Hashable],
    values: MessageValues,
    cache: EncodeCache | None,
    head: Sequence[Any] = (),
    native: NativePieces | None = None,
) -> jsonbytes.RawArray:
    """Return the array of ``head`` and the messages' values, for :func:`jsonbytes.dumps`.

    Message values hold no float, so they are written by :func:`jsonbytes.dumps_float_free`
    (strings escaped in C). With ``cache``, each message's piece (its values, each after a
    comma) comes from the cache or is encoded once, and the array joins the pieces. Without one
    (a cold build), every message's values go into one list written in one call. The bytes are
    the same either way.

    Args:
        messages: The request's messages.
        options: The encoding options of the messages that have one, by index.
        values: Returns message ``i``'s JSON values under its option.
        cache: The conversation's encode cache, or ``None``.
        head: Values written before the messages' (Chat's ``system`` message).
        native: The provider's pieces written in C, used when the extension is installed.
    """

    def slow(index: int, message: Message, option: Hashable) -> bytes:
        return _piece(values(index, message, option))

    encode: MessageEncoder = slow
    if native is not None and _speedups is not None:
        write = getattr(_speedups, native.function)
        if cache is None:
            frozen = _frozen(messages)
            plain = _plain_options(options, len(frozen))
            opening = b"[" + _piece(list(head))[1:]

            def body(before: bytes, after: bytes) -> bytes:  # the whole body, written once
                written: bytes = write(
                    frozen, 0, plain, slow, native.hooks, before + opening, b"]" + after
                )
                return written

            return jsonbytes.RawArray.written_around(body)

        def encode(index: int, message: Message, option: Hashable) -> bytes:
            options = _NO_OPTIONS if option is None else {index: option}
            piece: bytes = write((message,), index, options, slow, native.hooks)
            return piece

    if cache is None:
        return _cold_array(messages, _plain_options(options, len(messages)), values, head)
    history = cache.encode_all(messages, options, encode)
    return wire_array(history, _piece(list(head)))


def _plain_options(options: Mapping[int, Hashable], count: int) -> dict[int, Hashable]:
    """Return the options of the messages ``0 … count-1`` as a plain ``dict``.

    Every build reads its options through this filter (a cached one through
    :meth:`EncodeCache.encode_all`'s own), so a key that only equals an index (``1.0``) is
    dropped by each alike, with or without the C writer.
    """
    return {i: o for i, o in options.items() if isinstance(i, int) and 0 <= i < count}


_COLD_RUN: Final = 128
"""Values written per call in a cold build: each run's objects are freed before the next is
made, so they die young instead of being promoted into a full garbage collection."""


def _cold_array(
    messages: tuple[Message, ...],
    options: Mapping[int, Hashable],
    values: MessageValues,
    head: Sequence[Any],
) -> jsonbytes.RawArray:
    """Return the array of ``head`` and the messages' values, written in runs of values.

    The runs' texts joined by commas are the text of the whole array written at once.
    """
    pieces: list[bytes | memoryview] = []

    def write(run: list[Any]) -> None:  # the run's values without brackets, each copied once
        if pieces:
            pieces.append(b",")
        pieces.append(memoryview(jsonbytes.dumps_float_free(run))[1:-1])

    run = list(head)
    for index, message in enumerate(messages):
        run.extend(values(index, message, options.get(index)))
        if len(run) >= _COLD_RUN:
            write(run)
            run = []
    if run:
        write(run)
    return jsonbytes.RawArray.from_pieces(pieces)


def _piece(items: list[Any]) -> bytes:
    """Return a message's piece: its values, each after a comma (``b""`` for none)."""
    if not items:
        return b""
    return b"," + memoryview(jsonbytes.dumps_float_free(items))[1:-1]  # one copy, not two


def wire_array(history: bytes | memoryview, head: bytes = b"") -> jsonbytes.RawArray:
    """Return the JSON array of ``head`` and ``history`` (pieces: each a comma and values).

    At most two pieces, whose bytes are copied once, into the body: the head without its first
    comma, then the history (or, with no head, the history without its first comma, cut by a
    view).

    Args:
        history: The messages' pieces, concatenated (:meth:`EncodeCache.encode_all`).
        head: Values written before the messages', each after a comma (``b""`` for none).
    """
    view = history if isinstance(history, memoryview) else memoryview(history)
    pieces: list[bytes | memoryview] = []
    if head:
        pieces.append(memoryview(head)[1:])
        if len(view):
            pieces.append(view)
    elif len(view):
        pieces.append(view[1:])
    return jsonbytes.RawArray.from_pieces(pieces)
