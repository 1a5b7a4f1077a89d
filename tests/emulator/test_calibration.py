"""The emulator agrees with the providers' recorded cache reads (SPEC V5), on the vendored traffic.

Replays every vendored real cassette that records usage against a fresh emulator
(``benchmarks/calibration_emulator.py``) and pins the figures README's emulator section shows:
a change to the accounting that makes one request hit where the provider missed, or miss where
it read, fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.calibration_emulator import emulator_rows, render, summarize


@pytest.fixture(scope="module")
def summary() -> dict[str, dict[str, Any]]:
    return summarize(emulator_rows())


@pytest.mark.parametrize(
    ("provider", "compared"), [("anthropic", 97), ("chat", 99), ("responses", 94)]
)
def test_every_compared_request_agrees_hit_for_miss(
    summary: dict[str, dict[str, Any]], provider: str, compared: int
) -> None:
    figures = summary[provider]
    assert figures["disagree"] == []
    # at least: requests the emulator's validator refuses today are left out, not compared
    assert figures["agree"] == figures["requests"] >= compared


@pytest.mark.parametrize("provider", ["anthropic", "chat", "responses"])
def test_median_read_is_within_ten_percent_of_the_recorded(
    summary: dict[str, dict[str, Any]], provider: str
) -> None:
    figures = summary[provider]
    assert figures["hits_both"] >= 1
    assert 0.9 <= figures["read_ratio"]["median"] <= 1.1


def test_requests_left_out_are_counted_apart(summary: dict[str, dict[str, Any]]) -> None:
    left_out = {
        provider: (s["warmed_outside"], s["output_read"]) for provider, s in summary.items()
    }
    assert left_out == {"anthropic": (4, 0), "chat": (1, 0), "responses": (6, 1)}
    assert render(summary).count("\n") == 4
