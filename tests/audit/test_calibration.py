"""A sample of the calibration benchmark (benchmarks/bench_calibration.py) on the vendored traffic.

Every vendored real cassette that records usage is audited once: no request's theoretical
maximum is below the provider's recorded cache read for a reason of llmcore's model (requests
the report labels "not visible in the input" aside), and the median estimate is within 15% of
the recorded input on Anthropic, Chat and Responses (SPEC V5, issue 19).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _calibration() -> ModuleType:
    path = ROOT / "benchmarks" / "calibration_audit.py"
    spec = importlib.util.spec_from_file_location("calibration_audit", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("calibration_audit", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    return {row["provider"]: row for row in _calibration().audit_rows()}


def test_no_maximum_is_below_a_recorded_read_for_a_reason_of_the_model(rows):
    assert sum(r["requests"] for r in rows.values()) >= 340
    for provider, row in rows.items():
        assert row["below_model"] == 0, (provider, row["below_model_requests"])
    # the ones the input cannot show are labelled, not hidden
    assert sum(r["below_not_visible"] for r in rows.values()) >= 5


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
def test_the_median_estimate_is_within_15_percent_of_recorded_input(rows, provider):
    row = rows[provider]
    assert row["ratio_requests"] >= 40
    assert 0.85 <= row["ratio_median"] <= 1.15
