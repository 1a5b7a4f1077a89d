"""The stability auditor (SPEC V1) and the cassette body matcher (V3).

The auditor takes request bodies in the order they were sent — from llmcore, from VCR
cassettes, or from any other client's logs — groups them into conversations, and reports per
request whether the prefix invariant P4 holds, the first byte where it breaks (an offset into the
recorded body, with a JSON path such as ``messages[3].content[0].input``), the cacheable prefix
lost, and the theoretical maximum cacheable prefix that ``llmcore bench`` compares its hit rate
against::

    report = audit_bodies(bodies)           # bodies: Sequence[bytes | AuditInput]
    report.requests[5].verdict              # Verdict.BREAK
    report.theoretical_hit_rate             # Σ max_cacheable_tokens ÷ Σ total_tokens

Requests are grouped within a scope (a cassette file, a conversation key such as
``prompt_cache_key`` or a JSONL envelope's ``conversation``, a ``previous_response_id`` chain;
``group=`` overrides); besides ``stable``/``break``/``new`` the verdicts name allowed kinds
(deferred tools, retries, shorter reruns, server-side continuations, thinking/reasoning drops,
compaction) and a break names its divergence (``tools``, ``system`` or ``messages``) and its
kind: ``prefix`` (a byte changed) or ``parameter`` (a field the provider keys a cache level on,
per the cache-key model of :mod:`llmcore.audit.keymodel`, which also names the byte differences
the provider cannot see); a request the recorded server rejected is ``rejected``. Recorded
responses' usage (:mod:`llmcore.audit.usage`) sits beside the estimated figures; intended breaks
are exempted with a reason (:mod:`llmcore.audit.exemptions`).

It reads wire bodies on its own and shares no code with llmcore's provider modules (V4): only
the generic helpers :mod:`llmcore.jsonbytes`, :mod:`llmcore.tokens` and :mod:`llmcore.errors`
(and :mod:`llmcore._lazy`, which loads each public name's module on first use).

Leaves out: printing (``llmcore audit``, :mod:`llmcore.cli.audit`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from llmcore._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from llmcore.audit._auditor import Auditor, audit_bodies
    from llmcore.audit._shape import (
        ANTHROPIC_MIN_TOKENS,
        PROVIDERS,
        minimum_tokens,
        wire_conflict,
        wire_shape,
    )
    from llmcore.audit.hook import CacheBreakError, CacheBreakWarning, watch
    from llmcore.audit.inputs import read_inputs
    from llmcore.audit.live import LiveAudit, Observation
    from llmcore.audit.matcher import (
        BodyDifference,
        body_matcher,
        first_difference,
        normalize_body,
    )
    from llmcore.audit.report import (
        DIVERGENCES,
        GROUPING_RULE,
        GROUPINGS,
        AuditInput,
        AuditInputError,
        AuditReport,
        RecordedUsage,
        RequestRecord,
        Verdict,
    )

_HOMES: dict[str, str] = {
    **dict.fromkeys(["Auditor", "audit_bodies"], "llmcore.audit._auditor"),
    **dict.fromkeys(
        ["ANTHROPIC_MIN_TOKENS", "PROVIDERS", "minimum_tokens", "wire_conflict", "wire_shape"],
        "llmcore.audit._shape",
    ),
    "read_inputs": "llmcore.audit.inputs",
    **dict.fromkeys(["LiveAudit", "Observation"], "llmcore.audit.live"),
    **dict.fromkeys(["CacheBreakError", "CacheBreakWarning", "watch"], "llmcore.audit.hook"),
    **dict.fromkeys(
        ["BodyDifference", "body_matcher", "first_difference", "normalize_body"],
        "llmcore.audit.matcher",
    ),
    **dict.fromkeys(
        [
            "DIVERGENCES",
            "GROUPING_RULE",
            "GROUPINGS",
            "AuditInput",
            "AuditInputError",
            "AuditReport",
            "RecordedUsage",
            "RequestRecord",
            "Verdict",
        ],
        "llmcore.audit.report",
    ),
}
"""Each public name but :func:`audit_paths` and the module it is loaded from on first use, so
that ``from llmcore.audit import wire_conflict`` loads the shape check and not the auditor."""

__getattr__, __dir__ = _lazy_names(__name__, _HOMES, globals())

__all__ = [
    "ANTHROPIC_MIN_TOKENS",
    "GROUPING_RULE",
    "PROVIDERS",
    "AuditInput",
    "AuditInputError",
    "AuditReport",
    "Auditor",
    "CacheBreakError",
    "CacheBreakWarning",
    "DIVERGENCES",
    "GROUPINGS",
    "LiveAudit",
    "Observation",
    "RecordedUsage",
    "BodyDifference",
    "RequestRecord",
    "Verdict",
    "audit_bodies",
    "audit_paths",
    "body_matcher",
    "first_difference",
    "minimum_tokens",
    "normalize_body",
    "read_inputs",
    "watch",
    "wire_conflict",
    "wire_shape",
]


def audit_paths(
    paths: Sequence[Path],
    provider: str | None = None,
    stdin: Callable[[], bytes] | None = None,
    *,
    group: str | None = None,
) -> AuditReport:
    """Read cassettes, JSONL, corpus cases or folders of them and audit every body in order.

    ``stdin``, when given, supplies the bytes a path ``-`` stands for (JSONL, or a cassette if
    it starts with ``interactions:`` or ``---``; see :func:`~llmcore.audit.inputs.read_stdin`).
    ``group`` overrides the grouping (:data:`GROUPINGS`).

    Raises:
        AuditInputError: An input is missing or malformed (names the file and line or index).
        UnknownProviderError: ``provider`` is not a known name.
    """
    from llmcore.audit._auditor import Auditor, audit_bodies
    from llmcore.audit._collector import fewer_collections
    from llmcore.audit.inputs import read_inputs

    Auditor(provider, group)  # an unknown grouping is refused before any file is read
    with fewer_collections():
        inputs, skipped = read_inputs(paths, stdin)
        return audit_bodies(inputs, provider, skipped=skipped, group=group)
