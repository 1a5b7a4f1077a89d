"""Token usage and cost values (SPEC U1–U3).

* :class:`Usage` — the model tokens of one request, or a sum of requests (U1). ``input`` means
  *uncached* input; cache reads and writes are separate fields.
* :class:`Cost` — US dollars with a kind (U2): ``reported`` (every request's cost was reported
  by the provider), ``estimated`` (from a price table; partial when only some requests reported:
  Σ reported + Σ estimated), ``unknown`` (some request was neither reported nor priced) and
  ``not_billed`` (nothing billed per token; also the cost of zero requests).
* :class:`UsageTotals` — what a conversation keeps (U3): total usage, the last request's usage
  (how full the context is) and the running cost.

It leaves out provider normalization (each provider's usage object → :class:`Usage`) and the
price table; those produce the per-request values this module adds up.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias, TypeVar

__all__ = ["Cost", "CostKind", "Usage", "UsageTotals"]

_N = TypeVar("_N", int, float)

CostKind: TypeAlias = Literal["reported", "estimated", "unknown", "not_billed"]
"""How a cost is known (SPEC U2); on disk ``notBilled`` stands for ``not_billed``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Model tokens of one request or of several (SPEC U1).

    All counts are tokens, except :attr:`web_search_requests` (requests) and
    :attr:`reported_cost` (US dollars).
    """

    input: int = 0
    """Uncached input tokens (cache reads and writes are not included)."""
    output: int = 0
    """Output tokens, reasoning included."""
    cache_read: int = 0
    """Input tokens read from the prompt cache."""
    cache_write: int = 0
    """Input tokens written to the prompt cache (every TTL)."""
    web_search_requests: int = 0
    """Server-side web searches the provider ran."""
    cache_write_1h: int | None = None
    """The part of :attr:`cache_write` at the 1-hour TTL; ``None`` when not reported."""
    reported_cost: float | None = None
    """US dollars the provider itself reported (e.g. OpenRouter ``usage.cost``), else ``None``."""

    def __add__(self, other: Usage) -> Usage:
        """Return the field-wise sum; an optional field stays ``None`` only if both are."""
        return Usage(
            input=self.input + other.input,
            output=self.output + other.output,
            cache_read=self.cache_read + other.cache_read,
            cache_write=self.cache_write + other.cache_write,
            web_search_requests=self.web_search_requests + other.web_search_requests,
            cache_write_1h=_add_optional(self.cache_write_1h, other.cache_write_1h),
            reported_cost=_add_optional(self.reported_cost, other.reported_cost),
        )

    @property
    def total_input(self) -> int:
        """All input tokens of the request(s): uncached + cache read + cache write."""
        return self.input + self.cache_read + self.cache_write


def _add_optional(a: _N | None, b: _N | None) -> _N | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """A cost in US dollars and how it is known (SPEC U2).

    ``dollars`` is set for ``reported`` and ``estimated`` and ``None`` for ``unknown`` and
    ``not_billed``.
    """

    kind: CostKind = "not_billed"
    """``reported``, ``estimated``, ``unknown`` or ``not_billed``."""
    dollars: float | None = None
    """US dollars, for ``reported`` and ``estimated``."""

    def __post_init__(self) -> None:
        if self.kind not in ("reported", "estimated", "unknown", "not_billed"):
            raise ValueError(f"unknown cost kind {self.kind!r}")

    def __add__(self, other: Cost) -> Cost:
        """Return the cost of both, by the rules of SPEC U2.

        ``unknown`` wins; ``not_billed`` adds nothing (it is the cost of zero requests);
        ``reported`` + ``reported`` stays ``reported``; any ``estimated`` part makes the sum
        ``estimated`` (Σ reported + Σ estimated).
        """
        if "unknown" in (self.kind, other.kind):
            return Cost(kind="unknown")
        if self.kind == "not_billed":
            return other
        if other.kind == "not_billed":
            return self
        kind: CostKind = "reported" if self.kind == other.kind == "reported" else "estimated"
        return Cost(kind=kind, dollars=(self.dollars or 0.0) + (other.dollars or 0.0))


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageTotals:
    """A conversation's running usage and cost (SPEC U3)."""

    total: Usage = field(default_factory=Usage)
    """The sum over every request of the conversation."""
    last_round: Usage = field(default_factory=Usage)
    """The last request's usage: how full the context is (zero before the first request)."""
    cost: Cost = field(default_factory=Cost)
    """The running cost."""

    def record(self, usage: Usage, cost: Cost) -> UsageTotals:
        """Return the totals after one more request with ``usage`` costing ``cost``."""
        return UsageTotals(total=self.total + usage, last_round=usage, cost=self.cost + cost)
