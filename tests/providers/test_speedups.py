"""The C writer of the history's pieces (``llmcore.providers._speedups``) against the Python one.

Every body built with the extension must be the body built without it, byte for byte (SPEC P2):
the Python encoders are the reference, and the C writer hands them every message it does not
write itself.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore import jsonbytes
from llmcore.errors import InvalidRequestError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import get_provider
from llmcore.providers import history as history_module
from llmcore.providers.anthropic import encode as anthropic_encode
from llmcore.providers.history import EncodeCache
from llmcore.providers.openai_chat import encode as chat_encode
from llmcore.request import Params, Request
from tests.examples import examples
from tests.strategies import conversations

speedups = history_module._speedups
PROVIDERS = ("anthropic", "openai-chat", "openai-responses", "openrouter")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))


def test_the_extension_is_built_in_this_checkout():
    # .ci/run installs with a compiler, so the suite runs the C writer; without one llmcore
    # installs and writes every piece in Python (test_jsonbytes runs a build without it).
    assert speedups is not None
    assert anthropic_encode._NATIVE.function == "anthropic_pieces"
    assert chat_encode._NATIVE.function == "chat_pieces"


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
@settings(max_examples=examples(full=600, sample=50), deadline=None)
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


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat"])
@pytest.mark.parametrize(
    ("call_id", "result", "is_error"),
    [
        ("toolu_01", b"plain", False),
        ("id with space/\u00ef", b'x\xff"\\\x01', True),  # rewritten id, invalid UTF-8
        ("c" * 300, b"", True),  # over both limits; an empty error result
        ("c" * 41, b"", False),  # over Chat's limit only; an empty result
        ("", b"\n" * 40, False),  # an empty id is rewritten by both
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
@pytest.mark.parametrize("provider", ["anthropic", "openai-chat"])
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


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat"])
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


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat"])
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
@settings(max_examples=examples(full=5000, sample=200))
@given(json_texts())
def test_arguments_c_sends_verbatim_are_json_objects_by_the_python_rule(data):
    if speedups.is_object(data):
        assert jsonbytes.is_json_object(data)


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=80))
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
@settings(max_examples=examples(full=10000, sample=300))
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
@settings(max_examples=40, deadline=None)
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
