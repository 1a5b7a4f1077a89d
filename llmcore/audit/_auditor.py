"""The stability auditor (SPEC V1): grouping, P4 verdicts, lost prefix, theoretical maximum.

Requests are taken in input order. Each is scanned (:mod:`llmcore.audit._scan`), given a
provider (``--provider`` or its shape), grouped into a conversation, compared with the previous
request of that conversation (:mod:`llmcore.audit._compare`), and given its theoretical maximum
cacheable prefix: the longest prefix of :mod:`llmcore.tokens` prefix items it shares with any
earlier request to the same provider and model whose cache entry is still alive (for Anthropic,
messages items match only under the same messages-level key: image presence, ``tool_choice``,
thinking — PROVIDER-RULES §1.6). Anthropic counts
whole items and nothing below the model's minimum; OpenAI adds the common leading bytes of the
first differing item and floors to 1,024 + 128·k. Lifetimes apply only when both requests carry
timestamps; a hit refreshes the entry (PROVIDER-RULES §1.4, §2.1).

Leaves out: reading files (:mod:`llmcore.audit.inputs`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Final

from llmcore import tokens
from llmcore.audit import _shape
from llmcore.audit._compare import Prepared, compare
from llmcore.audit._scan import ItemCache, ItemInfo, scan_body
from llmcore.audit.report import AuditInput, AuditInputError, AuditReport, RequestRecord, Verdict
from llmcore.errors import EncodingError

__all__ = ["TOO_DEEP", "Auditor", "audit_bodies"]

TOO_DEEP: Final = "request body is nested too deeply to audit (Python's recursion limit)"
"""Why a body nested deeper than the scanner and walkers can recurse is refused."""

_FANOUT_LIMIT: Final = 256
"""At most this many sibling items (newest first) are searched for OpenAI's partial match."""


class _Node:
    """A node of the per-(provider, model) prefix trie: one prefix of items seen before."""

    __slots__ = ("children", "data", "expiry")

    def __init__(self, data: bytes) -> None:
        self.children: dict[object, _Node] = {}
        self.data = data
        self.expiry = -math.inf


class _Conversation:
    __slots__ = ("number", "last", "active")

    def __init__(self, number: int, last: Prepared) -> None:
        self.number = number
        self.last = last
        self.active = last.index


def _head(p: Prepared) -> ItemInfo | None:
    return p.hist[p.lead] if p.lead < len(p.hist) else None


def _leading_run(a: Prepared, b: Prepared) -> int:
    run = 0
    for x, y in zip(a.hist[a.lead :], b.hist[b.lead :], strict=False):
        if not (x is y or x.norm == y.norm):
            break
        run += 1
    return run


def _run_from(items: Sequence[ItemInfo], start: int, tail: Sequence[ItemInfo]) -> int:
    run = 0
    for x, y in zip(items[start:], tail, strict=False):
        if x.norm != y.norm:
            break
        run += 1
    return run


def _better(run: int, conv: _Conversation, best_run: int, best: _Conversation | None) -> bool:
    """A longer run wins; an equal run goes to the most recently active conversation."""
    if run != best_run:
        return run > best_run
    return best is not None and conv.active > best.active


class Auditor:
    """Audits request bodies one at a time; :meth:`report` gives the findings so far.

    Args:
        provider: Provider name for every body, or ``None`` to read each body's shape.
    """

    def __init__(self, provider: str | None = None) -> None:
        self._provider = provider
        self._cache = ItemCache()
        self._hints: dict[str, list[ItemInfo]] = {}
        self._conversations: list[_Conversation] = []
        self._by_head: dict[tuple[str, str], dict[int, _Conversation]] = {}
        self._tries: dict[tuple[str, str], _Node] = {}
        self._records: list[RequestRecord] = []
        self._warnings: dict[str, str] = {}

    def add(self, item: bytes | AuditInput) -> RequestRecord:
        """Audit the next request body.

        Raises:
            AuditInputError: The body is not a JSON object of a known request shape, or nests
                too deeply to walk (about 1,000 levels for the scanner, a few hundred inside
                message content); ``location`` is the body's source.
            UnknownProviderError: The auditor's provider name is unknown.
        """
        inp = item if isinstance(item, AuditInput) else AuditInput(body=item)
        index = len(self._records)
        source = inp.source if inp.source != "<input>" else f"<input>[{index}]"
        where = inp.location or source
        try:
            record = self._add(inp, index, source, where)
        except RecursionError:
            raise AuditInputError(TOO_DEEP, location=where) from None
        except EncodingError as exc:  # a value jsonbytes cannot write (nested too deeply)
            raise AuditInputError(exc.message, location=where) from None
        if not inp.key_order_recorded:
            record = replace(record, key_order_recorded=False)
        self._records.append(record)
        return record

    def _add(self, inp: AuditInput, index: int, source: str, where: str) -> RequestRecord:
        """Scan, group and judge one body (``where`` is the location errors name).

        Everything that can fail runs before any grouping state changes: scanning, shape facts
        and token items build :class:`Prepared` first.
        """
        body = scan_body(inp.body, self._cache, self._hints, location=where)
        provider = _shape.detect_provider(body, self._provider, location=where, uri=inp.uri)
        if self._provider is not None:
            _shape.note_conflict(self._warnings, body, self._provider, source, inp.uri)
        model = _shape.model_of(body, inp.uri)
        prep = Prepared(
            index=index,
            source=source,
            timestamp=inp.timestamp,
            provider=provider,
            model=model,
            body=body,
            anthropic=_shape.anthropic_rules(provider, model, body),
        )
        return self._judge(prep)

    def report(self, skipped: Sequence[str] = ()) -> AuditReport:
        """Return the report over every request added so far."""
        return AuditReport(
            requests=tuple(self._records),
            conversations=len(self._conversations),
            skipped=tuple(skipped),
            warnings=tuple(self._warnings.values()),
        )

    # --- grouping ----------------------------------------------------------------------------

    def _group(self, prep: Prepared) -> tuple[_Conversation | None, str]:
        head = _head(prep)
        if head is None:
            return None, "new conversation: the request has no history messages"
        best, best_run = None, 0
        for conv in self._by_head.get((prep.provider, head.norm), {}).values():
            run = _leading_run(conv.last, prep)
            if run > best_run or (
                run == best_run and best is not None and conv.active > best.active
            ):
                best, best_run = conv, run
        if best is not None and best_run > 0:
            return best, (
                f"joined: shares {best_run} leading history message"
                f"{'s' if best_run != 1 else ''} with request {best.last.index}"
            )
        if _shape.msg(head).summary:
            return self._group_compacted(prep)
        return None, "new conversation: no earlier conversation shares its first history message"

    def _group_compacted(self, prep: Prepared) -> tuple[_Conversation | None, str]:
        tail = prep.hist[prep.lead + 1 :]
        best, best_run = None, 0
        if tail:
            for conv in self._conversations:
                if conv.last.provider != prep.provider:
                    continue
                hist = conv.last.hist
                for start, info in enumerate(hist):
                    if info.norm != tail[0].norm:
                        continue
                    run = _run_from(hist, start, tail)
                    if run > best_run or (
                        run == best_run and best is not None and conv.active > best.active
                    ):
                        best, best_run = conv, run
        if best is None:
            return None, "new conversation: a compaction summary with no earlier conversation"
        return best, (
            f"joined by compaction: {best_run} message{'s' if best_run != 1 else ''} after the "
            f"summary continue request {best.last.index}"
        )

    def _index(self, conv: _Conversation, old: Prepared | None) -> None:
        if old is not None:
            old_head = _head(old)
            if old_head is not None:
                self._by_head.get((old.provider, old_head.norm), {}).pop(conv.number, None)
        head = _head(conv.last)
        if head is not None:
            self._by_head.setdefault((conv.last.provider, head.norm), {})[conv.number] = conv

    # --- judging -----------------------------------------------------------------------------

    def _judge(self, prep: Prepared) -> RequestRecord:
        conv, how = self._group(prep)
        previous = conv.last if conv is not None else None
        change = compare(previous, prep) if previous is not None else None
        if conv is None:
            conv = _Conversation(len(self._conversations), prep)
            self._conversations.append(conv)
            self._index(conv, None)
        else:
            conv.last, conv.active = prep, prep.index
            self._index(conv, previous)
        verdict = Verdict.NEW if previous is None else Verdict.STABLE
        detail = None
        if previous is not None and previous.model != prep.model:
            detail = f"model changed from {previous.model!r} to {prep.model!r}"
        max_cacheable = self._theoretical(prep)
        return RequestRecord(
            index=prep.index,
            source=prep.source,
            provider=prep.provider,
            model=prep.model,
            conversation=conv.number,
            compared_with=previous.index if previous is not None else None,
            grouping=how,
            verdict=change.verdict if change is not None else verdict,
            changes=change.changes if change is not None else (),
            first_break_offset=change.offset if change is not None else None,
            path=change.path if change is not None else None,
            detail=change.detail if change is not None else detail,
            lost_bytes=change.lost_bytes if change is not None else 0,
            lost_tokens=_lost_tokens(previous, prep) if change is not None else 0,
            total_tokens=prep.total_tokens,
            max_cacheable_tokens=max_cacheable,
        )

    # --- theoretical maximum -----------------------------------------------------------------

    def _theoretical(self, prep: Prepared) -> int:
        root = self._tries.setdefault((prep.provider, prep.model), _Node(b""))
        now = prep.timestamp
        node, shared, k = root, 0, 0
        toks = prep.toks
        keys = _trie_keys(prep)
        while k < len(toks):
            child = node.children.get(keys[k])
            if child is None or (now is not None and child.expiry < now):
                break
            shared += toks[k][2]
            node, k = child, k + 1
        if prep.anthropic:
            best = shared if shared >= _shape.minimum_tokens(prep.model, True) else 0
        else:
            partial = _partial(node, toks[k], now) if k < len(toks) else 0
            best = tokens.openai_cacheable(shared + partial)
        self._insert(root, prep, keys)
        return best

    def _insert(self, root: _Node, prep: Prepared, keys: list[object]) -> None:
        now = prep.timestamp
        expiry = math.inf if now is None else now + _shape.cache_ttl(prep.body, prep.anthropic)
        node = root
        for key, (_key, data, _count, _section) in zip(keys, prep.toks, strict=True):
            child = node.children.get(key)
            if child is None:
                child = _Node(data)
                node.children[key] = child
            child.expiry = max(child.expiry, expiry)
            node = child


def _trie_keys(prep: Prepared) -> list[object]:
    """The prefix items' keys; Anthropic message items also carry the messages-level key."""
    if not prep.anthropic:
        return [tok[0] for tok in prep.toks]
    level = _shape.messages_level(prep.body, prep.provider)
    last = _shape.SECTIONS[prep.provider][-1]
    return [(tok[0], level) if tok[3] == last else tok[0] for tok in prep.toks]


def _partial(node: _Node, tok: _shape.TokenItem, now: float | None) -> int:
    """OpenAI: tokens of the longest common leading bytes of the first differing item."""
    section, data = tok[3], tok[1]
    best = 0
    for key, child in itertools.islice(reversed(node.children.items()), _FANOUT_LIMIT):
        if now is not None and child.expiry < now:
            continue
        if isinstance(key, tuple) and key[0] == section:
            best = max(best, tokens.common_prefix_len(child.data, data))
    return best // tokens.BYTES_PER_TOKEN


def _lost_tokens(p: Prepared | None, c: Prepared) -> int:
    """Tokens of ``p``'s prefix that ``c`` does not share (item rule as in the maximum)."""
    if p is None:
        return 0
    shared, k = 0, 0
    for a, b in zip(p.toks, c.toks, strict=False):
        if a[0] != b[0]:
            break
        shared += a[2]
        k += 1
    if not c.anthropic and k < len(p.toks) and k < len(c.toks) and p.toks[k][3] == c.toks[k][3]:
        shared += tokens.common_prefix_len(p.toks[k][1], c.toks[k][1]) // tokens.BYTES_PER_TOKEN
    return max(0, p.total_tokens - shared)


def audit_bodies(
    bodies: Iterable[bytes | AuditInput],
    provider: str | None = None,
    *,
    skipped: Sequence[str] = (),
) -> AuditReport:
    """Audit request bodies in order and return the report (SPEC V1).

    Args:
        bodies: Request bodies as sent (``bytes``) or :class:`AuditInput` with source and time.
        provider: A name of :data:`~llmcore.audit.PROVIDERS` for every body, or ``None`` to
            read each body's shape (the URI's first, when the input records one).
        skipped: Inputs the caller passed over, carried into the report.

    Returns:
        One :class:`RequestRecord` per body and the totals; the theoretical hit rate for
        ``llmcore bench`` is :attr:`AuditReport.theoretical_hit_rate`.

    Raises:
        AuditInputError: A body is not UTF-8 JSON of a known request shape (names its source).
        UnknownProviderError: ``provider`` is not a known name.
    """
    auditor = Auditor(provider)
    for body in bodies:
        auditor.add(body)
    return auditor.report(skipped)
