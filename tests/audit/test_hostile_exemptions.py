"""Hostile exemptions files: any parsed value gives exemptions or an :class:`ExemptionError`.

The fuzz feeds :func:`parse_exemptions` every JSON-like value (and YAML-only scalars), and
:func:`load_exemptions` arbitrary bytes; nothing else may escape. A reason holding a lone
surrogate (``"\\ud800"`` in JSON) once passed the check and then broke the report's printing.
"""

from __future__ import annotations

import io
import json
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcore.audit.exemptions import Exemption, ExemptionError, load_exemptions, parse_exemptions
from llmcore.cli.audit import EXIT_INPUT, audit_command
from tests.examples import examples

from .test_exemptions import broken  # noqa: F401  (the fixture)

KEYS = st.sampled_from(["file", "reason", "request", "why", 1, None])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text()
    | st.binary(max_size=8)
    | st.dates()
)
VALUES: st.SearchStrategy[object] = st.deferred(
    lambda: SCALARS | st.lists(VALUES, max_size=3) | st.dictionaries(KEYS, VALUES, max_size=3)
)
ENTRIES = st.lists(
    st.fixed_dictionaries(
        {"file": VALUES, "reason": VALUES}, optional={"request": VALUES, "why": VALUES}
    ),
    max_size=4,
)


@pytest.mark.full_count
@settings(max_examples=examples(full=150, sample=40), deadline=None)
@given(VALUES | ENTRIES)
def test_any_value_gives_exemptions_or_a_typed_error_naming_the_entry(value: object) -> None:
    try:
        got = parse_exemptions(value, "x.yaml")
    except ExemptionError as exc:
        assert exc.location is not None and exc.location.startswith("x.yaml")
        return
    assert isinstance(value, list) and len(got) == len(value)
    for one in got:
        assert isinstance(one, Exemption) and one.reason.strip() == one.reason != ""
        one.reason.encode("utf-8")  # printable on any report
        one.file.encode("utf-8")


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=200), st.sampled_from([".yaml", ".json"]))
def test_any_bytes_give_exemptions_or_a_typed_error(tmp_path_factory, data: bytes, suffix: str):
    path = tmp_path_factory.mktemp("ex") / f"exemptions{suffix}"
    path.write_bytes(data)
    try:
        load_exemptions(path)
    except ExemptionError as exc:
        assert exc.location is not None and exc.location.startswith(str(path))


def test_a_yaml_date_where_a_string_is_expected_is_named():
    with pytest.raises(ExemptionError) as exc:
        parse_exemptions([{"file": date(2024, 1, 2), "reason": "r"}], "x.yaml")
    assert str(exc.value) == "x.yaml: entries[0]: 'file' must be a non-empty path or glob"


def test_a_reason_with_a_lone_surrogate_is_refused_by_entry(
    tmp_path: Path,
    broken: Path,  # noqa: F811  (the fixture)
):
    cassette = broken
    path = tmp_path / "exemptions.json"
    path.write_text(json.dumps([{"file": "*", "reason": "\ud800 on purpose"}]), "ascii")
    out, err = io.StringIO(), io.StringIO()
    code = audit_command([cassette], None, False, exemptions=path, out=out, err=err)
    assert (code, out.getvalue()) == (EXIT_INPUT, "")
    assert err.getvalue() == (
        f"llmcore: {path}: entries[0].reason: 'reason' holds a lone surrogate, which has no "
        "UTF-8 form\n"
    )
