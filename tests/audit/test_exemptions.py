"""Exemptions (issue 11): intended breaks with a required reason; the CLI's --exemptions FILE."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from llmcore.audit import Verdict, audit_paths
from llmcore.audit.exemptions import (
    Exemption,
    ExemptionError,
    apply_exemptions,
    exemption_for,
    load_exemptions,
    parse_exemptions,
)
from llmcore.cli.audit import EXIT_BREAK, EXIT_INPUT, EXIT_STABLE, audit_command

from . import _bodies as b
from . import _cassettes as cas


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """A cassette whose second request changes the system prompt (a break at request 1)."""
    msgs = b.session()
    first = b.anthropic(msgs[:3], system="You are terse.")
    second = b.anthropic(msgs[:5], system="You are verbose.")
    folder = tmp_path / "cassettes" / "test_agent"
    return cas.write(folder / "test_swap.yaml", [cas.interaction(first), cas.interaction(second)])


def _run(paths, exemptions=None, as_json=False):
    out, err = io.StringIO(), io.StringIO()
    code = audit_command(paths, None, as_json, exemptions=exemptions, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_parse_entries():
    got = parse_exemptions(
        [
            {"file": "a.yaml", "reason": "  on purpose  "},
            {"file": "cassettes/*/x.yaml", "request": 2, "reason": "swap"},
        ],
        "ex.yaml",
    )
    assert got == (
        Exemption(file="a.yaml", reason="on purpose"),
        Exemption(file="cassettes/*/x.yaml", request=2, reason="swap"),
    )


@pytest.mark.parametrize(
    ("entries", "location", "message"),
    [
        ({"file": "a"}, "ex.yaml", "holds a list of entries"),
        ([{"file": "a", "reason": "r"}, {"file": "b"}], "ex.yaml: entries[1]", "'reason' is"),
        ([{"file": "a", "reason": "   "}], "ex.yaml: entries[0]", "'reason' is required"),
        ([{"file": "a", "reason": "r", "why": 1}], "ex.yaml: entries[0]", "unknown key 'why'"),
        ([{"reason": "r"}], "ex.yaml: entries[0]", "'file' must be"),
        ([{"file": "a", "reason": "r", "request": -1}], "ex.yaml: entries[0]", "'request'"),
        ([{"file": "a", "reason": "r", "request": True}], "ex.yaml: entries[0]", "'request'"),
        (["a.yaml"], "ex.yaml: entries[0]", "a mapping"),
    ],
)
def test_bad_entries_name_file_and_index(entries, location, message):
    with pytest.raises(ExemptionError, match=message) as info:
        parse_exemptions(entries, "ex.yaml")
    assert info.value.location == location


def test_load_yaml_json_and_malformed(tmp_path: Path):
    y = tmp_path / "ex.yaml"
    y.write_text("- file: a.yaml\n  reason: intended\n")
    assert load_exemptions(y) == (Exemption(file="a.yaml", reason="intended"),)
    j = tmp_path / "ex.json"
    j.write_text(json.dumps([{"file": "b.yaml", "request": 0, "reason": "r"}]))
    assert load_exemptions(j) == (Exemption(file="b.yaml", request=0, reason="r"),)
    bad = tmp_path / "bad.yaml"
    bad.write_text("- file: [unclosed\n")
    with pytest.raises(ExemptionError, match="not valid YAML") as info:
        load_exemptions(bad)
    assert info.value.location.startswith(f"{bad}:")
    with pytest.raises(ExemptionError, match="cannot read") as info:
        load_exemptions(tmp_path / "missing.yaml")


def test_matching_by_path_glob_and_request(broken: Path):
    report = audit_paths([broken])
    rec = report.requests[1]
    assert rec.verdict is Verdict.BREAK and rec.position == 1
    hits = [
        Exemption(file=str(broken), reason="full path"),
        Exemption(file="test_swap.yaml", reason="name from the right"),
        Exemption(file="*/test_agent/*.yaml", reason="glob"),
        Exemption(file="test_swap.yaml", request=1, reason="that request"),
    ]
    misses = [
        Exemption(file="test_swap.yaml", request=0, reason="another request"),
        Exemption(file="other.yaml", reason="another file"),
    ]
    for e in hits:
        assert exemption_for(rec, [e]) is e
    assert exemption_for(rec, misses) is None
    marked = apply_exemptions(report, [*misses, hits[3]])
    assert marked.requests[1].exemption == "that request"
    assert marked.requests[0].exemption is None  # only breaks are marked
    assert marked.stable and marked.breaks == 1 and marked.exempted == 1
    assert marked.to_dict()["records"][1]["exemption_reason"] == "that request"


def test_cli_exempted_break_exits_0_with_its_reason(broken: Path, tmp_path: Path):
    assert _run([broken])[0] == EXIT_BREAK
    ex = tmp_path / "exemptions.yaml"
    ex.write_text("- file: test_swap.yaml\n  request: 1\n  reason: the test swaps the prompt\n")
    code, out, err = _run([broken], ex)
    assert (code, err) == (EXIT_STABLE, "")
    assert "break (exempted)" in out
    assert "exempted: the test swaps the prompt" in out
    assert "1 break exempted; 0 breaks not" in out
    code, out, _ = _run([broken], ex, as_json=True)
    doc = json.loads(out)
    assert code == EXIT_STABLE and doc["stable"] is True and doc["exempted"] == 1
    assert doc["records"][1]["exempted"] is True


def test_cli_exemption_for_another_request_still_fails(broken: Path, tmp_path: Path):
    ex = tmp_path / "exemptions.json"
    ex.write_text(json.dumps([{"file": "test_swap.yaml", "request": 0, "reason": "no"}]))
    assert _run([broken], ex)[0] == EXIT_BREAK


def test_cli_bad_exemptions_file_exits_2_naming_the_entry(broken: Path, tmp_path: Path):
    ex = tmp_path / "exemptions.yaml"
    ex.write_text("- file: a.yaml\n  reason: ok\n- file: b.yaml\n")
    code, out, err = _run([broken], ex)
    assert (code, out) == (EXIT_INPUT, "")
    assert err == (
        f"llmcore: {ex}: entries[1]: 'reason' is required: say why this boundary is intended\n"
    )


def test_cli_options_through_typer(broken: Path, tmp_path: Path):
    import typer

    from llmcore.cli.audit import register

    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)
    ex = tmp_path / "ex.yaml"
    ex.write_text("- file: '*.yaml'\n  reason: intended\n")
    runner = CliRunner()
    result = runner.invoke(app, ["audit", str(broken), "--exemptions", str(ex)])
    assert result.exit_code == EXIT_STABLE, result.output
    result = runner.invoke(app, ["audit", "missing.yaml", "--group", "nonsense"])
    assert result.exit_code == EXIT_INPUT
    assert "--group: unknown grouping 'nonsense' (expected one of: file, prefix, key)" in (
        result.output
    )
    result = runner.invoke(app, ["audit", str(broken), "--group", "prefix"])
    assert result.exit_code == EXIT_BREAK


def test_cli_table_keeps_brackets_of_parametrized_cassette_names(tmp_path: Path):
    path = cas.write(
        tmp_path / "test_x[anthropic].yaml", [cas.interaction(b.anthropic([b.user("q")]))]
    )
    code, out, _ = _run([path])
    assert code == EXIT_STABLE and "test_x[anthropic].yaml" in out


def test_jsonl_requests_are_exempted_by_line_number(tmp_path: Path):
    msgs = b.session()
    log = tmp_path / "run.jsonl"
    log.write_bytes(
        b.anthropic(msgs[:3]) + b"\n\n" + b.anthropic(msgs[:5], system="Other.") + b"\n"
    )
    report = audit_paths([log])
    assert [r.position for r in report.requests] == [1, 3]
    on_line_3 = [Exemption(file="run.jsonl", request=3, reason="a new system prompt")]
    assert apply_exemptions(report, on_line_3).stable
    assert not apply_exemptions(report, [Exemption(file="run.jsonl", request=2, reason="x")]).stable


def test_cli_warns_about_an_entry_that_matches_no_request(broken: Path, tmp_path: Path):
    ex = tmp_path / "exemptions.yaml"
    ex.write_text(
        "- file: test_swap.yaml\n  reason: the test swaps the prompt\n"
        "- file: cassettes/typo.yaml\n  reason: a path that names nothing\n"
    )
    code, _, err = _run([broken], ex)
    assert code == EXIT_STABLE
    assert err == (
        f"llmcore: warning: {ex}: entries[1]: file 'cassettes/typo.yaml' matched no audited"
        " request\n"
    )
