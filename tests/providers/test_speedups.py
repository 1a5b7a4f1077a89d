"""The C writer of the history's pieces (``llmcore.providers._speedups``) against the Python one.

Every body built with the extension must be the body built without it, byte for byte (SPEC P2):
the Python encoders are the reference, and the C writer hands them every message it does not
write itself.
"""

from __future__ import annotations

import gc
import json
import sys
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.errors import InvalidMessageError, InvalidRequestError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import get_provider
from llmcore.providers import history as history_module
from llmcore.providers.anthropic import encode as anthropic_encode
from llmcore.providers.bedrock_converse import encode as converse_encode
from llmcore.providers.gemini import encode as gemini_encode
from llmcore.providers.history import EncodeCache
from llmcore.providers.openai_chat import encode as chat_encode
from llmcore.providers.openai_responses import encode as responses_encode
from llmcore.request import Params, Request
from tests.examples import examples
from tests.strategies import conversations

speedups = history_module._speedups
PROVIDERS = (
    "anthropic",
    "openai-chat",
    "openai-responses",
    "openrouter",
    "bedrock-converse",
    "gemini",
)
C_WRITERS = ["anthropic", "openai-chat", "openai-responses", "bedrock-converse", "gemini"]
"""The providers whose messages the C writer writes."""
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def test_the_extension_is_built_in_this_checkout():
    # .ci/run installs with a compiler, so the suite runs the C writer; without one llmcore
    # installs and writes every piece in Python (test_jsonbytes runs a build without it).
    assert speedups is not None
    assert anthropic_encode._NATIVE.function == "anthropic_pieces"
    assert chat_encode._NATIVE.function == "chat_pieces"
    assert converse_encode._NATIVE.function == "converse_pieces"
    assert responses_encode._NATIVE.function == "responses_pieces"
    assert gemini_encode._NATIVE.function == "gemini_pieces"


@contextmanager
def pure_python() -> Iterator[None]:
    """Build bodies without the C writer."""
    saved = history_module._speedups
    history_module._speedups = None
    try:
        yield
    finally:
        history_module._speedups = saved


def c_literal(text: str) -> bytes:
    return speedups.escape(text.encode("utf-8"))


def python_literal(text: str) -> bytes:
    return jsonbytes.encode_str(text).encode("utf-8")


def test_every_code_point_is_escaped_as_encode_str_escapes_it():
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(points), 4096):
        text = "".join(points[start : start + 4096])
        assert c_literal(text) == python_literal(text), hex(start)
    for c in range(0x80):  # each ASCII character alone, between others and at either end
        for text in (chr(c), f"ab{chr(c)}cd", chr(c) * 3):
            assert c_literal(text) == python_literal(text), c


@pytest.mark.parametrize("escaped", ['"', "\\", "\n", "\x00", "\x1f", "\x08", "\x7f", "é"])
def test_an_escape_is_found_at_every_position_of_every_length(escaped):
    # The scan steps 16 (or 8) bytes at a time, then byte by byte: every position of every
    # length up to three steps, and two escapes at every distance.
    for length in range(1, 50):
        for position in range(length):
            text = "a" * position + escaped + "b" * (length - position - 1)
            assert c_literal(text) == python_literal(text), (length, position)
            doubled = text + "c" * (position % 17) + escaped
            assert c_literal(doubled) == python_literal(doubled), (length, position)


@pytest.mark.full_count
@settings(max_examples=examples(full=3000, sample=150))
@given(st.text(st.characters(exclude_categories=("Cs",)), max_size=80))
def test_any_text_is_escaped_as_encode_str_escapes_it(text):
    assert c_literal(text) == python_literal(text)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.full_count
@settings(max_examples=examples(full=600, sample=30), deadline=None)
@given(data=st.data())
def test_bodies_written_in_c_are_the_bodies_written_in_python(provider, data):
    """Cold builds, cached builds step by step, carried data and every cache mode."""
    p = get_provider(provider)
    conversation = data.draw(conversations(provider), label="conversation")
    cache = EncodeCache()
    for request in conversation.requests():
        carry = data.draw(
            st.dictionaries(
                st.integers(0, len(request.messages) - 1),
                st.just(('{"type":"thinking","thinking":"t","signature":"s"}',)),
                max_size=1,
            ),
            label="carry",
        )
        built = p.build_body(request, cache=cache, carry=carry)
        cold = p.build_body(request, carry=carry)
        with pure_python():
            reference = p.build_body(request, carry=carry)
        assert cold == reference
        assert built == reference


def tool_history(call_id: str, result: bytes, *, is_error: bool = False) -> tuple[Message, ...]:
    return (
        Message.user("run it", Image(data=PNG, mime_type="image/png"), ""),
        Message.assistant("", ToolCall(id=call_id, name="f", arguments=b'{"a": "\\u00e9"}'), "ok"),
        Message.tool(ToolResult(call_id=call_id, tool_name="f", content=result, is_error=is_error)),
    )


@pytest.mark.parametrize("provider", C_WRITERS)
@pytest.mark.parametrize(
    ("call_id", "result", "is_error"),
    [
        ("toolu_01", b"plain", False),
        ("id with space/\u00ef", b'x\xff"\\\x01', True),  # rewritten id, invalid UTF-8
        ("c" * 300, b"", True),  # over both limits; an empty error result
        ("c" * 41, b"", False),  # over Chat's limit only; an empty result
        ("c" * 65, b"x", False),  # over Responses' limit too
        ("", b"\n" * 40, False),  # an empty id is rewritten by both
        ("tooluse_a.b:c", b"r", False),  # valid for Converse, left to its wire_id hook by C
        ("t" * 70, b"r", True),  # over Converse's 64
    ],
)
def test_ids_results_and_images_are_written_as_python_writes_them(
    provider, call_id, result, is_error
):
    request = Request(model="m", messages=tool_history(call_id, result, is_error=is_error))
    built = get_provider(provider).build_body(request)
    with pure_python():
        assert built == get_provider(provider).build_body(request)


@pytest.mark.parametrize("arguments", [b"", b"  \n", b"[1]", b'{"a": 1e999}', b"{\xff}", b"nul"])
@pytest.mark.parametrize("provider", C_WRITERS)
def test_arguments_that_are_no_json_object_are_wrapped_as_python_wraps_them(provider, arguments):
    request = Request(
        model="m",
        messages=(
            Message.user("go"),
            Message.assistant(ToolCall(id="c1", name="f", arguments=arguments)),
            Message.tool(ToolResult(call_id="c1", tool_name="f", content=b"r")),
        ),
    )
    built = get_provider(provider).build_body(request)
    with pure_python():
        assert built == get_provider(provider).build_body(request)


class LoudText(Text):
    """A content class of the caller's own: the C writer leaves the message to Python."""


@pytest.mark.parametrize("provider", C_WRITERS)
def test_a_message_holding_a_subclass_is_written_by_python_after_c_wrote_part_of_it(provider):
    messages = (
        Message.user("first"),
        Message(role="user", content=(Text(text="a"), LoudText(text="b"))),
    )
    request = Request(model="m", messages=messages)
    built = get_provider(provider).build_body(request)
    with pure_python():
        assert built == get_provider(provider).build_body(request)
    assert b'"b"' in built


_PARTS = st.one_of(
    st.builds(Text, text=st.sampled_from(["", "a", 'q"\\\n', "\u00e9\U0001f600", "\x00\x1f"])),
    st.just(Image(data=PNG, mime_type="image/png")),
    st.builds(  # bytes with no signature keep any declared type, even one to escape
        Image,
        data=st.sampled_from([b"", b"no signature"]),
        mime_type=st.sampled_from(["image/png", 'x"y', "\u00e9/b", "a\nb"]),
    ),
    st.builds(
        ToolCall,
        id=st.sampled_from(["c1", "", "c" * 65, "id with space"]),
        name=st.sampled_from(["f", 'na"me']),
        arguments=st.sampled_from([b'{"a":1}', b"", b"[1]", b"{\xff}", b'{"a":"\xc3\xa9"}']),
    ),
    st.builds(
        ToolResult,
        call_id=st.sampled_from(["c1", "c" * 70]),
        tool_name=st.just("f"),
        content=st.sampled_from([b"", b"ok", b'x\xff"\\\x01']),
        is_error=st.booleans(),
    ),
)
"""Any content case in any message, so every shape and every refusal of a role is drawn."""


def _message_or_none(role: str, parts: list[object]) -> Message | None:
    try:
        return Message(role=role, content=tuple(parts))  # type: ignore[arg-type]
    except InvalidMessageError:  # a case the model refuses (an empty user message)
        return None


def messages_of(parts: st.SearchStrategy[object]) -> st.SearchStrategy[Message]:
    """Messages of any role holding one to four of ``parts`` (the ones the model accepts)."""
    roles = st.sampled_from(["user", "assistant", "tool"])
    built = st.builds(_message_or_none, roles, st.lists(parts, min_size=1, max_size=4))
    return built.filter(lambda message: message is not None)


_ANY_MESSAGE = messages_of(_PARTS)


@st.composite
def histories(
    draw: st.DrawFn, messages: st.SearchStrategy[Message], carried: str
) -> tuple[tuple[Message, ...], dict[int, tuple[str]]]:
    """Up to six messages, and up to two of them given ``carried`` data as their option."""
    history = tuple(draw(st.lists(messages, max_size=6)))
    marked = draw(st.sets(st.integers(0, 5), max_size=2))
    return history, {i: (carried,) for i in marked if i < len(history)}


@pytest.mark.full_count
@settings(max_examples=examples(full=3000, sample=200), deadline=None)
@given(histories(_ANY_MESSAGE, '{"type":"reasoning","id":"rs_1"}'))
def test_responses_histories_written_in_c_are_written_as_python_writes_them(history):
    """Every history of any parts (cold and piece by piece): C's bytes, or Python's error."""
    messages, options = history
    slow = slow_of(responses_encode)
    hooks = responses_encode._NATIVE.hooks

    def python() -> bytes:
        return b"".join(slow(i, m, options.get(i)) for i, m in enumerate(messages))

    try:
        expected: bytes | type[Exception] = python()
    except InvalidRequestError:
        expected = InvalidRequestError
    try:
        written: bytes | type[Exception] = speedups.responses_pieces(
            messages, 0, options, slow, hooks
        )
    except InvalidRequestError:
        written = InvalidRequestError
    assert written == expected
    if isinstance(expected, bytes):  # the body around them, as a cold build writes it
        around = speedups.responses_pieces(messages, 0, options, slow, hooks, b"[", b"]")
        assert around == b"[" + expected[1:] + b"]"


_GEMINI_PARTS = st.one_of(
    _PARTS,
    st.builds(  # made-up ids (not sent), results that may be objects, names looked up
        ToolCall,
        id=st.sampled_from(["gemini-call-0", "gemini-call-x", "gemini-cal", "c1"]),
        name=st.sampled_from(["f", "g"]),
        arguments=st.just(b'{"a":1}'),
    ),
    st.builds(
        ToolResult,
        call_id=st.sampled_from(["c1", "gemini-call-0", "gemini-call-", ""]),
        tool_name=st.sampled_from(["", "f"]),
        content=st.sampled_from(
            [b"{}", b' \n{"a":1}', b'{"output":"x"}', b'{"error":1}', b"{x", b" \t", b"[1]"]
        ),
        is_error=st.booleans(),
    ),
)

_GEMINI_MESSAGE = messages_of(_GEMINI_PARTS)


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=100), deadline=None)
@given(histories(_GEMINI_MESSAGE, '{"text":"t","thoughtSignature":"s"}'))
def test_gemini_histories_written_in_c_are_written_as_python_writes_them(history):
    """Every history of any parts (cold and piece by piece): C's bytes are Python's."""
    messages, options = history
    name_of = gemini_encode.history_names(messages)

    def slow(i, m, o):
        return history_module._piece(gemini_encode.content_values(i, m, o, name_of))

    expected = b"".join(slow(i, m, options.get(i)) for i, m in enumerate(messages))
    hooks = gemini_encode._NATIVE.hooks
    assert speedups.gemini_pieces(messages, 0, options, slow, hooks) == expected
    around = speedups.gemini_pieces(messages, 0, options, slow, hooks, b"[", b"]")
    assert around == (b"[" + expected[1:] + b"]" if expected else b"[]")
    for index, message in enumerate(messages):  # one piece at a time, as a cached build does
        option = {index: options[index]} if index in options else {}
        assert speedups.gemini_pieces((message,), index, option, slow, hooks) == slow(
            index, message, options.get(index)
        )


def test_gemini_messages_python_decides_are_left_to_it():
    """Made-up ids, looked-up names and results that may be objects: Python's bytes."""
    messages = (
        Message.user("go"),
        Message.assistant(
            ToolCall(id="gemini-call-0", name="f", arguments=b"{}"),
            ToolCall(id="c2", name="g", arguments=b"{}"),
        ),
        Message.tool(
            ToolResult(call_id="gemini-call-0", tool_name="f", content=b"plain"),
            ToolResult(call_id="c2", tool_name="", content=b'{"k": [1]}'),
        ),
    )
    built = get_provider("gemini").build_body(Request(model="m", messages=messages))
    with pure_python():
        assert built == get_provider("gemini").build_body(Request(model="m", messages=messages))
    contents = json.loads(built)["contents"]
    assert contents[1]["parts"][0] == {"functionCall": {"name": "f", "args": {}}}
    assert contents[2]["parts"] == [
        {"functionResponse": {"name": "f", "response": {"output": "plain"}}},
        {"functionResponse": {"id": "c2", "name": "g", "response": {"k": [1]}}},
    ]


def hooks_of(module, **changed):
    names = ("text", "image", "call", "result", "wire_id", "arguments", "limit", "safe", "error")
    hooks = dict(zip(names, module._NATIVE.hooks, strict=True))
    hooks.update(changed)
    return tuple(hooks.values())


def slow_of(module):
    return lambda i, m, o: history_module._piece(module._message_values(i, m, o))


def test_an_error_raised_by_a_hook_reaches_the_caller():
    def refuse(call_id: str) -> str:
        raise ValueError(f"no id for {call_id!r}")

    messages = tool_history("needs rewriting!", b"r")
    hooks = hooks_of(anthropic_encode, wire_id=refuse)
    with pytest.raises(ValueError, match="needs rewriting"):
        speedups.anthropic_pieces(messages, 0, {}, slow_of(anthropic_encode), hooks)


def test_the_writer_refuses_wrong_arguments_with_type_errors():
    messages = (Message.user("hi"), Message(role="user", content=(LoudText(text="x"),)))
    slow = slow_of(chat_encode)
    hooks = chat_encode._NATIVE.hooks
    with pytest.raises(TypeError, match="messages must be a tuple"):
        speedups.chat_pieces(list(messages), 0, {}, slow, hooks)
    with pytest.raises(TypeError, match="options must be a dict"):
        speedups.chat_pieces(messages, 0, [], slow, hooks)
    with pytest.raises(TypeError, match="hooks must be a tuple of 9"):
        speedups.chat_pieces(messages, 0, {}, slow, hooks[:8])
    with pytest.raises(TypeError, match="must be bytes or None"):
        speedups.chat_pieces(messages, 0, {}, slow, hooks_of(chat_encode, error="x"))
    with pytest.raises(TypeError, match="returned str, not bytes"):
        speedups.chat_pieces(messages, 0, {}, lambda i, m, o: "text", hooks)
    with pytest.raises(TypeError, match="takes 5 or 7 arguments"):
        speedups.chat_pieces(messages, 0, {}, slow)
    with pytest.raises(TypeError, match="prefix and suffix must be bytes"):
        speedups.chat_pieces(messages, 0, {}, slow, hooks, b"[", "]")


@pytest.mark.parametrize(
    ("prefix", "suffix", "written"),
    [
        (b'{"messages":[', b"]}", b'{"messages":[{"a":0},{"b":1}]}'),  # the first comma goes
        (b'{"messages":[{"system":1}', b"]}", b'{"messages":[{"system":1},{"a":0},{"b":1}]}'),
        (b"", b"", b',{"a":0},{"b":1}'),  # no prefix to open the array: the comma stays
    ],
)
def test_a_body_is_written_around_the_pieces_in_one_buffer(prefix, suffix, written):
    messages = (Message.user("x"), Message.assistant("a"), Message.user("b"))
    pieces = {0: b"", 1: b',{"a":0}', 2: b',{"b":1}'}  # message 0 becomes nothing
    hooks = anthropic_encode._NATIVE.hooks
    options = {i: ("5m", ("x",)) for i in range(3)}  # carried data: every message goes to slow
    slow = lambda i, m, o: pieces[i]  # noqa: E731
    assert speedups.anthropic_pieces(messages, 0, options, slow, hooks, prefix, suffix) == written


def test_options_and_the_first_index_decide_which_messages_python_writes():
    messages = (Message.user("a"), Message.user("b"), Message.user("c"), Message.user("d"))
    seen = []

    def slow(index, message, option):
        seen.append((index, message.content[0].text, option))
        return b",{}"

    hooks = anthropic_encode._NATIVE.hooks
    carried = ("5m", ('{"type":"thinking"}',))
    options = {11: carried, 12: None, 13: "1h", 3: "x"}
    written = speedups.anthropic_pieces(messages, 10, options, slow, hooks)
    assert seen == [(11, "b", carried)]  # carried data is Python's; a TTL the C writer's
    assert written == (
        b',{"role":"user","content":[{"type":"text","text":"a"}]}'
        b",{}"
        b',{"role":"user","content":[{"type":"text","text":"c"}]}'
        b',{"role":"user","content":[{"type":"text","text":"d",'
        b'"cache_control":{"type":"ephemeral","ttl":"1h"}}]}'
    )
    chat_hooks = chat_encode._NATIVE.hooks
    seen.clear()
    speedups.chat_pieces(messages, 10, {13: "1h"}, slow, chat_hooks)
    assert seen == [(13, "d", "1h")]  # Chat's own encoder has no options


@pytest.mark.parametrize("ttl", ["5m", "1h", "other"])
@pytest.mark.parametrize("index", [0, 1, 2])
def test_a_breakpoint_on_any_block_kind_is_written_as_python_writes_it(ttl, index):
    messages = tool_history("c1", b"r")  # image last; tool call then text; a tool result
    slow = slow_of(anthropic_encode)
    hooks = anthropic_encode._NATIVE.hooks
    written = speedups.anthropic_pieces(messages, 0, {index: ttl}, slow, hooks)
    assert written == b"".join(
        slow(i, m, ttl if i == index else None) for i, m in enumerate(messages)
    )
    assert written.count(b"cache_control") == 1


def test_a_breakpoint_on_a_message_with_no_block_is_left_to_python():
    message = Message.user("x")
    object.__setattr__(message, "content", (Text(text=""),))  # past validation: no block to send
    messages = (message,)
    seen = []

    def slow(index, message, option):
        seen.append(option)
        return b",{}"

    hooks = anthropic_encode._NATIVE.hooks
    assert speedups.anthropic_pieces(messages, 0, {0: "5m"}, slow, hooks) == b",{}"
    assert seen == ["5m"]


def test_repeated_writes_and_errors_leave_no_memory_behind():
    messages = tool_history("needs rewriting!", b"result \xff" * 500) * 20
    hooks = anthropic_encode._NATIVE.hooks
    slow = slow_of(anthropic_encode)

    def refuse(call_id: str) -> str:
        raise ValueError(call_id)

    failing = hooks_of(anthropic_encode, wire_id=refuse)

    def rounds(count: int) -> None:
        for _ in range(count):
            speedups.anthropic_pieces(messages, 0, {1: "1h", 2: ("5m", ("{}",))}, slow, hooks)
            with pytest.raises(ValueError):
                speedups.anthropic_pieces(messages, 0, {}, slow, failing)

    rounds(20)  # warm every cache first
    gc.collect()
    tracemalloc.start()
    try:
        rounds(20)
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        rounds(200)
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 64 * 1024  # 200 rounds of ~200 KB each would leak megabytes


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
def test_a_cached_build_writes_new_messages_in_c_and_marked_ones_in_python(provider):
    p = get_provider(provider)
    messages = (*tool_history("c1", b"r"), Message.assistant("done"), Message.user("next"))
    params = Params(cache_mode="breakpoints")
    cache = EncodeCache()
    for count in (1, 3, 5):  # each request ends settled; the breakpoints move each time
        request = Request(model="m", messages=messages[:count], params=params)
        built = p.build_body(request, cache=cache)
        with pure_python():
            assert built == p.build_body(request)


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def json_texts(draw: st.DrawFn) -> bytes:
    """JSON texts written with any spacing, ASCII or not, and sometimes damaged by one edit."""
    value = draw(_JSON_VALUES)
    spaced = draw(st.sampled_from([None, 0, 2]))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " :\r\n")]))
    text = json.dumps(value, ensure_ascii=draw(st.booleans()), indent=spaced, separators=separators)
    data = draw(st.sampled_from(["", " ", "\n\t"])) + text + draw(st.sampled_from(["", " \r\n"]))
    encoded = data.encode("utf-8", "surrogatepass")
    if draw(st.booleans()) and encoded:  # one byte changed, inserted or deleted
        at = draw(st.integers(0, len(encoded) - 1))
        byte = bytes([draw(st.integers(0, 255))])
        encoded = draw(
            st.sampled_from(
                [
                    encoded[:at] + byte + encoded[at + 1 :],
                    encoded[:at] + byte + encoded[at:],
                    encoded[:at] + encoded[at + 1 :],
                ]
            )
        )
    return encoded


@pytest.mark.full_count
@settings(max_examples=examples(full=5000, sample=120))
@given(json_texts())
def test_arguments_c_sends_verbatim_are_json_objects_by_the_python_rule(data):
    if speedups.is_object(data):
        assert jsonbytes.is_json_object(data)


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=50))
@given(st.dictionaries(st.text(max_size=6), _JSON_VALUES, max_size=5))
def test_ascii_json_objects_are_recognised_without_asking_python(value):
    data = json.dumps(value).encode("ascii")  # ASCII, shallow, short numbers
    assert speedups.is_object(data) is jsonbytes.is_json_object(data) is True


@pytest.mark.parametrize(
    ("data", "recognised"),
    [
        (b'{"a": [1, -2.5e+3, true, false, null, "x\\u00e9\\n\\/"]}', True),
        (b" \t\r\n{}\n", True),
        (b'{"a": 1e999}', True),  # an overflowing float: the Python rule accepts it too
        (b'{"a": "\\ud800"}', True),  # a lone surrogate escape: so does the Python rule
        (b"[1]", False),
        (b'"text"', False),
        (b'{"a":1,}', False),
        (b'{"a":01}', False),
        (b'{"a":1.}', False),
        (b'{"a":-}', False),
        (b'{"a":"\xc3\xa9"}', False),  # non-ASCII: left to Python, which accepts it
        (b'{"a": NaN}', False),
        (b'{"a": "\\x"}', False),
        (b'{"a": "\\u12g4"}', False),
        (b'{"a": "tab\there"}', False),
        (b'{"a" 1}', False),
        (b"{]", False),
        (b"{} {}", False),
        (b'{"a":' + b"[" * 64 + b"]" * 64 + b"}", False),  # deeper than the recognizer goes
        (b'{"a":' + b"[" * 63 + b"]" * 63 + b"}", True),
        (b'{"a":' + b"1" * 101 + b"}", False),  # a long number: Python's int limit decides
        (b'{"a":' + b"1" * 100 + b"}", True),
    ],
)
def test_the_recognizer_edges(data, recognised):
    assert speedups.is_object(data) is recognised
    if recognised:
        assert jsonbytes.is_json_object(data)


_CHECK_IDS = st.sampled_from(["c1", "c2", "c3"])
_ANY_MESSAGE = st.one_of(
    st.just(Message.user("u")),
    st.just(Message.user("u", Image(data=PNG, mime_type="image/png"))),
    st.just(Message(role="user", content=(Image(data=b"?", mime_type="image/tiff"),))),
    st.just(Message.assistant("a")),
    st.just(Message(role="user", content=(LoudText(text="x"),))),
    st.lists(_CHECK_IDS, min_size=1, max_size=3).map(
        lambda cs: Message.assistant("t", *(ToolCall(id=c, name="t", arguments=b"{}") for c in cs))
    ),
    st.lists(_CHECK_IDS, min_size=1, max_size=2).map(
        lambda cs: Message.tool(*(ToolResult(call_id=c, tool_name="t", content=b"r") for c in cs))
    ),
)


def python_check(messages: tuple[Message, ...], resume: int, known: int) -> str | None:
    try:
        history_module.validate_pairing(messages, resume)
        history_module.check_images(messages, known)
    except InvalidRequestError as exc:
        return str(exc)
    return None


@pytest.mark.full_count
@settings(max_examples=examples(full=10000, sample=150))
@given(st.lists(_ANY_MESSAGE, max_size=8).map(tuple), st.data())
def test_a_history_c_passes_passes_the_python_checks(messages, data):
    known = data.draw(st.integers(0, len(messages)), label="known")
    resume = data.draw(st.integers(0, known), label="resume")
    types = history_module._CONTENT_TYPES
    supported = history_module.SUPPORTED_IMAGE_TYPES
    passes = speedups.history_ok(messages, resume, known, types, supported)
    if passes:
        assert python_check(messages, resume, known) is None


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_valid_conversations_pass_the_c_check(provider, data):
    conversation = data.draw(conversations(provider), label="conversation")
    types = history_module._CONTENT_TYPES
    supported = history_module.SUPPORTED_IMAGE_TYPES
    for request in conversation.requests():
        assert speedups.history_ok(request.messages, 0, 0, types, supported)


def test_each_kind_of_invalid_history_is_left_to_python_which_names_it():
    call = ToolCall(id="c1", name="t", arguments=b"{}")
    result = ToolResult(call_id="c1", tool_name="t", content=b"r")
    other = ToolResult(call_id="c9", tool_name="t", content=b"r")
    tiff = Image(data=b"?", mime_type="image/tiff")
    cases = {
        "unanswered": (Message.user("u"), Message.assistant(call)),
        "answer without a call": (Message.user("u"), Message.tool(result)),
        "answer to no pending call": (
            Message.user("u"),
            Message.assistant(call),
            Message.tool(other),
        ),
        "answered twice": (
            Message.user("u"),
            Message.assistant(call),
            Message.tool(result),
            Message.tool(result),
        ),
        "repeated id": (Message.user("u"), Message.assistant(call, call), Message.tool(result)),
        "interrupted": (Message.user("u"), Message.assistant(call), Message.user("x")),
        "image type": (Message.user("u", tiff),),
    }
    types = history_module._CONTENT_TYPES
    supported = history_module.SUPPORTED_IMAGE_TYPES
    for name, messages in cases.items():
        assert not speedups.history_ok(messages, 0, 0, types, supported), name
        with pytest.raises(InvalidRequestError):
            history_module.check_request(Request(model="m", messages=messages))
    # an old message's image is not checked again once it is known
    assert speedups.history_ok(cases["image type"], 0, 1, types, supported)


def test_the_portable_scan_escapes_as_the_sse2_scan_does(tmp_path):
    # Machines without SSE2 (ARM, or another compiler) build the 8-bytes-a-step scan: built here
    # with -DLLMCORE_PORTABLE, it must escape every text as encode_str does.
    import subprocess
    import sys
    import sysconfig
    from pathlib import Path

    source = Path(history_module.__file__).with_name("_speedups.c")
    built = tmp_path / ("_speedups" + sysconfig.get_config_var("EXT_SUFFIX"))
    compiler = (sysconfig.get_config_var("CC") or "cc").split()
    include = sysconfig.get_paths()["include"]
    subprocess.run(
        [*compiler, "-shared", "-fPIC", "-O2", "-DLLMCORE_PORTABLE", f"-I{include}", str(source)]
        + ["-o", str(built)],
        check=True,
        capture_output=True,
    )
    script = tmp_path / "check.py"
    script.write_text(
        "import importlib.util, sys\n"
        "from llmcore import jsonbytes\n"
        f"spec = importlib.util.spec_from_file_location('llmcore.providers._speedups', {str(built)!r})\n"
        "module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "texts = [chr(c) for c in range(0x80)] + ['é', '日本', '🎉', 'a' * 40]\n"
        "texts += ['a' * p + e + 'b' * (23 - p) for e in '\"\\\\\\n\\x00\\x1f\\x7f' for p in range(24)]\n"
        "bad = [t for t in texts if module.escape(t.encode()) != jsonbytes.encode_str(t).encode()]\n"
        "print(len(texts), len(bad))\n",
        encoding="utf-8",
    )
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["276", "0"]


def test_a_one_message_write_allocates_for_that_message_only():
    # A cached build writes each new message in a call of its own: a writer that started from
    # a multi-megabyte buffer paid for it (allocating and freeing it) on every message.
    messages = (Message.user("hi"),)
    hooks = anthropic_encode._NATIVE.hooks
    slow = slow_of(anthropic_encode)
    speedups.anthropic_pieces(messages, 0, {}, slow, hooks)
    tracemalloc.start()
    try:
        piece = speedups.anthropic_pieces(messages, 0, {}, slow, hooks)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert piece == b',{"role":"user","content":[{"type":"text","text":"hi"}]}'
    assert peak < 64 * 1024


def tampered_image(mime_type: str, base64: bytes) -> Image:
    """An image whose fields were set past its checks (``object.__setattr__``)."""
    image = Image(data=PNG, mime_type="image/png")
    object.__setattr__(image, "mime_type", mime_type)
    object.__setattr__(image, "_base64", base64)
    return image


@pytest.mark.parametrize("mime_type", ['image/"x"', "image/\u00e9", "image/\n", "image/png"])
@pytest.mark.parametrize("base64", [b"QUJD", b'"\n\\\xff', b"\xc3\xa9"])
@pytest.mark.parametrize("provider", ["anthropic", "openai-chat"])
def test_an_image_url_whose_head_needs_escapes_is_escaped_whole_as_python_does(
    provider, mime_type, base64
):
    # Chat's data URL is copied as is only when "data:<mime>;base64," needs no escape; else
    # the Python encoder escapes the whole URL, base64 text included (data_url).
    message = Message.assistant("look")
    object.__setattr__(message, "content", (tampered_image(mime_type, base64),))
    request = Request(model="m", messages=(Message.user("show me"), message))
    for cache in (None, EncodeCache()):
        built = get_provider(provider).build_body(request, cache=cache)
        with pure_python():
            assert built == get_provider(provider).build_body(request)


class RaisingMessage(Message):
    """A message whose role and content raise errors of different types when read."""

    __slots__ = ()

    @property  # type: ignore[override]
    def role(self) -> str:
        raise ValueError("role")

    @property  # type: ignore[override]
    def content(self) -> tuple[Text, ...]:
        raise KeyError("content")


def history_json(module, messages, cache=None, options=None):  # noqa: ANN001, ANN201
    """The JSON of the array ``module`` writes for ``messages`` (a cold one is written here)."""
    array = history_module.history_array(
        messages, options or {}, module._message_values, cache, native=module._NATIVE
    )
    return jsonbytes.dumps([array])


@pytest.mark.parametrize("module", [anthropic_encode, chat_encode])
def test_a_message_whose_fields_raise_raises_the_python_encoders_error(module):
    # Each encoder reads role and content in its own order (Anthropic: content first).
    message = object.__new__(RaisingMessage)
    errors = []
    for native in (True, False):
        saved = history_module._speedups
        history_module._speedups = saved if native else None
        try:
            with pytest.raises((ValueError, KeyError)) as raised:
                history_json(module, (message,))
        finally:
            history_module._speedups = saved
        errors.append(type(raised.value))
    assert errors[0] is errors[1]


def unchecked(cls, **fields):  # noqa: ANN001, ANN003, ANN201 - any content class
    """A content value whose fields were set past its checks; a field not given stays unset."""
    value = object.__new__(cls)
    for name, field_value in fields.items():
        object.__setattr__(value, name, field_value)
    return value


def unchecked_message(role: str, *parts: object) -> Message:
    message = Message.user("placeholder")
    object.__setattr__(message, "role", role)
    object.__setattr__(message, "content", parts)
    return message


MODULES = {"anthropic": anthropic_encode, "openai-chat": chat_encode}


def build_error(provider: str, messages: tuple[Message, ...]) -> str:
    """The type of the error writing ``messages`` raises, with and without the C writer."""
    module = MODULES[provider]
    names = []
    for native in (True, False):
        saved = history_module._speedups
        history_module._speedups = saved if native else None
        try:
            with pytest.raises(Exception) as raised:  # noqa: PT011 - the type is compared
                history_json(module, messages)
        finally:
            history_module._speedups = saved
        names.append(type(raised.value).__name__)
    assert names[0] == names[1]
    return names[0]


SURROGATE_ID = "\ud800" * 41  # rewritten by both providers; its rewrite raises (no UTF-8 form)


@pytest.mark.parametrize(
    ("provider", "parts", "error"),
    [
        # _block reads every field (and fails) before wire_id runs
        ("anthropic", [unchecked(ToolCall, id=SURROGATE_ID, name="f")], "AttributeError"),
        # _tool_call runs arguments_json before wire_id
        (
            "openai-chat",
            [unchecked(ToolCall, id=SURROGATE_ID, name="f", arguments=None)],
            "AttributeError",
        ),
        (
            "openai-chat",
            [unchecked(ToolCall, id=SURROGATE_ID, name="f", arguments="{}")],
            "TypeError",
        ),
        # the parts in order: the tool call's error comes before the unreadable text's
        (
            "openai-chat",
            [unchecked(ToolCall, id="c1", name="f", arguments="{}"), unchecked(Text)],
            "TypeError",
        ),
    ],
)
def test_fields_set_past_their_checks_raise_the_python_encoders_error(provider, parts, error):
    assert build_error(provider, (unchecked_message("assistant", *parts),)) == error


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat"])
def test_a_result_whose_text_cannot_be_read_raises_the_python_encoders_error(provider):
    # _tool_message reads utf8_content before wire_id (_block: after; either way one error)
    result = unchecked(ToolResult, call_id=SURROGATE_ID, content=b"r", is_error=False)
    expected = "AttributeError" if provider == "openai-chat" else "UnicodeEncodeError"
    assert build_error(provider, (unchecked_message("tool", result),)) == expected


def test_a_first_index_past_the_largest_index_is_refused():
    messages = (Message.user("a"), Message.user("b"))
    slow = slow_of(anthropic_encode)
    hooks = anthropic_encode._NATIVE.hooks
    with pytest.raises(OverflowError, match="overflows"):
        speedups.anthropic_pieces(messages, sys.maxsize - 1, {}, slow, hooks)
    written = speedups.anthropic_pieces(messages, sys.maxsize - 2, {}, slow, hooks)
    assert written.count(b'"role":"user"') == 2


@pytest.mark.parametrize("key", [1, True, 1.0, Fraction(1)])
def test_carried_data_under_a_key_that_only_equals_an_index_is_dropped_by_every_build(key):
    # The Python cold build looked options up by index (1.0 == 1), the C writer and the cache
    # kept int keys only: the same request gave two bodies.
    messages = (Message.user("a"), Message.assistant("b"), Message.user("c"))
    carry = {key: ('{"type":"thinking","thinking":"t","signature":"s"}',)}
    request = Request(model="m", messages=messages)
    p = get_provider("anthropic")
    bodies = {
        p.build_body(request, carry=carry),
        p.build_body(request, carry=carry, cache=EncodeCache()),
    }
    with pure_python():
        bodies.add(p.build_body(request, carry=carry))
        bodies.add(p.build_body(request, carry=carry, cache=EncodeCache()))
    assert len(bodies) == 1
    assert (b'"thinking":"t"' in bodies.pop()) is isinstance(key, int)


class StrSubclass(str):
    """A ``str`` of the caller's own type."""


class BytesSubclass(bytes):
    """A ``bytes`` of the caller's own type."""


class Unset:
    """A field value that leaves the field unset."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset()
ODD_VALUES = (
    UNSET,
    None,
    0,
    1,
    True,
    1.5,
    (),
    bytearray(b"{}"),
    StrSubclass("c1"),
    BytesSubclass(b"{}"),
    "\ud800",
    "\ud800" * 41,  # over both id limits: its rewrite raises
)
FIELD_TEXTS = (
    "",
    "a",
    "c1",
    "tool",
    "x" * 41,
    "x" * 300,
    "id with space",
    'é"\\\n\x00',
    "\U0001f600",
)
FIELD_BYTES = (b"", b"r", b"{}", b'{"a": 1}', b'\xff"', b"  ", b"[1]", PNG)
FIELDS: dict[type, dict[str, type]] = {
    Text: {"text": str},
    Image: {"mime_type": str, "data": bytes, "_base64": bytes},
    ToolCall: {"id": str, "name": str, "arguments": bytes},
    ToolResult: {
        "call_id": str,
        "tool_name": str,
        "content": bytes,
        "is_error": bool,
        "_valid_utf8": bool,
    },
}


def field_values(kind: type) -> st.SearchStrategy[object]:
    if kind is str:
        valid: st.SearchStrategy[object] = st.sampled_from(FIELD_TEXTS)
    elif kind is bytes:
        valid = st.sampled_from(FIELD_BYTES)
    else:
        valid = st.booleans()
    return st.one_of(valid, valid, st.sampled_from(ODD_VALUES))


# Recipes (plain values hypothesis can show), made into messages inside the test: a content
# value whose fields are unset cannot be shown.
content_recipes = st.one_of(
    st.sampled_from(list(FIELDS)).flatmap(
        lambda cls: st.tuples(
            st.just(cls),
            st.fixed_dictionaries({name: field_values(kind) for name, kind in FIELDS[cls].items()}),
        )
    ),
    st.tuples(st.just(None), st.sampled_from([None, "text", (Text(text="x"),)])),
)
message_recipes = st.tuples(
    st.sampled_from(["user", "assistant", "tool", StrSubclass("tool"), "system", 3, UNSET]),
    st.lists(content_recipes, max_size=3),
    st.booleans(),
)


def odd_message(recipe: tuple[object, list[tuple[type | None, object]], bool]) -> Message:
    """The message of a recipe: role, content values (class and fields), content as a list."""
    role, parts, as_list = recipe
    content = [
        value
        if cls is None
        else unchecked(cls, **{k: v for k, v in value.items() if v is not UNSET})
        for cls, value in parts
    ]
    message = object.__new__(Message)
    if role is not UNSET:
        object.__setattr__(message, "role", role)
    object.__setattr__(message, "content", content if as_list else tuple(content))
    return message


OPTIONS = (None, "5m", "1h", "x", StrSubclass("1h"), (None, ('{"type":"thinking"}',)))
"""A message's encoding options: none, breakpoint TTLs (any other text is 5m), carried data."""


@pytest.mark.full_count
@pytest.mark.parametrize("provider", ["anthropic", "openai-chat"])
@settings(max_examples=examples(full=6000, sample=100), deadline=None)
@given(recipe=message_recipes, option=st.sampled_from(OPTIONS))
def test_any_field_values_give_the_python_encoders_bytes_or_error(provider, recipe, option):
    """Content values set past their checks: the same bytes, or an error of the same type."""
    module = MODULES[provider]
    messages = (Message.user("before"), odd_message(recipe))
    options = {1: option}

    def outcome(native: bool, cache: EncodeCache | None) -> bytes | str:
        saved = history_module._speedups
        history_module._speedups = saved if native else None
        try:
            return history_json(module, messages, cache, options)
        except Exception as exc:  # noqa: BLE001 - the type is compared
            return type(exc).__name__
        finally:
            history_module._speedups = saved

    assert outcome(True, None) == outcome(False, None)
    assert outcome(True, EncodeCache()) == outcome(False, EncodeCache())


@pytest.mark.parametrize("hook", ["wire_id", "arguments"])
@pytest.mark.parametrize("returned", [5, b"{}", StrSubclass("c9"), None])
def test_a_hook_returning_no_exact_str_leaves_the_message_to_the_python_encoder(hook, returned):
    messages = tool_history("needs rewriting!", b"r")
    call = ToolCall(id="needs rewriting!", name="f", arguments=b"no JSON")  # the hook decides
    messages = (messages[0], Message.assistant(call), messages[2])
    seen = []

    def slow(index, message, option):
        seen.append(index)
        return b",{}"

    hooks = hooks_of(anthropic_encode, **{hook: lambda value: returned})
    written = speedups.anthropic_pieces(messages, 0, {}, slow, hooks)
    assert seen == ([1, 2] if hook == "wire_id" else [1])
    assert written.count(b",{}") == len(seen)


class BytesPiece(bytes):
    """A piece of a ``bytes`` subclass."""


@pytest.mark.parametrize("piece", [BytesPiece(b",{}"), bytearray(b",{}"), memoryview(b",{}")])
def test_a_piece_from_the_python_encoder_must_be_bytes(piece):
    messages = (Message.user("a"),)
    carried = {0: (None, ('{"type":"thinking"}',))}  # carried data: the Python encoder writes it
    hooks = anthropic_encode._NATIVE.hooks
    if isinstance(piece, bytes):
        assert (
            speedups.anthropic_pieces(messages, 0, carried, lambda i, m, o: piece, hooks) == b",{}"
        )
    else:
        with pytest.raises(TypeError, match="not bytes"):
            speedups.anthropic_pieces(messages, 0, carried, lambda i, m, o: piece, hooks)


class ContentRaises(Message):
    """A message whose content raises ``KeyError`` when read."""

    __slots__ = ()

    @property  # type: ignore[override]
    def content(self) -> tuple[Text, ...]:
        raise KeyError("content")


class RoleRaises(Message):
    """A message whose role raises ``ValueError`` when read."""

    __slots__ = ()

    @property  # type: ignore[override]
    def role(self) -> str:
        raise ValueError("role")


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat"])
def test_a_field_the_c_check_cannot_read_leaves_the_checks_to_python(provider):
    # validate_pairing reads no user message's content: the later role's error is its error.
    first = object.__new__(ContentRaises)
    object.__setattr__(first, "role", "user")
    second = object.__new__(RoleRaises)
    object.__setattr__(second, "content", (Text(text="x"),))
    request = Request(model="m", messages=(first, second))
    for native in (True, False):
        saved = history_module._speedups
        history_module._speedups = saved if native else None
        try:
            with pytest.raises(ValueError, match="role"):
                get_provider(provider).build_body(request)
        finally:
            history_module._speedups = saved


@pytest.mark.parametrize("mode", ["breakpoints", "automatic"])
def test_openrouter_messages_without_a_marker_are_written_in_c(monkeypatch, mode):
    from llmcore.providers import openrouter

    written_in_python = []
    python_values = openrouter._message_values

    def counted(index, message, option):
        written_in_python.append(index)
        return python_values(index, message, option)

    monkeypatch.setattr(openrouter, "_message_values", counted)
    messages = (*tool_history("c1", b"r"), Message.assistant("done"), Message.user("next"))
    request = Request(
        model="anthropic/claude-sonnet-4.5", messages=messages, params=Params(cache_mode=mode)
    )
    built = get_provider("openrouter").build_body(request)
    marked = [2, 4] if mode == "breakpoints" else []  # before the last assistant; the newest
    assert written_in_python == marked
    with pure_python():
        assert built == get_provider("openrouter").build_body(request)
    assert built.count(b"cache_control") == (2 if mode == "breakpoints" else 1)


def test_converse_runs_and_cache_points_are_written_as_python_writes_them():
    messages = (
        Message.user("go"),
        Message.assistant(ToolCall(id="c1", name="f", arguments=b"{}")),
        Message.tool(ToolResult(call_id="c1", tool_name="f", content=b"r")),
        Message.user(Image(data=PNG, mime_type="image/png"), "see"),
        Message.assistant("ok"),
        Message.user(Image(data=b"RIFF\x00\x00\x00\x00WEBP", mime_type="image/webp")),
    )
    for params in (Params(), Params(cache_ttl="1h"), Params(cache_mode="automatic")):
        request = Request(model="us.anthropic.claude-sonnet-4-5", messages=messages, params=params)
        built = get_provider("bedrock-converse").build_body(request)
        with pure_python():
            assert built == get_provider("bedrock-converse").build_body(request)
        assert built.count(b'"role":"user"') == 3
