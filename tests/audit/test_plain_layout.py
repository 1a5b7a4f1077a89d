"""``llmcore audit`` into a file or a pipe: a plain layout within 100 columns (issue 22).

A terminal gets the rich table; stdout that is not a terminal used to get the table at a
width where no row wraps (1,155 columns on the real-traffic folder). These tests run the
command on real cassettes with stdout captured and check every line's width and that each
request's numbers and the totals are the ones ``--json`` gives.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llmcore.audit.plain import WIDTH, fit
from llmcore.cli._app import app
from tests.docs.snippets import ROOT

TRAFFIC = ROOT / "tests" / "real_traffic"
FOLDERS = [
    TRAFFIC / "llm-anthropic",  # long cassette paths
    TRAFFIC / "pydantic-ai" / "tests" / "cassettes" / "test_cache_prefix_stability",  # breaks
]
_HEAD = re.compile(
    r"^#(\d+) (\S+)(?: \(.*?\))*? · conversation (\d+) · est\. ([\d,]+) tok · "
    r"max cache ([\d,]+) · (?:lost ([\d,]+) B, ([\d,]+) tok|lost nothing \(nothing cacheable\))$"
)


def _number(text: str | None) -> int | None:
    return None if text is None else int(text.replace(",", ""))


@pytest.fixture(scope="module")
def outputs() -> tuple[str, dict[str, Any]]:
    runner = CliRunner()
    args = ["audit", *map(str, FOLDERS)]
    plain, machine = runner.invoke(app, args), runner.invoke(app, [*args[:1], "--json", *args[1:]])
    assert plain.exit_code == machine.exit_code == 1  # the folders hold breaks
    return plain.stdout, json.loads(machine.stdout)


def test_every_line_fits_100_columns(outputs: tuple[str, dict[str, Any]]) -> None:
    text, report = outputs
    lines = text.splitlines()
    assert len(lines) > 3 * report["requests"]
    assert max(map(len, lines)) <= WIDTH
    assert "┃" not in text and "\x1b[" not in text  # no table, no colour codes


def _heads(text: str) -> list[tuple[int, ...]]:
    """Each request's head line, joined with its continuation lines, as numbers."""
    heads, current = [], ""
    for line in [*text.splitlines(), ""]:
        if line.startswith("#") or not line.startswith(" "):
            if current:
                heads.append(current)
            current = line if line.startswith("#") else ""
        elif current and not line.startswith("   source:"):
            current += " " + line.strip()
        elif current:
            heads.append(current)
            current = ""
    out = []
    for head in heads:
        match = _HEAD.match(head)
        assert match, head
        out.append((int(match[1]), match[2], *map(_number, match.groups()[2:])))
    return out


def test_each_request_shows_the_numbers_of_the_json(outputs: tuple[str, dict[str, Any]]) -> None:
    text, report = outputs
    expected = [
        (r["request"], r["verdict"], r["conversation"], r["total_tokens"],
         r["max_cacheable_tokens"], *((None, None) if r["uncacheable"] else
                                      (r["lost_bytes"], r["lost_tokens"])))
        for r in report["records"]
    ]  # fmt: skip
    assert _heads(text) == expected
    assert any(r["uncacheable"] for r in report["records"])  # real traffic under the minimum
    assert {r["verdict"] for r in report["records"]} >= {"new", "stable", "break"}


def test_the_totals_are_those_of_the_json(outputs: tuple[str, dict[str, Any]]) -> None:
    text, report = outputs
    joined = " ".join(line.strip() for line in text.splitlines())
    counts = ", ".join(f"{k} {v}" for k, v in report["counts"].items() if v)
    assert f"{report['requests']} requests in {report['conversations']} conversations: " in joined
    assert counts in joined
    breaks = [r for r in report["records"] if r["verdict"] == "break"]
    if all(r["uncacheable"] for r in breaks):
        assert "lost to breaks: none (no cache hit was possible: " in joined
    else:
        assert (
            f"lost to breaks: {report['lost_bytes']:,} bytes, {report['lost_tokens']:,} tokens"
            in joined
        )
    rate = report["theoretical_hit_rate"]
    assert (
        f"theoretical maximum hit rate: {rate:.1%} ({report['max_cacheable_tokens']:,} of" in joined
    )
    usage = report["recorded_usage"]
    assert f"({usage['cache_read_tokens']:,} of {usage['input_tokens']:,} input tokens" in joined


def test_fit_breaks_at_spaces_then_after_slashes_then_inside_words() -> None:
    words = "lost to breaks " * 12
    assert all(len(line) <= WIDTH for line in fit(words))
    assert " ".join(fit(words)).split() == words.split()
    path = "   source: " + "/".join(["segment"] * 20) + ".yaml"
    wrapped = fit(path)
    assert all(len(line) <= WIDTH for line in wrapped) and wrapped[0].endswith("/")
    assert "".join(line.strip() for line in wrapped) == path.strip()
    long_word = "x" * 250
    assert [len(line) for line in fit(long_word)] == [
        100,
        100,
        54,
    ]  # continuation lines indented by 2
    assert fit("short") == ["short"]


@settings(max_examples=300)  # wrapping is textwrap's; a sample of shapes is enough
@given(st.text(alphabet=st.sampled_from("ab/ .:_-é·"), max_size=400), st.integers(0, 6))
def test_fit_keeps_every_character_but_spaces_and_no_line_exceeds_the_width(
    text: str, lead: int
) -> None:
    line = " " * lead + text
    wrapped = fit(line)
    assert all(len(part) <= WIDTH for part in wrapped)
    assert "".join(wrapped).replace(" ", "") == line.replace(" ", "")
