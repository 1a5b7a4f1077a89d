"""The bundled price table and cost kinds (U2), with exact dollars."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llmcore.pricing import (
    ModelPrice,
    PriceTable,
    PriceTableError,
    default_prices,
    load_prices,
    parse_prices,
)
from llmcore.usage import Cost, Usage, UsageTotals

TABLE = default_prices()


def test_bundled_table_names_its_sources_and_date() -> None:
    assert TABLE.retrieved == "2026-12-01"
    assert any("anthropic" in s or "claude.com" in s for s in TABLE.sources)
    assert any("openai" in s for s in TABLE.sources)


def test_anthropic_estimate_with_both_cache_ttls() -> None:
    usage = Usage(
        input=1_000_000,
        output=1_000_000,
        cache_read=1_000_000,
        cache_write=1_000_000,
        cache_write_1h=400_000,
        web_search_requests=3,
    )
    cost = TABLE.cost("claude-sonnet-4-5-20250929", usage)
    # 3 + 15 + 0.30 + 0.6·3.75 + 0.4·6 + 3·10/1000
    assert cost.kind == "estimated"
    assert cost.dollars == pytest.approx(3 + 15 + 0.30 + 2.25 + 2.40 + 0.03, rel=1e-12)
    assert cost.dollars == pytest.approx(22.98, rel=1e-12)


def test_openai_estimate_prices_cached_input_at_the_cached_rate() -> None:
    usage = Usage(input=976, cache_read=1024, output=500)  # prompt_tokens 2000, 1024 cached
    cost = TABLE.cost("gpt-4o-2024-08-06", usage)
    assert cost == Cost(
        kind="estimated", dollars=pytest.approx((976 * 2.5 + 1024 * 1.25 + 500 * 10) / 1e6)
    )
    assert cost.dollars == pytest.approx(0.00872, rel=1e-12)


def test_lookup_prefers_exact_then_longest_prefix_and_strips_vendor() -> None:
    assert TABLE.lookup("gpt-4o-mini-2024-07-18") == TABLE.lookup("gpt-4o-mini")
    assert TABLE.lookup("gpt-4o-mini") != TABLE.lookup("gpt-4o")
    assert TABLE.lookup("anthropic/claude-sonnet-4.5") == TABLE.lookup("claude-sonnet-4-5")
    assert TABLE.lookup("claude-opus-4-5-20251101") == ModelPrice(
        input=5.0,
        output=25.0,
        cache_read=0.5,
        cache_write_5m=6.25,
        cache_write_1h=10.0,
        web_search=10.0,
    )
    assert TABLE.lookup("llama-99") is None


def test_cost_kinds() -> None:
    assert TABLE.cost("anything", Usage(input=5, reported_cost=0.125)) == Cost(
        kind="reported", dollars=0.125
    )
    assert TABLE.cost("llama-99", Usage(input=5)) == Cost(kind="unknown")
    assert TABLE.cost("llmcore-emulator", Usage(input=5)) == Cost(kind="not_billed")


def test_partial_reporting_sums_to_an_estimate() -> None:
    totals = UsageTotals()
    totals = totals.record(
        Usage(input=10, reported_cost=0.5), TABLE.cost("x", Usage(reported_cost=0.5))
    )
    assert totals.cost == Cost(kind="reported", dollars=0.5)
    priced = TABLE.cost("claude-haiku-4-5", Usage(input=1_000_000))
    totals = totals.record(Usage(input=1_000_000), priced)
    assert totals.cost == Cost(kind="estimated", dollars=1.5)
    totals = totals.record(Usage(input=1), TABLE.cost("llama-99", Usage(input=1)))
    assert totals.cost == Cost(kind="unknown")


def test_image_cost() -> None:
    assert TABLE.image_cost("gpt-image-1", 3) == Cost(
        kind="estimated", dollars=pytest.approx(0.126)
    )
    assert TABLE.image_cost("claude-sonnet-4-5", 1) == Cost(kind="unknown")
    assert TABLE.image_cost("llmcore-emulator", 2) == Cost(kind="not_billed")


def test_malformed_tables_name_the_key(tmp_path: Path) -> None:
    with pytest.raises(PriceTableError, match=r"\$\.models\.m\.input"):
        parse_prices(json.dumps({"models": {"m": {"input": -1}}}).encode())
    with pytest.raises(PriceTableError, match="unknown price field 'inptu'"):
        parse_prices(json.dumps({"models": {"m": {"inptu": 1}}}).encode())
    path = tmp_path / "p.json"
    path.write_text('{"models": {"m": {"input": 2, "output": 4}}, "retrieved": "2026-01-01"}')
    table = load_prices(path)
    assert table == PriceTable(
        models=(("m", ModelPrice(input=2.0, output=4.0)),), retrieved="2026-01-01"
    )
    assert table.cost("m", Usage(input=500_000, output=250_000)) == Cost(
        kind="estimated", dollars=2.0
    )
