"""The auditor's part of the calibration against recorded usage (SPEC V5, issue 19).

Runs ``llmcore audit`` over every vendored real cassette that records the provider's usage and
compares, request by request, the auditor's estimates with what the provider reported:

* **below**: requests whose theoretical maximum is below the recorded cache read, split into
  "llmcore's model" (the maximum is not an upper bound: goal 0) and "not visible in the input"
  (the report's own label: server-held state, a server-side tool loop, a cache warm before the
  recording);
* **estimate ÷ recorded input**: the estimated prompt tokens over the recorded input tokens
  (median, p10, p90), over requests the input shows whole (not labelled "not visible");
* **verdict agreement** with the recorded reads, for each request compared with an earlier one
  that also records usage: a recorded read that *drops* below what the earlier request cached
  (its read + write; OpenAI, which reports no writes: its prompt floored to 1,024 + 128·k) at a
  request the auditor does not call a break, and a *break* where the recorded read covers all
  the earlier request cached.

:func:`audit_rows` returns one row per provider; ``bench_calibration.py`` prints and writes them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from llmcore.audit import AuditReport, RequestRecord, Verdict, audit_paths
from llmcore.tokens import openai_cacheable

ROOT: Final = Path(__file__).resolve().parent.parent
PATHS: Final = (
    ROOT / "tests" / "real_traffic",
    ROOT / "tests" / "calibration_traffic",
    ROOT / "tests" / "audit" / "data",
)
"""Every vendored folder of real recorded traffic."""

_WRITES: Final = frozenset({"anthropic", "bedrock-converse"})
"""Providers whose usage reports cache writes (Anthropic, Converse)."""


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cached_by(record: RequestRecord) -> int:
    """Tokens the provider holds after ``record`` (its read + write; OpenAI: its floored prompt)."""
    usage = record.usage
    assert usage is not None
    if record.provider in _WRITES or usage.cache_write_tokens:
        return usage.cache_read_tokens + usage.cache_write_tokens
    return max(usage.cache_read_tokens, openai_cacheable(usage.input_tokens))


def _pair(report: AuditReport, record: RequestRecord) -> tuple[str, int] | None:
    """(``drop`` | ``break_read_all`` | ``agree``, expected read) against the earlier request."""
    if record.compared_with is None or record.usage is None or record.not_visible:
        return None
    earlier = report.requests[record.compared_with]
    if earlier.usage is None or earlier.not_visible:
        return None
    expected = min(cached_by(earlier), record.usage.input_tokens)
    if expected <= 0:
        return None
    read = record.usage.cache_read_tokens
    if record.verdict is Verdict.BREAK:
        return ("break_read_all" if read >= expected else "agree"), expected
    return ("drop" if read < expected else "agree"), expected


def _row(provider: str, report: AuditReport, records: list[RequestRecord]) -> dict[str, Any]:
    below_model: list[dict[str, Any]] = []
    below_hidden = 0
    ratios: list[float] = []
    pairs = drops = breaks_read_all = 0
    for r in records:
        assert r.usage is not None
        if r.max_cacheable_tokens < r.usage.cache_read_tokens:
            if r.not_visible:
                below_hidden += 1
            else:
                below_model.append(
                    {
                        "source": r.source,
                        "max": r.max_cacheable_tokens,
                        "read": r.usage.cache_read_tokens,
                        "estimate": r.total_tokens,
                        "input": r.usage.input_tokens,
                    }
                )
        if not r.not_visible and r.usage.input_tokens:
            ratios.append(r.total_tokens / r.usage.input_tokens)
        found = _pair(report, r)
        if found is not None:
            pairs += 1
            drops += found[0] == "drop"
            breaks_read_all += found[0] == "break_read_all"
    return {
        "provider": provider,
        "requests": len(records),
        "below_model": len(below_model),
        "below_not_visible": below_hidden,
        "ratio_median": statistics.median(ratios) if ratios else None,
        "ratio_p10": _quantile(ratios, 0.1),
        "ratio_p90": _quantile(ratios, 0.9),
        "ratio_requests": len(ratios),
        "pairs": pairs,
        "drops_at_non_break": drops,
        "breaks_read_all": breaks_read_all,
        "below_model_requests": below_model,
    }


def audit_report(paths: Sequence[Path] = PATHS) -> AuditReport:
    """Audit every vendored folder in one run (each cassette grouped within its file)."""
    return audit_paths([p for p in paths if p.exists()])


def audit_rows(paths: Sequence[Path] = PATHS) -> list[dict[str, Any]]:
    """Return one calibration row per provider over the recorded requests of ``paths``.

    Each row: ``provider``, ``requests`` (with recorded usage), ``below_model`` and
    ``below_not_visible``, ``ratio_median`` / ``ratio_p10`` / ``ratio_p90`` (estimate ÷
    recorded input) over ``ratio_requests``, ``pairs`` compared, ``drops_at_non_break``,
    ``breaks_read_all``, and the ``below_model_requests`` themselves.
    """
    report = audit_report(paths)
    by_provider: dict[str, list[RequestRecord]] = {}
    for record in report.recorded:
        by_provider.setdefault(record.provider, []).append(record)
    return [_row(p, report, rs) for p, rs in sorted(by_provider.items())]
