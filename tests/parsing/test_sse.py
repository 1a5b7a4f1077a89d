"""The shared SSE reader and the JSON span finder."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.errors import ResponseParseError
from llmcore.providers._jsonspan import find_span
from llmcore.providers._sse import SSEEvent, SSEReader, iter_events

STREAM = (
    "\ufeff: a comment\r\n"
    "event: first\r\n"
    "data: line one\r\n"
    "data:line two\r\n"
    "id: 7\r\n"
    "\r\n"
    "data: no event name\r"
    "\r"
    "event: ignored-without-data\n"
    "\n"
    "event: é\n"
    "data:  two spaces keep one\n"
    "\n"
).encode()

EXPECTED = [
    SSEEvent(event="first", data="line one\nline two", id="7"),
    SSEEvent(event="message", data="no event name", id="7"),
    SSEEvent(event="é", data=" two spaces keep one", id="7"),
]


@pytest.mark.parametrize("size", [1, 2, 3, 5, 64, 10_000])
def test_events_are_the_same_for_any_chunking(size: int) -> None:
    chunks = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    assert list(iter_events(chunks, "p")) == EXPECTED


def test_stream_ending_inside_an_event_is_reported() -> None:
    reader = SSEReader("p")
    assert reader.feed(b"data: x\n") == []
    with pytest.raises(ResponseParseError, match="truncated"):
        reader.close()


def test_stream_ending_mid_line_is_reported() -> None:
    with pytest.raises(ResponseParseError, match="truncated"):
        list(iter_events([b'data: {"a":'], "p"))


def test_non_utf8_is_reported() -> None:
    with pytest.raises(ResponseParseError, match="not UTF-8"):
        list(iter_events([b"data: \xff\n\n"], "p"))
    with pytest.raises(ResponseParseError, match="UTF-8 sequence"):
        list(iter_events([b"data: x\n\n\xc3"], "p"))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(st.text(max_size=6), json_values, min_size=1, max_size=5),
    st.booleans(),
    st.booleans(),
)
def test_span_of_every_key_is_its_value_text(obj: dict, ascii_only: bool, spaced: bool) -> None:
    separators = (", ", ": ") if spaced else (",", ":")
    data = json.dumps({"wrap": [0, obj]}, ensure_ascii=ascii_only, separators=separators).encode()
    for key, value in obj.items():
        begin, end = find_span(data, ("wrap", 1, key))
        assert json.loads(data[begin:end]) == value
    begin, end = find_span(data, ("wrap", 1))
    assert json.loads(data[begin:end]) == obj


def test_span_keeps_bytes_as_received_and_last_duplicate_wins() -> None:
    data = b'{"a" : {"x":1} , "a":  [1,\n 2.50, "\\"]"] }'
    assert data[slice(*find_span(data, ("a",)))] == b'[1,\n 2.50, "\\"]"]'
    with pytest.raises(KeyError):
        find_span(data, ("b",))
