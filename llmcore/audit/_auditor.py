"""The stability auditor (SPEC V1): grouping, P4 verdicts, lost prefix, theoretical maximum.

Requests are taken in input order. Each is scanned (:mod:`llmcore.audit._scan`), given a
provider (``--provider`` or its shape), given a scope (its cassette file, its conversation key, or
the whole input; :data:`~llmcore.audit.report.GROUPINGS`), grouped into a conversation within
that scope (or joined to the conversation of the recorded response its ``previous_response_id``
names), compared with the previous
request of that conversation (:mod:`llmcore.audit._compare`; keyed fields by
:mod:`llmcore.audit._parameters`), and given its theoretical maximum
cacheable prefix: the longest prefix of :mod:`llmcore.tokens` prefix items it shares with any
earlier request to the same provider and model whose cache entry is still alive (for Anthropic,
messages items match only under the same messages-level key: image presence, ``tool_choice``,
thinking — PROVIDER-RULES §1.6). Anthropic counts
whole items and nothing below the model's minimum; OpenAI adds the common leading bytes of the
first differing item and floors to 1,024 + 128·k. Lifetimes apply only when both requests carry
timestamps; a hit refreshes the entry (PROVIDER-RULES §1.4, §2.1). A request the recorded
server rejected (status ≥ 400) or never answered is listed as ``rejected`` and changes no state:
it is never a baseline and writes nothing.

Leaves out: reading files (:mod:`llmcore.audit.inputs`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Final

from llmcore import tokens
from llmcore._words import plural
from llmcore.audit import _meaning, _shape
from llmcore.audit._compare import Change, Notes, Prepared, compare, continuation, frame
from llmcore.audit._maximum import Maxima, Maximum, entry_of, uses_breakpoints
from llmcore.audit._parameters import lost_tokens, note_lines, nothing_cached, with_parameters
from llmcore.audit._scan import ItemCache, ItemInfo, scan_body
from llmcore.audit._visible import no_breakpoints, not_visible
from llmcore.audit.report import (
    GROUPINGS,
    AuditInput,
    AuditInputError,
    AuditReport,
    RequestRecord,
    Verdict,
)
from llmcore.errors import EncodingError

__all__ = ["TOO_DEEP", "UNNAMED_KEPT", "Auditor", "audit_bodies"]

TOO_DEEP: Final = "request body is nested too deeply to audit (Python's recursion limit)"
"""Why a body nested deeper than the scanner and walkers can recurse is refused."""
UNNAMED_KEPT: Final = 256
"""Responses requests added without a response id whose answer can still name it
(:meth:`Auditor.responded`), latest kept."""

Scope = tuple[str, ...]
"""A grouping boundary: ``("prefix",)``, ``("file", name)`` or ``("key", key)``."""

_PREFIX: Final[Scope] = ("prefix",)


class _Conversation:
    __slots__ = ("number", "last", "active", "scope")

    def __init__(self, number: int, last: Prepared, scope: Scope) -> None:
        self.number = number
        self.last = last
        self.active = last.index
        self.scope = scope


def conversation_key(inp: AuditInput, body: dict[str, object]) -> str | None:
    """The explicit conversation key a request carries, or ``None``.

    In order: the input's own key (a JSONL envelope's ``conversation``); Responses
    ``previous_response_id`` (a response not recorded earlier in the input) and
    ``conversation`` (a string or ``{"id": …}``,
    https://platform.openai.com/docs/api-reference/responses/create); OpenAI
    ``prompt_cache_key`` (https://platform.openai.com/docs/guides/prompt-caching); Anthropic
    ``metadata.user_id`` (https://docs.anthropic.com/en/api/messages).
    """
    if inp.conversation_key is not None:
        return f"conversation={inp.conversation_key}"
    for name in ("previous_response_id", "conversation", "prompt_cache_key"):
        value = body.get(name)
        if isinstance(value, dict):
            value = value.get("id")
        if isinstance(value, str) and value:
            return f"{name}={value}"
    metadata = body.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, dict) else None
    return f"metadata.user_id={user}" if isinstance(user, str) and user else None


def _head(p: Prepared) -> ItemInfo | None:
    return p.hist[p.lead] if p.lead < len(p.hist) else None


def _leading_run(a: Prepared, b: Prepared) -> int:
    """Leading history messages (after system ones) with equal normalized views."""
    return _meaning.leading_run(a.hist[a.lead :], b.hist[b.lead :])


def _second(p: Prepared) -> ItemInfo | None:
    return p.hist[p.lead + 1] if p.lead + 1 < len(p.hist) else None


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
        group: ``file``, ``prefix`` or ``key`` to override how requests are scoped
            (:data:`~llmcore.audit.report.GROUPINGS`), or ``None`` for the default.

    Raises:
        AuditInputError: ``group`` is not one of :data:`~llmcore.audit.report.GROUPINGS`
            (location ``--group``).
    """

    def __init__(self, provider: str | None = None, group: str | None = None) -> None:
        if group is not None and group not in GROUPINGS:
            raise AuditInputError(
                f"unknown grouping {group!r} (expected one of: {', '.join(GROUPINGS)})",
                location="--group",
            )
        self._group_by = group
        self._responses: dict[tuple[str | None, str], tuple[_Conversation, Prepared]] = {}
        self._unnamed: OrderedDict[int, tuple[_Conversation, Prepared, str | None]] = OrderedDict()
        self._latest: dict[tuple[Scope, str], _Conversation] = {}
        self._provider = provider
        self._cache = ItemCache()
        self._hints: dict[str, list[ItemInfo]] = {}
        self._conversations: list[_Conversation] = []
        self._by_head: dict[tuple[Scope, str, str], dict[int, _Conversation]] = {}
        self._by_second: dict[tuple[Scope, str, str], dict[int, _Conversation]] = {}
        self._maxima = Maxima()
        self._first_seen: set[tuple[Scope, str, str]] = set()
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
        index = self._next_index()
        source = inp.source if inp.source != "<input>" else f"<input>[{index}]"
        where = inp.location or source
        try:
            record = self._add(inp, index, source, where)
        except RecursionError:
            raise AuditInputError(TOO_DEEP, location=where) from None
        except EncodingError as exc:  # a value jsonbytes cannot write (nested too deeply)
            raise AuditInputError(exc.message, location=where) from None
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
        return self._judge(prep, inp)

    def responded(self, index: int, response_id: str) -> bool:
        """Name the response to request ``index`` once it has come (live traffic).

        A later Responses request whose ``previous_response_id`` is ``response_id`` then joins
        that request's conversation, as for a recorded response's id
        (:attr:`~llmcore.audit.report.AuditInput.response_id`). Only the latest
        :data:`UNNAMED_KEPT` Responses requests added without an id can be named.

        Returns:
            Whether request ``index`` was named.
        """
        found = self._unnamed.pop(index, None)
        if found is None:
            return False
        conv, prep, file = found
        self._responses[self._response_key(file, response_id)] = (conv, prep)
        return True

    def _next_index(self) -> int:
        """The index of the next request (a worker of ``--jobs`` numbers its own)."""
        return len(self._records)

    def _maximum(self, prep: Prepared, inp: AuditInput, first: bool) -> tuple[Maximum, str | None]:
        """The request's maxima and its "not visible" label (a worker leaves both to the merge)."""
        most = self._maxima.add(entry_of(prep))
        return most, not_visible(prep, inp.usage, most.maximum, first)

    def report(self, skipped: Sequence[str] = ()) -> AuditReport:
        """Return the report over every request added so far."""
        return AuditReport(
            requests=tuple(self._records),
            conversations=len(self._conversations),
            skipped=tuple(skipped),
            warnings=tuple(self._warnings.values()),
            group=self._group_by,
            diagnoses=no_breakpoints(self._records),
        )

    # --- grouping ----------------------------------------------------------------------------

    def _scope(self, inp: AuditInput, prep: Prepared) -> Scope:
        """The boundary the request is grouped within (see :data:`GROUPINGS`)."""
        if self._group_by in (None, "key"):
            key = conversation_key(inp, prep.body.values)
            if key is not None:  # by default a cassette's keys still stay within the file
                inside = inp.scope if self._group_by is None else None
                return ("key", key) if inside is None else ("key", key, inside)
        if self._group_by == "file":
            return ("file", inp.file or inp.scope or "")
        if self._group_by is None and inp.scope is not None:
            return ("file", inp.scope)
        return _PREFIX

    def _response_key(self, file: str | None, response_id: str) -> tuple[str | None, str]:
        """Where a recorded response id is looked up: within its file, except under ``key``."""
        return (None if self._group_by == "key" else file, response_id)

    def _chained(
        self, prep: Prepared, scope: Scope, file: str | None
    ) -> tuple[_Conversation, Prepared, str] | None:
        """The conversation and request this request continues on the server, and how.

        A ``previous_response_id`` naming a response recorded earlier in the same file (in any
        file under ``--group key``), or a ``conversation`` the earlier request of the same key
        scope used (the server holds that conversation's items:
        https://platform.openai.com/docs/guides/conversation-state). Not under
        ``--group prefix``.
        """
        if self._group_by == "prefix" or prep.provider != "openai-responses":
            return None
        previous = prep.body.values.get("previous_response_id")
        found = (
            self._responses.get(self._response_key(file, previous))
            if isinstance(previous, str)
            else None
        )
        if found is not None and self._group_by == "file" and found[0].scope != scope:
            return None
        if found is not None:
            conv, request = found
            return (
                conv,
                request,
                (f"joined: previous_response_id names the response to request {request.index}"),
            )
        named = prep.body.values.get("conversation")
        if scope[0] != "key" or not (isinstance(named, str | dict) and named):
            return None
        latest = self._latest.get((scope, prep.provider))
        if latest is None:
            return None
        return (
            latest,
            latest.last,
            (
                f"joined: the conversation parameter names the server-side conversation of request"
                f" {latest.last.index}"
            ),
        )

    def _group(self, prep: Prepared, scope: Scope) -> tuple[_Conversation | None, str]:
        """Find the conversation ``prep`` continues, with the rule that found it in words.

        Longest shared run of history messages first; a compaction summary joins what its tail
        continues. Inside a file or key scope, a request whose first message differs from the
        latest one's, with the same model, tools and system, continues it (a break at that
        message, issue 11) — in a file scope only when the request goes on past its first
        message: a lone first message in a cassette is a fresh run of the test (pydantic-ai's
        tool-search evaluations send one such prompt per run), while an explicit key says the
        requests are one conversation.
        """
        head = _head(prep)
        if head is None:
            return None, "new conversation: the request has no history messages"
        best, best_run = None, 0
        for conv in self._by_head.get(
            (scope, prep.provider, _meaning.normalized(head)), {}
        ).values():
            run = _leading_run(conv.last, prep)
            if run > best_run or (
                run == best_run and best is not None and conv.active > best.active
            ):
                best, best_run = conv, run
        if best is not None and best_run > 0:
            return best, (
                f"joined: shares {plural(best_run, 'leading history message')} with request "
                f"{best.last.index}"
            )
        if _shape.msg(head).summary:
            return self._group_compacted(prep, scope)
        latest = self._latest.get((scope, prep.provider))
        if (
            scope is not _PREFIX
            and (scope[0] == "key" or len(prep.hist) - prep.lead > 1)
            and latest is not None
            and latest.last.model == prep.model  # the cache is per model
            and frame(latest.last) == frame(prep)
        ):
            return latest, (
                f"joined: same model, tools and system as request {latest.last.index} of its "
                f"{scope[0]} scope, first message differs"
            )
        found = self._group_by_tail(prep, scope)
        if found is not None:
            return found
        return None, "new conversation: no earlier conversation shares its first history message"

    def _group_by_tail(self, prep: Prepared, scope: Scope) -> tuple[_Conversation, str] | None:
        """The conversation whose history after its first message this request's continues.

        Its first message was edited: the request joins the conversation (ties: the most
        recently active) whose latest request shares the longest run of normalized messages
        after the first, when that run is at least 2 messages, or 1 with the same normalized
        tools (as a set) and system (:mod:`llmcore.audit._meaning`).
        """
        second = _second(prep)
        if second is None:
            return None
        key = (scope, prep.provider, _meaning.normalized(second))
        best, best_run = None, 0
        sections = _shape.SECTIONS[prep.provider]
        for conv in self._by_second.get(key, {}).values():
            last = conv.last
            run = _meaning.leading_run(last.hist[last.lead + 1 :], prep.hist[prep.lead + 1 :])
            if run < 2 and _meaning.normalized_frame(last, sections) != _meaning.normalized_frame(
                prep, sections
            ):
                continue
            if _better(run, conv, best_run, best):
                best, best_run = conv, run
        if best is None:
            return None
        return best, (
            f"joined: its first history message differs, the {best_run} after it match request"
            f" {best.last.index}"
        )

    def _group_compacted(self, prep: Prepared, scope: Scope) -> tuple[_Conversation | None, str]:
        tail = prep.hist[prep.lead + 1 :]
        best, best_run = None, 0
        if tail:
            for conv in self._conversations:
                if conv.last.provider != prep.provider or conv.scope != scope:
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
            latest = self._latest.get((scope, prep.provider))
            if scope is _PREFIX or latest is None or latest.last.model != prep.model:
                return None, "new conversation: a compaction summary with no earlier conversation"
            return latest, (
                f"joined by compaction: the history of request {latest.last.index} of its"
                f" {scope[0]} scope was replaced by a summary"
            )
        return best, (
            f"joined by compaction: {plural(best_run, 'message')} after the summary continue "
            f"request {best.last.index}"
        )

    def _index(self, conv: _Conversation, old: Prepared | None) -> None:
        scope = conv.scope
        for table, pick in ((self._by_head, _head), (self._by_second, _second)):
            if old is not None:
                old_item = pick(old)
                if old_item is not None:
                    key = (scope, old.provider, _meaning.normalized(old_item))
                    table.get(key, {}).pop(conv.number, None)
            item = pick(conv.last)
            if item is not None:
                key = (scope, conv.last.provider, _meaning.normalized(item))
                table.setdefault(key, {})[conv.number] = conv
        self._latest[(scope, conv.last.provider)] = conv

    # --- judging -----------------------------------------------------------------------------

    def _judge(self, prep: Prepared, inp: AuditInput) -> RequestRecord:
        scope = self._scope(inp, prep)
        if inp.rejection is not None:
            return self._rejected(prep, inp, scope, inp.rejection)
        chained = self._chained(prep, scope, inp.file)
        change: Change | None
        previous: Prepared | None
        old: Prepared | None
        notes: Notes = []
        if chained is not None:
            conv, previous, how = chained
            change = continuation(previous, prep, notes)
            old = conv.last
        else:
            found, how = self._group(prep, scope)
            how += _scope_words(scope)
            if found is None:
                conv = _Conversation(len(self._conversations), prep, scope)
                self._conversations.append(conv)
                previous = old = None
            else:
                conv, previous = found, found.last
                old = previous
            change = compare(previous, prep, notes) if previous is not None else None
        if previous is not None:
            change = with_parameters(previous, prep, change)
        if old is not None:
            conv.last, conv.active = prep, prep.index
        self._index(conv, old)
        if inp.response_id is not None:
            self._responses[self._response_key(inp.file, inp.response_id)] = (conv, prep)
        elif prep.provider == "openai-responses":  # its answer may name it (:meth:`responded`)
            self._unnamed[prep.index] = (conv, prep, inp.file)
            if len(self._unnamed) > UNNAMED_KEPT:
                self._unnamed.popitem(last=False)
        verdict = Verdict.NEW if previous is None else Verdict.STABLE
        detail = None
        if change is None and previous is not None and previous.body.text == prep.body.text:
            verdict, detail = Verdict.RETRY, f"identical to request {previous.index} (a retry)"
        first = (scope, prep.provider, prep.model) not in self._first_seen
        self._first_seen.add((scope, prep.provider, prep.model))
        most, hidden = self._maximum(prep, inp, first)
        return RequestRecord(
            index=prep.index,
            source=prep.source,
            provider=prep.provider,
            model=prep.model,
            conversation=conv.number,
            compared_with=previous.index if previous is not None else None,
            grouping=how,
            verdict=change.verdict if change is not None else verdict,
            changes=change.changes if change is not None else _own(verdict),
            first_break_offset=change.offset if change is not None else None,
            path=change.path if change is not None else None,
            detail=change.detail if change is not None else detail,
            lost_bytes=change.lost_bytes if change is not None else 0,
            lost_tokens=lost_tokens(previous, prep, change, _lost_tokens),
            uncacheable=nothing_cached(previous, change),
            total_tokens=prep.total_tokens,
            max_cacheable_tokens=most.maximum,
            ideal_cacheable_tokens=most.ideal,
            breakpoints=most.breakpoints if uses_breakpoints(prep) else None,
            not_visible=hidden,
            divergence=change.divergence if change is not None else None,
            file=inp.file,
            position=inp.position,
            usage=inp.usage,
            key_order_recorded=inp.key_order_recorded,
            kind=change.kind if change is not None and change.verdict is Verdict.BREAK else None,
            parameter=change.parameter if change is not None else None,
            notes=note_lines(notes),
        )

    def _rejected(self, prep: Prepared, inp: AuditInput, scope: Scope, why: str) -> RequestRecord:
        """A request the recorded server did not process: listed, never a baseline.

        It joins no conversation state (the next request is compared with the one before it),
        writes nothing to the theoretical maximum's cache, and its maximum is 0.
        """
        found, _how = self._group(prep, scope)
        return RequestRecord(
            index=prep.index,
            source=prep.source,
            provider=prep.provider,
            model=prep.model,
            conversation=found.number if found is not None else -1,
            compared_with=None,
            grouping=f"not grouped: {why}",
            verdict=Verdict.REJECTED,
            changes=(Verdict.REJECTED,),
            first_break_offset=None,
            path=None,
            detail=f"{why}; never a baseline for the next request",
            lost_bytes=0,
            lost_tokens=0,
            total_tokens=prep.total_tokens,
            max_cacheable_tokens=0,
            file=inp.file,
            position=inp.position,
            usage=inp.usage,
            key_order_recorded=inp.key_order_recorded,
        )


def _scope_words(scope: Scope) -> str:
    """How the grouping text names a scope (nothing for the whole input)."""
    if scope[0] == "file":
        return f" (within file {scope[1]})" if scope[1] else " (within the bodies given)"
    if scope[0] == "key":
        inside = f" in file {scope[2]}" if len(scope) > 2 else ""
        return f" (key {scope[1]}{inside})"
    return ""


def _own(verdict: Verdict) -> tuple[Verdict, ...]:
    """``changes`` of a request the comparison found nothing in: only a retry names itself."""
    return (verdict,) if verdict is Verdict.RETRY else ()


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
        _key, data, count, _section = p.toks[k]
        common = tokens.common_prefix_len(data, c.toks[k][1])
        shared += common * count // len(data) if data else 0
    return max(0, p.total_tokens - shared)


def audit_bodies(
    bodies: Iterable[bytes | AuditInput],
    provider: str | None = None,
    *,
    skipped: Sequence[str] = (),
    group: str | None = None,
) -> AuditReport:
    """Audit request bodies in order and return the report (SPEC V1).

    Args:
        bodies: Request bodies as sent (``bytes``) or :class:`AuditInput` with source and time.
        provider: A name of :data:`~llmcore.audit.PROVIDERS` for every body, or ``None`` to
            read each body's shape (the URI's first, when the input records one).
        skipped: Inputs the caller passed over, carried into the report.
        group: ``file``, ``prefix`` or ``key`` to override the grouping
            (:data:`~llmcore.audit.report.GROUPINGS`); ``None`` for the default.

    Returns:
        One :class:`RequestRecord` per body and the totals; the theoretical hit rate for
        ``llmcore bench`` is :attr:`AuditReport.theoretical_hit_rate`.

    Raises:
        AuditInputError: A body is not UTF-8 JSON of a known request shape (names its source);
            a :attr:`~AuditInput.skippable` one is listed in the report's ``skipped`` instead.
        UnknownProviderError: ``provider`` is not a known name.
    """
    auditor = Auditor(provider, group)
    passed_over = list(skipped)
    for body in bodies:
        try:
            auditor.add(body)
        except AuditInputError as exc:
            if not (isinstance(body, AuditInput) and body.skippable):
                raise
            passed_over.append(f"{exc.location}: {exc.message}")
    return auditor.report(passed_over)
