"""The auditor's values: inputs, verdicts, per-request records and the report (SPEC V1).

Leaves out: how the numbers are computed (:mod:`llmcore.audit._auditor`) and how they are
printed (:mod:`llmcore.cli.audit`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.errors import RequestFileError

__all__ = [
    "GROUPING_RULE",
    "AuditInput",
    "AuditInputError",
    "AuditReport",
    "RequestRecord",
    "Verdict",
]

GROUPING_RULE: Final = (
    "a request joins the earlier conversation (same provider) whose latest request shares the "
    "longest leading run of history messages with it (leading system/developer messages not "
    "counted; ties: the most recently active); a request whose history starts with a "
    "'# Conversation so far' summary joins the conversation holding the longest run of the "
    "messages after the summary; otherwise it starts a new conversation"
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
    """Allowed (C1): the history was replaced by a ``# Conversation so far`` summary."""


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
    key_order_recorded: bool = True
    """``False`` when the body was stored as a parsed mapping (pydantic-ai's ``parsed_body``)
    and written back as JSON here: its key order and bytes are not the ones sent, so a key-order
    change cannot be seen and byte offsets point into the rewritten JSON."""


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
    previous request's prefix (``None`` when stable or new)."""
    path: str | None
    """JSON path of the deepest value holding that byte (``messages[3].content[0].input``)."""
    detail: str | None
    """What differs, in one line, with short snippets of both sides."""
    lost_bytes: int
    """Bytes of the previous request's normalized prefix items from the first changed item on
    (as recorded, breakpoints removed)."""
    lost_tokens: int
    """Estimated tokens of the previous request's prefix that this request no longer shares
    (:mod:`llmcore.tokens` prefix items)."""
    total_tokens: int
    """Estimated tokens of this request's cacheable prefix (tools, system, messages)."""
    max_cacheable_tokens: int
    """Theoretical maximum cached tokens for this request (SPEC V1)."""
    key_order_recorded: bool = True
    """``False`` when the body was read from a parsed mapping (see
    :attr:`AuditInput.key_order_recorded`): ``first_break_offset`` is then an offset into the
    rewritten JSON, not into bytes that were sent."""

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
            "key_order_recorded": self.key_order_recorded,
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

    @property
    def stable(self) -> bool:
        """Whether no request broke P4 (allowed kinds do not count)."""
        return all(r.verdict is not Verdict.BREAK for r in self.requests)

    @property
    def breaks(self) -> int:
        """Number of requests whose verdict is ``break``."""
        return sum(1 for r in self.requests if r.verdict is Verdict.BREAK)

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
        """Σ ``lost_bytes`` over requests whose verdict is ``break``."""
        return sum(r.lost_bytes for r in self.requests if r.verdict is Verdict.BREAK)

    @property
    def lost_tokens(self) -> int:
        """Σ ``lost_tokens`` over requests whose verdict is ``break``."""
        return sum(r.lost_tokens for r in self.requests if r.verdict is Verdict.BREAK)

    def to_dict(self) -> dict[str, Any]:
        """Return the report as JSON-ready values."""
        return {
            "stable": self.stable,
            "requests": len(self.requests),
            "conversations": self.conversations,
            "grouping_rule": GROUPING_RULE,
            "counts": self.counts(),
            "lost_bytes": self.lost_bytes,
            "lost_tokens": self.lost_tokens,
            "total_tokens": self.total_tokens,
            "max_cacheable_tokens": self.max_cacheable_tokens,
            "theoretical_hit_rate": self.theoretical_hit_rate,
            "skipped": list(self.skipped),
            "warnings": list(self.warnings),
            "records": [r.to_dict() for r in self.requests],
        }

    def to_json(self) -> bytes:
        """Return :meth:`to_dict` as compact JSON bytes (:func:`llmcore.jsonbytes.dumps`)."""
        return jsonbytes.dumps(self.to_dict())
