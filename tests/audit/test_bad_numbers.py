"""Numbers Python cannot hold, and times that are not times, in ``llmcore audit`` input (issue 8 item 6).

SPEC V1: a huge integer (over 4,300 digits) or a ``recorded_at`` too large for a float gives one
line and exit 2; exit 1 means "break found" and nothing else. Each case here once gave a
traceback (exit 1) or was accepted silently (``recorded_at: .inf``).
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import llmcore.cli.audit as cli_audit
from llmcore.cli.audit import (
    EXIT_BREAK,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_STABLE,
    audit_command,
)
from tests.audit.test_bad_input import CASSETTE_HEAD, _run
from tests.audit.test_bad_input import _refused as _refused_one_line

BODY = '{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}'
HEAD = CASSETTE_HEAD
HUGE = "7" * 5000
LONG = "1" + "0" * 400
TOO_LONG = "an integer of 5000 digits is longer than the 4300 digits Python reads"


def _refused(path: Path) -> str:
    err = _refused_one_line(path)
    assert "internal error" not in err
    return err


def _cassette(tmp_path: Path, extra: str = "", body: str = BODY, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(HEAD + f"    body: '{body}'\n" + extra)
    return path


# --- recorded_at -----------------------------------------------------------------------------


def test_a_recorded_at_too_large_for_a_float_is_refused(tmp_path: Path) -> None:
    path = _cassette(tmp_path, f"  recorded_at: {LONG}\n")
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0]: recorded_at an integer of 401 digits "
        "is not a time in the years 1 to 9999 (seconds since 1970)"
    )


@pytest.mark.parametrize("where", ["  recorded_at", "    recorded_at"])
def test_a_recorded_at_of_5000_digits_is_refused_by_path(tmp_path: Path, where: str) -> None:
    path = _cassette(tmp_path, f"{where}: {HUGE}\n")
    field = "recorded_at" if where == "  recorded_at" else "request.recorded_at"
    assert _refused(path) == f"llmcore: {path}:2: interactions[0].{field}: {TOO_LONG}"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (".inf", "inf"),
        ("-.inf", "-inf"),
        (".nan", "nan"),
        (".NaN", "nan"),
        ("1.0e+400", "inf"),
        ("1.0e+300", "1e+300"),
        ("-1.0e+20", "-1e+20"),
        ("253402300800", "253402300800"),  # one second after 9999-12-31T23:59:59Z
        ("-62135596801", "-62135596801"),  # one second before 0001-01-01T00:00:00Z
    ],
)
def test_a_recorded_at_that_is_not_a_finite_time_is_refused(
    tmp_path: Path, value: str, shown: str
) -> None:
    path = _cassette(tmp_path, f"  recorded_at: {value}\n")
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0]: recorded_at {shown} is not a time in the years 1 "
        "to 9999 (seconds since 1970)"
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("2024-13-45", "cannot read '2024-13-45' as !!timestamp: month must be in 1..12"),
        (
            "2001-12-14t21:59:43.10-99:00",
            "cannot read '2001-12-14t21:59:43.10-99:00' as !!timestamp: offset must be",
        ),
        ("!!timestamp nope", "cannot read 'nope' as !!timestamp: not a valid !!timestamp value"),
        ("!!int abc", "cannot read 'abc' as !!int: invalid literal for int()"),
        ("!!float abc", "cannot read 'abc' as !!float: could not convert string to float"),
    ],
)
def test_a_yaml_value_python_cannot_hold_is_refused_by_path(
    tmp_path: Path, value: str, problem: str
) -> None:
    path = _cassette(tmp_path, f"  recorded_at: {value}\n")
    assert _refused(path).startswith(f"llmcore: {path}:2: interactions[0].recorded_at: {problem}")


@pytest.mark.parametrize(
    "value",
    [
        "1700000000",
        "1700000000.5",
        "253402300799",
        "-62135596800",
        "2024-01-01T00:00:00Z",
        "2024-01-01 00:00:00",
        "'2024-01-01T00:00:00+01:00'",
        "'9999-12-31T23:59:59-23:59'",
        "0001-01-01T00:00:00+05:00",
    ],
)
def test_finite_times_in_range_are_still_read(tmp_path: Path, value: str) -> None:
    path = _cassette(tmp_path, f"  recorded_at: {value}\n")
    code, _out, err = _run(path)
    assert (code, err) == (EXIT_STABLE, "")


def test_the_line_is_the_interactions_and_the_index_is_right(tmp_path: Path) -> None:
    second = HEAD.removeprefix("interactions:\n") + f"    body: '{BODY}'\n  recorded_at: {HUGE}\n"
    path = _cassette(tmp_path, "  recorded_at: 1700000000\n" + second)
    assert _refused(path) == f"llmcore: {path}:7: interactions[1].recorded_at: {TOO_LONG}"


def test_a_huge_integer_outside_the_interactions_names_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + f"    body: '{BODY}'\nversion: {HUGE}\n")
    assert _refused(path) == f"llmcore: {path}:6: version: {TOO_LONG}"


# --- YAML integers without a digit limit (hex, octal, binary) ---------------------------------

# PyYAML reads 0x…, 0… (YAML 1.1 octal) and 0b… with int(text, base), which has no digit limit
# for these bases; str() or repr() of the result then raised ValueError (an internal error).
BASES = [
    pytest.param("0x" + "f" * 5000, "an integer of 6021 digits", id="hex"),
    pytest.param("-0x" + "f" * 5000, "a negative integer of 6021 digits", id="negative-hex"),
    pytest.param("0" + "7" * 5000, "an integer of 4516 digits", id="octal"),
    pytest.param("0b" + "1" * 20000, "an integer of 6021 digits", id="binary"),
    pytest.param("0x" + "f" * 33, "an integer of 40 digits", id="hex-129-bits"),
]


@pytest.mark.parametrize(("value", "size"), BASES)
def test_a_huge_yaml_integer_as_recorded_at_is_named_by_size(
    tmp_path: Path, value: str, size: str
) -> None:
    path = _cassette(tmp_path, f"  recorded_at: {value}\n")
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0]: recorded_at {size} is not a time in the years 1 "
        "to 9999 (seconds since 1970)"
    )


@pytest.mark.parametrize(("value", "size"), BASES)
@pytest.mark.parametrize("key", ["method", "uri"])
def test_a_huge_yaml_integer_as_method_or_uri_is_named_by_size(
    tmp_path: Path, key: str, value: str, size: str
) -> None:
    request = {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", key: value}
    path = tmp_path / "c.yaml"
    path.write_text(
        f"interactions:\n- request:\n    method: {request['method']}\n    uri: {request['uri']}\n"
        f"    body: '{BODY}'\n"
    )
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0].request.{key}: request {key} is {size}, not a string"
    )


@pytest.mark.parametrize(("value", "size"), BASES)
def test_a_huge_yaml_integer_as_body_is_named_by_size(
    tmp_path: Path, value: str, size: str
) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(HEAD + f"    body: {value}\n")
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0].request.body: request body is {size}, not the "
        "string that was sent"
    )


@pytest.mark.parametrize("key", ["method", "uri", "body"])
def test_a_decimal_integer_of_5000_digits_anywhere_is_refused_by_path(
    tmp_path: Path, key: str
) -> None:
    fields = {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", "body": "'{}'"}
    fields[key] = HUGE
    path = tmp_path / "c.yaml"
    path.write_text(
        "interactions:\n- request:\n"
        + "".join(f"    {name}: {text}\n" for name, text in fields.items())
    )
    assert _refused(path) == f"llmcore: {path}:2: interactions[0].request.{key}: {TOO_LONG}"


def test_a_small_integer_method_is_shown_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "interactions:\n- request:\n    method: 0x1F\n"
        f"    uri: https://api.anthropic.com/v1/messages\n    body: '{BODY}'\n"
    )
    assert _refused(path).endswith("request.method: request method is 31, not a string")


def test_a_huge_hex_integer_in_parsed_body_is_refused_by_size(tmp_path: Path) -> None:
    path = tmp_path / "pb.yaml"
    path.write_text(
        HEAD + "    parsed_body:\n      model: claude-sonnet-4-5\n"
        f"      max_tokens: 0x{'f' * 5000}\n      messages: [{{role: user, content: hi}}]\n"
    )
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0].request.parsed_body: parsed_body is not JSON: an "
        "integer of 6021 digits is longer than the 4300 digits Python writes"
    )


# --- huge integers in bodies -----------------------------------------------------------------


def test_a_huge_integer_in_a_cassette_body_names_the_interaction_line(tmp_path: Path) -> None:
    path = _cassette(tmp_path, body=BODY.replace("10", HUGE))
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0]: request body cannot be read: {TOO_LONG} at byte 42"
    )


def test_a_body_error_in_a_later_interaction_names_its_line(tmp_path: Path) -> None:
    second = HEAD.removeprefix("interactions:\n") + f"    body: '{BODY.replace('10', HUGE)}'\n"
    path = _cassette(tmp_path, second)
    assert _refused(path).startswith(
        f"llmcore: {path}:6: interactions[1]: request body cannot be read"
    )


def test_a_huge_integer_in_parsed_body_is_refused_by_path(tmp_path: Path) -> None:
    path = tmp_path / "pb.yaml"
    path.write_text(
        HEAD + f"    parsed_body:\n      model: claude-sonnet-4-5\n      max_tokens: {HUGE}\n"
        "      messages: [{role: user, content: hi}]\n"
    )
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0].request.parsed_body.max_tokens: {TOO_LONG}"
    )


def test_a_huge_integer_in_a_yaml_response_usage_is_refused(tmp_path: Path) -> None:
    path = _cassette(tmp_path, f"  response:\n    body:\n      usage: {{input_tokens: {HUGE}}}\n")
    assert _refused(path) == (
        f"llmcore: {path}:2: interactions[0].response.body.usage.input_tokens: {TOO_LONG}"
    )


def test_a_huge_integer_in_a_json_response_string_is_not_read(tmp_path: Path) -> None:
    usage = '{"usage":{"input_tokens":' + HUGE + "}}"
    path = _cassette(tmp_path, f"  response:\n    body: {{string: '{usage}'}}\n")
    assert _run(path)[0] == EXIT_STABLE


@pytest.mark.parametrize("where", ["max_tokens", "content"])
def test_a_huge_integer_on_a_jsonl_line_names_the_line(tmp_path: Path, where: str) -> None:
    path = tmp_path / "run.jsonl"
    bad = (
        BODY.replace("10", HUGE)
        if where == "max_tokens"
        else BODY.replace('"hi"', '[{"type":"text","text":"hi","n":' + HUGE + "}]")
    )
    path.write_text(BODY + "\n" + bad + "\n")
    assert _refused(path).startswith(
        f"llmcore: {path}:2: request body cannot be read: {TOO_LONG} at byte "
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"request": ' + BODY.replace("10", HUGE) + "}", f"not valid JSON ({TOO_LONG})"),
        (BODY.replace("10", HUGE), f"not valid JSON ({TOO_LONG})"),
        (
            json.dumps({"request": {}, "request_raw": BODY.replace("10", HUGE)}),
            f"request body cannot be read: {TOO_LONG} at byte 42",
        ),
    ],
    ids=["case-request", "plain-body", "case-request_raw"],
)
def test_a_huge_integer_in_a_json_file_is_refused(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "case.json"
    path.write_text(text)
    assert _refused(path) == f"llmcore: {path}: {expected}"


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1." + HUGE, LONG])
def test_huge_floats_and_long_integers_in_bodies_are_audited(tmp_path: Path, number: str) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(BODY.replace("10", number) + "\n")
    code, _out, err = _run(path)
    assert (code, err) == (EXIT_STABLE, "")


# --- no exception is exit 1 ------------------------------------------------------------------


def test_an_unexpected_exception_is_one_line_and_exit_2(tmp_path, monkeypatch) -> None:
    def boom(paths, provider, stdin=None, **options):
        raise RuntimeError("a bug\nover two lines")

    monkeypatch.setattr(cli_audit, "audit_paths", boom)
    code, out, err = _run(tmp_path)
    assert (code, out) == (EXIT_INPUT, "")
    assert err == "llmcore: internal error (please report it): RuntimeError: a bug over two lines\n"


def test_an_interrupt_is_not_a_break(tmp_path, monkeypatch) -> None:
    def interrupted(paths, provider, stdin=None, **options):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_audit, "audit_paths", interrupted)
    code, _out, err = _run(tmp_path)
    assert (code, err) == (EXIT_INTERRUPTED, "llmcore: interrupted\n")


class _ClosedPipe(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize("as_json", [False, True])
def test_a_report_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, as_json) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(BODY + "\n")
    err = io.StringIO()
    code = audit_command([path], None, as_json, out=_ClosedPipe(), err=err)
    assert (code, err.getvalue()) == (
        EXIT_INPUT,
        "llmcore: cannot write the report (Broken pipe)\n",
    )


PLAIN = st.from_regex(r"\A[-+]?[0-9][0-9_.eE:+-]{0,40}\Z", fullmatch=True)
DIGITS = st.integers(min_value=300, max_value=6000).map(lambda n: "9" * n)
LITERALS = st.sampled_from(
    [
        ".inf",
        "-.inf",
        ".nan",
        "~",
        "null",
        "true",
        "''",
        "[]",
        "{}",
        "0x1F",
        "0o17",
        "1_000",
        "2024-02-30",
        "2024-01-01T25:00:00Z",
        "2001-12-14t21:59:43.10-99:00",
        "9999-12-31T23:59:59-23:00",
        "!!float 1e999",
        "!!int 1e3",
        "!!timestamp x",
        "!!binary x",
        "1:20:30",
        "190:20:30.15",
    ]
)
DUMPED = st.one_of(
    st.integers(min_value=-(10**500), max_value=10**500),
    st.floats(allow_nan=True, allow_infinity=True),
    st.datetimes(),
    st.text(max_size=20),
).map(
    lambda v: (
        yaml.safe_dump(v, default_flow_style=True, width=10**6).removesuffix("\n...\n").strip()
    )
)


@settings(max_examples=150, deadline=None)
@given(st.one_of(PLAIN, DIGITS, LITERALS, DUMPED))
def test_any_yaml_scalar_as_recorded_at_is_exit_0_or_2(scalar: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "c.yaml"
        path.write_text(HEAD + f"    body: '{BODY}'\n  recorded_at: {scalar}\n")
        code, out, err = _run(path)
    assert code in (EXIT_STABLE, EXIT_INPUT) and code != EXIT_BREAK
    if code == EXIT_INPUT:
        assert out == "" and err.count("\n") == 1 and err.startswith("llmcore: "), err
        assert "internal error" not in err and "Traceback" not in err
    else:
        assert err == ""
