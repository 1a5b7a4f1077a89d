"""The fast cassette reader equals PyYAML's safe load, or hands the file to PyYAML.

Generated cassettes are serialized as vcrpy does (``yaml.dump(data, Dumper=CDumper)``), and
with other writers' styles (literal and folded block scalars, quoted scalars, raw Unicode);
every YAML file under ``tests/`` and ``cassettes/`` is checked too.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.audit import _vcr_lines, _vcr_yaml
from llmcore.audit._cassette import _interaction_lines
from tests.examples import examples

ROOT = Path(__file__).resolve().parents[2]

# Characters that take every path of the emitter and the reader: escapes, quotes, indicators,
# line breaks of every kind, tabs, astral and private-use characters, a BOM.
_SPECIAL = "\n\t\r \\'\"#:-?&*!|>%@`{}[],\x00\x07\x1b\x7f\x85\xa0\u2028\u2029\ufeff\U0001f600é"
_TEXT = st.text(
    alphabet=st.one_of(st.sampled_from(_SPECIAL), st.characters(codec="utf-8")), max_size=40
)
_LONG = st.lists(st.sampled_from(["word", " ", "  ", "\n", "\n\n", "'", '"', "é", "x" * 30]))


def _strings() -> st.SearchStrategy[str]:
    return st.one_of(
        _TEXT, _LONG.map("".join), st.sampled_from(["", " ", "\n", "null", "1", "0o7"])
    )


def _scalars() -> st.SearchStrategy[Any]:
    return st.one_of(
        _strings(),
        st.none(),
        st.booleans(),
        st.integers(-(10**20), 10**20),
        st.floats(allow_nan=False, allow_infinity=False),
    )


_NAMES = _TEXT.filter(lambda s: not any(c in s for c in "\n\r\x85\u2028\u2029"))
"""Header names: a multi-line key is written as a complex key (``? …``), which falls back."""
_HEADERS = st.dictionaries(_NAMES, st.lists(_scalars(), max_size=3), max_size=4)
_REQUEST = st.fixed_dictionaries(
    {
        "body": st.one_of(_strings(), st.none(), st.builds(lambda s: {"string": s}, _strings())),
        "headers": _HEADERS,
        "method": st.sampled_from(["POST", "GET"]),
        "uri": _strings(),
    }
)
_RESPONSE = st.fixed_dictionaries(
    {
        "body": st.builds(lambda s: {"string": s}, _strings()),
        "headers": _HEADERS,
        "status": st.fixed_dictionaries({"code": st.integers(100, 599), "message": _strings()}),
    }
)
_CASSETTES = st.fixed_dictionaries(
    {
        "interactions": st.lists(
            st.fixed_dictionaries({"request": _REQUEST, "response": _RESPONSE}), max_size=3
        ),
        "version": st.just(1),
    }
)


def _dumper(style: str | None) -> type[yaml.Dumper]:
    class Styled(yaml.Dumper):
        pass

    def text(dumper: yaml.Dumper, data: str) -> yaml.Node:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    Styled.add_representer(str, text)
    return Styled


def _pyyaml(data: bytes) -> tuple[Any, list[int]]:
    doc = yaml.load(data, Loader=yaml.CSafeLoader)
    return doc, _interaction_lines(yaml.compose(data, Loader=yaml.CSafeLoader))


def _line_loop(data: bytes) -> tuple[Any, list[int]] | None:
    """The line loop's own result (``None`` when it gives up), without the recursive reader."""
    text = _vcr_yaml.checked_text(data)
    if text is None:
        return None
    try:
        return _vcr_lines.read(_vcr_yaml._Reader(text))
    except (_vcr_lines.Fallback, IndexError, ValueError, RecursionError):
        return None


def _without_skipped_headers(doc: Any, read: Any) -> Any:
    """``doc`` less each interaction's ``response.headers`` that ``read`` left out, and with
    only the ``Content-Type`` entries of the ``request.headers`` it did not read whole."""
    doc = copy.deepcopy(doc)
    items = doc.get("interactions") if isinstance(doc, dict) else None
    for index, item in enumerate(items if isinstance(items, list) else []):
        response = item.get("response") if isinstance(item, dict) else None
        if isinstance(response, dict) and "headers" in response:
            if "headers" not in read["interactions"][index]["response"]:
                del response["headers"]
        request = item.get("request") if isinstance(item, dict) else None
        if isinstance(request, dict) and isinstance(request.get("headers"), dict):
            if read["interactions"][index]["request"]["headers"] != request["headers"]:
                request["headers"] = {
                    key: value
                    for key, value in request["headers"].items()
                    if isinstance(key, str) and key.lower() == "content-type"
                }
    return doc


def _check(data: bytes) -> bool:
    """Assert each reader equals PyYAML or falls back; return whether the file was read.

    Checked apart: the line loop, the recursive reader, and the two together (:func:`load`);
    with the response headers skipped, the document is PyYAML's less those headers.
    """
    got = _vcr_yaml.load(data)
    results = [got, _vcr_yaml.load(data, lines=False), _line_loop(data)]
    if all(one is None for one in results):
        return False
    doc, lines = _pyyaml(data)
    for one in results:
        if one is not None:
            assert one[0] == doc
            assert repr(one[0]) == repr(doc)  # key order, and -0.0 against 0.0
            assert one[1] == lines
    skipped = _vcr_yaml.load(data, skip_response_headers=True)
    assert (skipped is None) == (got is None)
    if skipped is not None:
        assert repr(skipped[0]) == repr(_without_skipped_headers(doc, skipped[0]))
        assert skipped[1] == lines
    for flagged in (
        _vcr_yaml.load_flagged(data),
        _vcr_yaml.load_flagged(data, lines=False),
        _vcr_yaml.load_flagged(data, skip_response_headers=True),
    ):
        if flagged is not None:  # "no float built" holds of PyYAML's whole document
            assert not flagged[2] or not _holds_float(doc)
    return got is not None


def _holds_float(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_float(one) for one in value.values())
    if isinstance(value, list):
        return any(_holds_float(one) for one in value)
    return isinstance(value, float)


def test_the_float_flag_says_whether_a_float_was_built() -> None:
    text = b"interactions:\n- request:\n    body: 1.5\n- request:\n    body: 2\n"
    assert _vcr_yaml.load_flagged(text) == (
        {"interactions": [{"request": {"body": 1.5}}, {"request": {"body": 2}}]},
        [2, 4],
        False,
    )
    assert _vcr_yaml.load_flagged(text.replace(b"1.5", b"'1.5'"), lines=False) == (
        {"interactions": [{"request": {"body": "1.5"}}, {"request": {"body": 2}}]},
        [2, 4],
        True,
    )


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=60), deadline=None)
@given(_CASSETTES)
def test_vcrpy_serializer_output_is_read_as_pyyaml_reads_it(cassette: dict[str, Any]) -> None:
    """vcrpy's own serializer output (CDumper, no other option) never falls back."""
    data = yaml.dump(cassette, Dumper=yaml.CDumper).encode("utf-8")
    assert _check(data)
    assert _line_loop(data) is not None


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=60), deadline=None)
@given(
    _CASSETTES,
    st.sampled_from([None, "|", ">", "'", '"']),
    st.booleans(),
    st.sampled_from([80, 20, 200]),
)
def test_other_writers_styles_equal_pyyaml_or_fall_back(
    cassette: dict[str, Any], style: str | None, unicode: bool, width: int
) -> None:
    """Block scalars (keep/strip/clip), quoted styles, raw Unicode, other widths."""
    text = yaml.dump(cassette, Dumper=_dumper(style), allow_unicode=unicode, width=width)
    _check(text.encode("utf-8"))


@pytest.mark.parametrize(
    "text",
    [
        "a: |-\n  x\n\n  y  \n\nb: 1\n",
        "a: |+\n  x\n\n\nb: 1\n",
        "a: >\n  x\n  y\n\n   z\n  w\nb: -0.0\n",
        "a: >-\n  x\n\n\n  y\n",
        "a: \"x\\\n  \\ y \\\n\n  z\"\nb: 'q''\n\n   r '\n",
        "a: plain words\n  folded over\n\n  lines\nb: [x]\n",
        "interactions:\n- request:\n    body: x\n- 'k': 1\n  k2: '2'\n",
        "a: yes\nb: ~\nc: 0x1F\n",
        "a: !!binary |\n  aGVsbG8=\nb: 1\n...\n",
    ],
)
def test_shapes_beyond_vcrpy_equal_pyyaml_or_fall_back(text: str) -> None:
    data = text.encode()
    read = _check(data)
    assert read == ("[x]" not in text and "0x1F" not in text)


def test_what_the_reader_hands_to_pyyaml() -> None:
    """Aliases, tags, flow collections, comments, bad escapes, tabs: always PyYAML's."""
    for text in [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: {b: 1}\n",
        "# c\na: 1\n",
        'a: "\\q"\n',
        'a: "\\ud800"\n',
        "a:\t1\n",
        "a: 2024-01-01\n",
        "a: 1\n---\nb: 2\n",
        "a: 1",
        "a: 012\n",
    ]:
        assert _vcr_yaml.load(text.encode()) is None, text


# Real files the reader hands to PyYAML, and why (everything else is read, and equal).
_FALLBACKS = {
    "cassettes/anthropic-tool-turn.yaml": "a comment line",
    "cassettes/openai-chat-tool-turn.yaml": "a comment line",
    "tests/real_traffic/pydantic-ai/tests/cassettes/test_code_execution_files_vcr/"
    "test_anthropic_code_execution_files_cache_prefix_stable[messages-sonnet-4-6].yaml": (
        "a block scalar with an indentation indicator (|2)"
    ),
    "tests/real_traffic/pydantic-ai/tests/models/cassettes/test_bedrock/"
    "test_bedrock_model_structured_output.yaml": "a block scalar with an indentation indicator",
}


def _real_files() -> list[str]:
    found = [
        p.relative_to(ROOT).as_posix()
        for base in ("tests", "cassettes")
        for p in (ROOT / base).rglob("*")
        if p.suffix in (".yaml", ".yml") and p.is_file()
    ]
    return sorted(found)


def test_every_real_cassette_equals_pyyaml_or_is_a_recorded_fallback() -> None:
    files = _real_files()
    assert len(files) > 150
    fell_back = {name for name in files if not _check((ROOT / name).read_bytes())}
    assert fell_back == set(_FALLBACKS)


@pytest.mark.parametrize(
    "text",
    [
        "a:\n- x\n- y\nb: 1\n",
        "a:\n  - x\n  - y\nb:\n",
        "a:\n  b:\n  - c: 1\n    d:\n    - 2\n  e: {}\n",
        "interactions:\n-   request: 1\n    x: 2\n- 'y'\n",
        "interactions: 1\ninteractions:\n- a\n",
        "a:\n  b: 1\n c: 2\n",
        "a:\n  - x\n - y\n",
        "a:\n- x\n  b: 1\n",
        "a: 1\n  b: 2\n",
        "- a\n",
        "a:\n    - x\n  - y\n",
        "a:\n  b: 1\n\n\n  c: 'x'\n",
        "a: x\n\n  y\n",
        "a: x\n   y: z\n",
        "a:\n- b:\n  - c\n- d\n",
        "a: b\na: c\n",
        "a:\n- - x\n",
        "a:\n- \n",
        "a: 'x' y\n",
        'a: "x"\n  b: 1\n',
        "a:\n  b: x\n   y:  \n",
    ],
)
def test_block_structure_equals_pyyaml_or_falls_back(text: str) -> None:
    """Indentless and indented sequences, item mappings, dedents, and what PyYAML refuses."""
    data = text.encode()
    try:
        _pyyaml(data)
    except yaml.YAMLError:
        assert _vcr_yaml.load(data) is None
        assert _vcr_yaml.load(data, lines=False) is None
        assert _line_loop(data) is None
        return
    _check(data)


_HEADER_TEXT = st.text(alphabet=st.sampled_from(list("aZx0b9e-:#'\" .T_/(\n!&*{[")), max_size=12)
_HEADER_LINES = st.lists(
    st.tuples(
        st.sampled_from(["x-id", "Date", "on", "null", "a.b/c", "Content-Type", "content-TYPE"]),
        st.lists(_HEADER_TEXT, max_size=3),
    ),
    min_size=1,
    max_size=4,
)


def _header_cassette(headers: list[tuple[str, list[str]]], raw: bool) -> bytes:
    """A cassette whose response headers are written as given (raw: no quoting or escaping)."""
    lines = []
    for name, values in headers:
        if len(values) == 1 and raw:
            lines.append(f"      {name}: {values[0]}")
            continue
        lines.append(f"      {name}:")
        lines.extend(f"      - {value}".replace("\n", "\n        ") for value in values)
    block = "\n".join(lines)
    return (
        f"interactions:\n- request:\n    body: x\n    headers:\n{block}\n    method: POST\n"
        f"  response:\n    headers:\n{block}\n    status:\n      code: 200\nversion: 1\n"
    ).encode()


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=100), deadline=None)
@given(_HEADER_LINES)
def test_skipped_response_headers_are_headers_pyyaml_reads(
    headers: list[tuple[str, list[str]]],
) -> None:
    """Header lines written raw (any text, unquoted): skipped only where PyYAML reads them."""
    data = _header_cassette(headers, raw=True)
    skipped = _vcr_yaml.load(data, skip_response_headers=True)
    whole = _vcr_yaml.load(data)
    if skipped is None or (whole is not None and repr(whole) == repr(skipped)):
        return  # nothing skipped: the other tests compare what is read
    doc, lines = _pyyaml(data)  # PyYAML reads the file: no error left unreported
    assert repr(skipped[0]) == repr(_without_skipped_headers(doc, skipped[0]))
    assert skipped[1] == lines


def test_vcrpy_headers_are_skipped() -> None:
    """The headers of every real cassette's responses are skipped (none is read), and most
    requests' are only their Content-Type."""
    requests = only_content_type = 0
    for name in _real_files():
        got = _vcr_yaml.load((ROOT / name).read_bytes(), skip_response_headers=True)
        items = got[0].get("interactions") if got is not None else None
        for item in items if isinstance(items, list) else []:
            response = item.get("response") if isinstance(item, dict) else None
            assert not (isinstance(response, dict) and "headers" in response), name
            headers = item.get("request", {}).get("headers") if isinstance(item, dict) else None
            if isinstance(headers, dict):
                requests += 1
                only_content_type += all(k.lower() == "content-type" for k in headers)
    assert requests > 300 and only_content_type > 0.7 * requests


def _checked_by_search(data: bytes) -> str | None:
    """:func:`_vcr_yaml.checked_text` as a search of ``_REFUSED`` in the decoded text."""
    if data.endswith(b"\n...\n"):
        data = data[:-4]
    if not data.endswith(b"\n") or data.startswith((b"---", b"...", b"%")):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _vcr_yaml._REFUSED.search(text) is not None:
        return None
    return None if any(m in text for m in ("\n---", "\n...", "\n%")) else text


_RAW = st.one_of(
    st.binary(max_size=30),
    st.text(
        alphabet=st.one_of(
            st.sampled_from(_SPECIAL + "\u2027\u202a\ufffd\ufffe\uffff\x9f\xa0"), st.characters()
        ),
        max_size=30,
    ).map(lambda s: s.encode("utf-8", "surrogatepass")),
)


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=200), deadline=None)
@given(_RAW, st.sampled_from([b"", b"\n", b"\n...\n", b"a: 1\n"]))
def test_characters_are_checked_in_the_bytes_as_in_the_text(raw: bytes, tail: bytes) -> None:
    data = b"a: " + raw + tail
    assert _vcr_yaml.checked_text(data) == _checked_by_search(data)


def test_plain_scalars_starting_with_a_letter_resolve_only_as_words() -> None:
    """PyYAML resolves a plain scalar that starts with a letter only to a boolean or null."""
    resolvers = yaml.resolver.Resolver.yaml_implicit_resolvers
    letters = {key for key in resolvers if key and key.isalpha()}
    assert letters == _vcr_lines._WORDY
    for letter in letters:
        assert {tag.rsplit(":", 1)[-1] for tag, _ in resolvers[letter]} <= {"bool", "null"}
    for word in _vcr_lines._WORDS:
        assert not isinstance(yaml.safe_load(f"a: {word}\n")["a"], str)


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=200), deadline=None)
@given(
    st.sampled_from(sorted(_vcr_lines._WORDY)),
    st.text(alphabet="aeflnorstuyEFLNORSTUY", max_size=5),
)
def test_words_are_the_only_letter_plains_pyyaml_resolves(first: str, rest: str) -> None:
    value = first + rest
    resolved = yaml.safe_load(f"a: {value}\n")["a"]
    assert isinstance(resolved, str) == (value not in _vcr_lines._WORDS)


def _folded_by_substitution(content: str) -> str:
    """YAML 1.1 §7.3.2 as three substitutions: trim the spaces around each line break, then
    one break alone is a space and a run of ``n`` breaks is ``n - 1``; ``''`` is a quote."""
    if "\n" in content:
        content = re.sub(r" *\n *", "\n", content)
        content = re.sub(r"(?<!\n)\n(?!\n)", " ", content)
        content = re.sub(r"\n(\n+)", r"\1", content)
    return content.replace("''", "'")


@pytest.mark.full_count
@settings(max_examples=examples(full=5000, sample=500), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("a \n'é")), max_size=30))
def test_single_quoted_folding_is_the_substitutions(content: str) -> None:
    """The one-pass fold of a single-quoted scalar's lines equals the rule as substitutions."""
    assert _vcr_yaml._fold_single(content) == _folded_by_substitution(content)


_NESTED = st.recursive(
    _scalars(),
    lambda kids: st.one_of(
        st.lists(kids, max_size=3),
        st.dictionaries(st.sampled_from(["text", "type", "a b", "on", "x"]), kids, max_size=3),
    ),
    max_leaves=8,
)
_MESSAGES = st.lists(
    st.dictionaries(st.sampled_from(["role", "content", "parts"]), _NESTED, min_size=1),
    min_size=1,
    max_size=3,
)


def _conversation(pool: list[Any], picks: list[int]) -> dict[str, Any]:
    """A cassette whose requests resend the turns before them (items from ``pool``)."""
    turns = [copy.deepcopy(pool[n % len(pool)]) for n in picks]  # no aliases: distinct objects
    return {
        "interactions": [
            {"request": {"parsed_body": {"messages": copy.deepcopy(turns[:k]), "n": k}}}
            for k in range(len(turns) + 1)
        ],
        "version": 1,
    }


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=100), deadline=None)
@given(
    _MESSAGES,
    st.lists(st.integers(0, 2), max_size=6),
    st.sampled_from([None, "|", ">", "'", '"']),
    st.sampled_from([80, 20]),
)
def test_repeated_items_equal_pyyaml(
    pool: list[Any], picks: list[int], style: str | None, width: int
) -> None:
    """Sequence items whose text recurs (a conversation's earlier turns, resent) are read as
    PyYAML reads them, whatever scalars end them and whatever lines follow them."""
    text = yaml.dump(_conversation(pool, picks), Dumper=_dumper(style), width=width)
    _check(text.encode("utf-8"))


def test_a_repeated_item_is_read_once() -> None:
    """The second of two equal item texts is the first's value (its lines are not read)."""
    item = "  - role: user\n    content:\n    - text: 'a\n        b'\n      type: text\n"
    text = f"a:\n{item}b:\n{item}  - last\nc:\n{item}d: 1\n"
    doc, _ = _vcr_lines.read(_vcr_yaml._Reader(text))
    assert doc == yaml.load(text, Loader=yaml.CSafeLoader)
    assert doc["a"][0] is doc["b"][0] is doc["c"][0]
    assert doc["b"][1] == "last"


@pytest.mark.full_count
@settings(max_examples=examples(full=2000, sample=200), deadline=None)
@given(st.text(alphabet="0123456789", min_size=1, max_size=90))
def test_digit_plains_resolve_as_pyyaml_resolves_them(digits: str) -> None:
    """A plain scalar of ASCII digits is PyYAML's int, or left to PyYAML (octal, too long)."""
    try:
        got = _vcr_yaml._plain(digits)
    except _vcr_lines.Fallback:
        assert digits[0] == "0" or len(digits) > 81
        return
    want = yaml.load(f"a: {digits}\n", Loader=yaml.CSafeLoader)["a"]
    assert (type(got), got) == (type(want), want)
