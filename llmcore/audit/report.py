"""The auditor's values: inputs, verdicts, per-request records and the report (SPEC V1).

Leaves out: how the numbers are computed (:mod:`llmcore.audit._auditor`) and how they are
printed (:mod:`llmcore.cli.audit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.audit.usage import RecordedUsage
from llmcore.errors import RequestFileError

__all__ = [
    "GROUPING_RULE",
    "AuditInput",
    "AuditInputError",
    "AuditReport",
    "DIVERGENCES",
    "GROUPINGS",
    "RecordedUsage",
    "RequestRecord",
    "Verdict",
]

GROUPING_RULE: Final = (
    "within its scope (by default: a cassette's requests within their file, JSONL lines and "
    "plain bodies across the whole input, and a conversation key, where a request carries one, "
    "only with the same key; --group file|prefix|key overrides), "
    "a request joins the earlier conversation (same provider) whose latest request shares the "
    "longest leading run of history messages with it, messages compared on their normalized "
    "view (parsed JSON, escape-, whitespace- and key-order-insensitive, breakpoints removed, a "
    "one-text-block content read as its string; leading system/developer messages not "
    "counted; ties: the most recently active); a request whose history starts with a "
    "'# Conversation so far' summary joins the conversation holding the longest run of the "
    "messages after the summary; a Responses request whose previous_response_id names a recorded "
    "response joins that response's conversation; inside a file or key scope, a request that "
    "shares no leading message but keeps the model, tools and system of the scope's latest "
    "request joins it (a break at its first message); a request whose first message differs "
    "joins the conversation whose latest request shares the longest run of normalized messages "
    "after the first, when that run is 2 or more, or 1 with the same normalized tools (as a set) "
    "and system (a break at its first message); otherwise it starts a new conversation"
)
"""How requests are grouped into conversations (SPEC V1), as the report states it."""


class AuditInputError(RequestFileError):
    """An audit input cannot be read: ``location`` names the file and line or index."""


class Verdict(StrEnum):
    """What the auditor concluded about one request (SPEC V1, P4)."""

    NEW = "new"
    """The first request of its conversation: nothing to compare with."""
    STABLE = "stable"
    """P4 holds: the previous request's prefix is unchanged (breakpoints aside)."""
    BREAK = "break"
    """P4 is broken: a byte of the previous prefix changed."""
    THINKING_DROPPED = "thinking_dropped"
    """Allowed (M4): Anthropic thinking blocks left an earlier assistant message after its turn."""
    REASONING_DROPPED = "reasoning_dropped"
    """Allowed (M4): Responses reasoning items (and the ``id``/``status`` after them) left."""
    COMPACTION = "compaction"
    """Allowed (C1): the history was replaced by a ``# Conversation so far`` summary, or by
    the ``compaction`` item OpenAI's ``/responses/compact`` returns
    (https://platform.openai.com/docs/api-reference/responses/compact)."""
    DEFERRED_TOOLS = "deferred_tools"
    """Allowed: Anthropic tools marked ``defer_loading: true`` were added or removed. "Deferred
    tools are not included in the system-prompt prefix … The prefix is untouched, so prompt
    caching is preserved" (https://platform.claude.com/docs/en/agents-and-tools/tool-use/
    tool-use-with-prompt-caching, section "defer_loading and tool search")."""
    RETRY = "retry"
    """Allowed: the body is byte-identical to the previous request's (a retried request); its
    whole prefix is the one just written (PROVIDER-RULES §1.2, §2: a prefix match)."""
    SHORTER_RERUN = "shorter_rerun"
    """Allowed: the request is a proper prefix of the previous one (the same tools and system,
    history cut short): a rerun from an earlier point reads the earlier cached prefix, nothing
    it holds has changed (P4 concerns bytes kept, not bytes dropped from the end)."""
    REJECTED = "rejected"
    """Not judged: the recorded server rejected the request (status ≥ 400) or the recording
    holds no response. Nothing was cached or read, so it is never the baseline the next
    request is compared with; listed, never failing."""
    CONTINUATION = "continuation"
    """Allowed: a Responses request continuing a recorded response server-side
    (``previous_response_id``, https://platform.openai.com/docs/api-reference/responses/create):
    the body carries only the appended input items; its tools and instructions match the request
    that produced that response."""


DIVERGENCES: Final = ("tools", "system", "messages")
"""Where a break diverges (:attr:`RequestRecord.divergence`): the tool definitions, the system
prompt (Anthropic ``system``, OpenAI ``instructions`` or leading system/developer messages), or
the conversation's messages (``messages`` / ``input``)."""

GROUPINGS: Final = ("file", "prefix", "key")
"""Grouping overrides (``--group``): ``file`` groups cassette and JSONL requests only within
their file, ignoring conversation keys; ``prefix`` groups everything by the longest shared run,
ignoring files and keys; ``key`` groups by conversation key only (requests without one by the
longest shared run across the input). ``None`` (the default) groups a cassette's requests within
their file and everything else across the input, and a request that carries a key only with
requests carrying the same key (within its cassette file, for a cassette)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditInput:
    """One recorded request body and where it came from."""

    body: bytes
    """The exact request body bytes as sent."""
    source: str = "<input>"
    """Where the body came from, for reports and errors (``run.jsonl:3``)."""
    timestamp: float | None = None
    """When it was sent (seconds since the Unix epoch), if the input records it; enables TTLs."""
    location: str | None = None
    """Where errors about the body point, when more precise than ``source`` (a cassette
    interaction's line: ``run.yaml:12: interactions[3]``); ``None`` means ``source``."""
    uri: str | None = None
    """The request URI as recorded (cassettes), or ``None``; when set, its path decides the
    wire shape (:func:`llmcore.audit._shape.shape_from_uri`) and, for Gemini and Bedrock, the
    model when the body names none."""
    skippable: bool = False
    """``True`` for a body found by walking a folder: a body the auditor cannot
    read (recorders truncate some) is then listed in :attr:`AuditReport.skipped` with the
    reason instead of failing the run (``--strict`` still exits 2)."""
    key_order_recorded: bool = True
    """``False`` when the body was stored as a parsed mapping (pydantic-ai's ``parsed_body``)
    and written back as JSON here: its key order and bytes are not the ones sent, so a key-order
    change cannot be seen and byte offsets point into the rewritten JSON."""
    file: str | None = None
    """The file the body was read from (cassette, JSONL or corpus case), for ``--group file``
    and exemptions; ``None`` for bodies passed directly."""
    position: int | None = None
    """The request's number within ``file`` as its source shows it: a cassette's interaction
    index (``interactions[3]`` → 3) or a JSONL line number (``run.jsonl:3`` → 3)."""
    scope: str | None = None
    """The default grouping boundary: requests are grouped only with requests of the same
    scope. Cassette readers set it to the file (a cassette is one test's traffic); ``None``
    groups across the whole input by the longest shared run (JSONL logs, plain bodies)."""
    conversation_key: str | None = None
    """An explicit conversation key carried beside the body (a JSONL envelope's
    ``"conversation"``); keys inside the body are read by the auditor."""
    response_id: str | None = None
    """The recorded response's ``id`` (cassettes), for ``previous_response_id`` chains."""
    usage: RecordedUsage | None = None
    """Token usage the recorded response reported, if any (:mod:`llmcore.audit.usage`)."""
    status: int | None = None
    """The recorded response's HTTP status (a cassette's ``response.status.code``, an
    envelope's ``status``), or ``None`` when not recorded."""
    answered: bool = True
    """``False`` when the recording says no response came (a cassette interaction with
    ``response: null``, an envelope with ``"status": null``)."""

    @property
    def rejection(self) -> str | None:
        """Why the request was not processed (status ≥ 400, no response), or ``None``."""
        if not self.answered:
            return "no response was recorded"
        if self.status is not None and self.status >= 400:
            return f"the recorded response has status {self.status}"
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestRecord:
    """The auditor's findings for one request."""

    index: int
    """Position of the request in the input sequence (0-based)."""
    source: str
    """Where the body came from."""
    provider: str
    """``anthropic``, ``openai-chat``, ``openai-responses``, ``openrouter``, ``gemini`` or
    ``bedrock-converse``."""
    model: str
    """The body's ``model`` (empty when absent)."""
    conversation: int
    """Conversation number (0-based, in order of first appearance)."""
    compared_with: int | None
    """Index of the previous request of the conversation, or ``None`` for the first."""
    grouping: str
    """How the request was grouped, in words."""
    verdict: Verdict
    """The P4 verdict (the most serious change found)."""
    changes: tuple[Verdict, ...]
    """Every kind of change found (allowed kinds and/or ``break``); empty when stable or new."""
    first_break_offset: int | None
    """Byte offset, in this request's recorded body, of the first byte that differs from the
    previous request's prefix (``None`` when stable or new); for a ``parameter`` break, where
    the field's value starts (the first image: the message holding it; a field removed: the
    start of the level it discards)."""
    path: str | None
    """JSON path of the deepest value holding that byte (``messages[3].content[0].input``)."""
    detail: str | None
    """What differs, in one line, with short snippets of both sides."""
    lost_bytes: int
    """Bytes of the previous request's normalized prefix items from the first changed item on
    (as recorded, breakpoints removed): what the change discards of it. A cache loss only
    where :attr:`uncacheable` is ``None``; the report's totals count no other."""
    lost_tokens: int
    """Estimated tokens of the previous request's prefix that this request no longer shares
    (:mod:`llmcore.tokens` prefix items); like :attr:`lost_bytes`, a loss only where
    :attr:`uncacheable` is ``None``."""
    total_tokens: int
    """Estimated tokens of this request's cacheable prefix (tools, system, messages)."""
    max_cacheable_tokens: int
    """Theoretical maximum cached tokens for this request (SPEC V1, V5), estimated like
    ``total_tokens``: for Anthropic-style caching (Anthropic, Converse, OpenRouter with
    breakpoints), only what the request's own breakpoints can read of what earlier requests'
    breakpoints wrote (:mod:`llmcore.audit._maximum`)."""
    ideal_cacheable_tokens: int | None = None
    """What ideal breakpoints would reach: the longest live prefix shared with an earlier
    request (equal to :attr:`max_cacheable_tokens` where no breakpoints are needed)."""
    breakpoints: int | None = None
    """How many breakpoints the request carries where the provider caches only marked prefixes
    (automatic mode counts one), else ``None``."""
    not_visible: str | None = None
    """Why the request's cache use is not visible in the input (server-held state, a server-side
    tool loop, a cache warm before the recording), or ``None`` (:mod:`llmcore.audit._visible`)."""
    key_order_recorded: bool = True
    """``False`` when the body was read from a parsed mapping (see
    :attr:`AuditInput.key_order_recorded`): ``first_break_offset`` is then an offset into the
    rewritten JSON, not into bytes that were sent."""
    divergence: str | None = None
    """For a break, where it diverges: one of :data:`DIVERGENCES`; else ``None``."""
    file: str | None = None
    """The file the request was read from (:attr:`AuditInput.file`)."""
    position: int | None = None
    """Its number within that file (:attr:`AuditInput.position`)."""
    usage: RecordedUsage | None = None
    """What the recorded response reported (input, cache read, cache write), if recorded."""
    exemption: str | None = None
    """For an exempted break, the exemption's reason (:mod:`llmcore.audit.exemptions`)."""
    kind: str | None = None
    """For a break: ``prefix`` (a byte of the cached prefix changed) or ``parameter`` (a field
    the provider keys a cache level on changed, :mod:`llmcore.audit.keymodel`); else ``None``."""
    parameter: str | None = None
    """For a ``parameter`` break, the field: ``model``, ``tool_choice``,
    ``thinking.budget_tokens``, ``response_format``, ``text.format``, ``first image``, …"""
    uncacheable: str | None = None
    """For a change, why it loses nothing: no cache hit on the previous prefix was possible (it
    is under the model's minimum cacheable prefix, PROVIDER-RULES §1.3, §2.1), in one line;
    else ``None``. The report shows no loss for such a request and leaves it out of
    :attr:`AuditReport.lost_bytes` and :attr:`AuditReport.lost_tokens`."""
    notes: tuple[str, ...] = ()
    """Byte differences the provider cannot see (the cache-key model's equivalences), one line
    each: JSON escape forms, whitespace between JSON tokens, a string content and one text
    block."""

    @property
    def failing(self) -> bool:
        """Whether this request fails the audit: a break that no exemption covers."""
        return self.verdict is Verdict.BREAK and self.exemption is None

    @property
    def theoretical_hit_rate(self) -> float:
        """``max_cacheable_tokens ÷ total_tokens`` (estimated; 0.0 without tokens)."""
        return self.max_cacheable_tokens / self.total_tokens if self.total_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Return the record as JSON-ready values (keys in field order)."""
        return {
            "request": self.index,
            "source": self.source,
            "provider": self.provider,
            "model": self.model,
            "conversation": self.conversation,
            "compared_with": self.compared_with,
            "grouping": self.grouping,
            "verdict": str(self.verdict),
            "changes": [str(kind) for kind in self.changes],
            "first_break_offset": self.first_break_offset,
            "path": self.path,
            "detail": self.detail,
            "lost_bytes": self.lost_bytes,
            "lost_tokens": self.lost_tokens,
            "total_tokens": self.total_tokens,
            "max_cacheable_tokens": self.max_cacheable_tokens,
            "ideal_cacheable_tokens": self.ideal_cacheable_tokens,
            "breakpoints": self.breakpoints,
            "not_visible": self.not_visible,
            "key_order_recorded": self.key_order_recorded,
            "divergence": self.divergence,
            "kind": self.kind,
            "parameter": self.parameter,
            "notes": list(self.notes),
            "uncacheable": self.uncacheable,
            "file": self.file,
            "position": self.position,
            "token_counts": "estimated",
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "recorded_usage": self.usage.to_dict() if self.usage is not None else None,
            "recorded_hit_rate": self.usage.hit_rate if self.usage is not None else None,
            "exempted": self.exemption is not None,
            "exemption_reason": self.exemption,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditReport:
    """Everything the auditor found in one input sequence."""

    requests: tuple[RequestRecord, ...]
    """One record per request, in input order."""
    conversations: int
    """How many conversations the requests were grouped into."""
    skipped: tuple[str, ...] = ()
    """Inputs that were passed over, each ``path: reason`` (files that are not HTTP
    request cassettes, JSONL or JSON bodies; interactions that are not model requests)."""
    warnings: tuple[str, ...] = ()
    """Things the run did as asked but the input contradicts (a ``--provider`` that is not the
    body's shape), one line each."""
    """Inputs that were passed over (non-body files in a folder, non-API interactions)."""
    group: str | None = None
    """The grouping override the audit ran with (:data:`GROUPINGS`), ``None`` for the default."""
    diagnoses: tuple[str, ...] = ()
    """One line per conversation whose caching is set up wrong in a way the maximum shows (a
    conversation of Anthropic-style caching with no breakpoint in any request)."""

    @property
    def stable(self) -> bool:
        """Whether no request broke P4 (allowed kinds and exempted breaks do not count)."""
        return not any(r.failing for r in self.requests)

    @property
    def breaks(self) -> int:
        """Number of requests whose verdict is ``break`` (exempted ones included)."""
        return sum(1 for r in self.requests if r.verdict is Verdict.BREAK)

    @property
    def prefix_breaks(self) -> int:
        """Number of breaks of kind ``prefix``: a byte of a cached prefix changed (P4 itself).

        A ``parameter`` break keeps every byte (a keyed field changed), so it is not counted.
        """
        return sum(1 for r in self.requests if r.verdict is Verdict.BREAK and r.kind == "prefix")

    @property
    def exempted(self) -> int:
        """Number of breaks an exemption covers."""
        return sum(1 for r in self.requests if r.exemption is not None)

    @property
    def rejected(self) -> tuple[RequestRecord, ...]:
        """The requests not judged: rejected by the recorded server, or never answered."""
        return tuple(r for r in self.requests if r.verdict is Verdict.REJECTED)

    @property
    def recorded(self) -> tuple[RequestRecord, ...]:
        """The requests whose recorded response reported usage."""
        return tuple(r for r in self.requests if r.usage is not None)

    @property
    def recorded_usage(self) -> RecordedUsage | None:
        """Σ of the recorded usage over :attr:`recorded` (``None`` when none was recorded)."""
        found = [r.usage for r in self.requests if r.usage is not None]
        return RecordedUsage.total(found) if found else None

    def counts(self) -> dict[str, int]:
        """Return the number of requests per verdict (every verdict listed, in enum order)."""
        out = {str(v): 0 for v in Verdict}
        for r in self.requests:
            out[str(r.verdict)] += 1
        return out

    @property
    def total_tokens(self) -> int:
        """Σ ``total_tokens`` over all requests."""
        return sum(r.total_tokens for r in self.requests)

    @property
    def max_cacheable_tokens(self) -> int:
        """Σ ``max_cacheable_tokens`` over all requests."""
        return sum(r.max_cacheable_tokens for r in self.requests)

    @property
    def theoretical_hit_rate(self) -> float:
        """Σ max_cacheable_tokens ÷ Σ total_tokens (0.0 when there are no tokens)."""
        total = self.total_tokens
        return self.max_cacheable_tokens / total if total else 0.0

    @property
    def lost_bytes(self) -> int:
        """Σ ``lost_bytes`` over ``break`` requests that could lose cache (no ``uncacheable``)."""
        return sum(r.lost_bytes for r in self._losing())

    @property
    def lost_tokens(self) -> int:
        """Σ ``lost_tokens`` over ``break`` requests that could lose cache (no ``uncacheable``)."""
        return sum(r.lost_tokens for r in self._losing())

    def _losing(self) -> list[RequestRecord]:
        return [r for r in self.requests if r.verdict is Verdict.BREAK and r.uncacheable is None]

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-ready values."""
        return {
            "stable": self.stable,
            "requests": len(self.requests),
            "conversations": self.conversations,
            "grouping_rule": GROUPING_RULE,
            "group": self.group,
            "counts": self.counts(),
            "lost_bytes": self.lost_bytes,
            "lost_tokens": self.lost_tokens,
            "total_tokens": self.total_tokens,
            "max_cacheable_tokens": self.max_cacheable_tokens,
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "token_counts": "estimated",
            "recorded_requests": len(self.recorded),
            "recorded_usage": usage.to_dict() if (usage := self.recorded_usage) else None,
            "recorded_hit_rate": usage.hit_rate if usage else None,
            "exempted": self.exempted,
            "skipped": list(self.skipped),
            "warnings": list(self.warnings),
            "diagnoses": list(self.diagnoses),
            "records": [r.to_dict() for r in self.requests],
        }

    def to_json(self) -> bytes:
        """Return :meth:`to_dict` as compact JSON bytes (:func:`llmcore.jsonbytes.dumps`)."""
        return jsonbytes.dumps(self.to_dict())
