"""The P4 comparison between two consecutive requests of one conversation (SPEC P4, V1).

Every wire item (``tools[j]``, ``system[j]``, ``instructions``, ``messages[i]``, ``input[i]``) is
compared on its exact recorded text after the P4 normalization (``cache_control`` and
``prompt_cache_breakpoint`` members deleted); two texts the cache-key model calls one item to
the provider (:func:`llmcore.audit.keymodel.equivalence`: JSON escape forms, whitespace between
tokens, an Anthropic or OpenRouter string content and one text block) are unchanged, with a
note. Tools, system and instructions must be unchanged;
the history must be the previous history followed by new items. Two changes are allowed and
reported as their own kinds (M4, C1):

* Anthropic ``thinking`` / ``redacted_thinking`` blocks removed from an earlier assistant message
  once a later user message has started a new turn (a user message with no ``tool_result``);
* Responses ``reasoning`` items removed once a new turn has started, together with the ``id`` and
  ``status`` members of the items that followed them in their turn;
* compaction: the first history message (after leading system messages) is replaced by a user
  message starting with ``# Conversation so far``.

Leaves out: grouping and token arithmetic (:mod:`llmcore.audit._auditor`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from llmcore._words import plural
from llmcore.audit import _shape, keymodel
from llmcore.audit._items import token_items
from llmcore.audit._scan import (
    ItemInfo,
    ScannedBody,
    byte_offset,
    common_prefix,
    find_path,
    normalize_text,
    raw_offset,
)
from llmcore.audit.report import Verdict

__all__ = [
    "Change",
    "Notes",
    "Prepared",
    "compare",
    "continuation",
    "divergence",
    "frame",
]

_THINKING: Final = frozenset({"thinking", "redacted_thinking"})
_ID_STATUS: Final = frozenset({"id", "status"})
_SNIP: Final = 24


class Prepared:
    """One request scanned and read for comparison.

    Attributes:
        index: Position in the input sequence.
        source: Where the body came from.
        timestamp: Send time (seconds since the epoch) or ``None``.
        provider: Provider name.
        model: The body's model ("" when absent).
        body: The scanned body.
        hist: The history items (``messages`` or ``input``).
        lead: How many leading history items are system/developer messages.
        toks: The prefix items in cache order (:func:`llmcore.audit._shape.token_items`).
        total_tokens: Σ tokens of ``toks``.
        anthropic: Whether Anthropic's whole-block cache rule applies.
        marks: Indices into ``toks`` of the items that carry a breakpoint.
    """

    __slots__ = (
        "index",
        "source",
        "timestamp",
        "provider",
        "model",
        "body",
        "hist",
        "lead",
        "toks",
        "total_tokens",
        "anthropic",
        "last_turn_start",
        "marks",
    )

    def __init__(
        self,
        *,
        index: int,
        source: str,
        timestamp: float | None,
        provider: str,
        model: str,
        body: ScannedBody,
        anthropic: bool,
    ) -> None:
        self.index = index
        self.source = source
        self.timestamp = timestamp
        self.provider = provider
        self.model = model
        self.body = body
        self.anthropic = anthropic
        self.hist: list[ItemInfo] = body.items.get(_shape.history_key(provider), [])
        lead = 0
        while lead < len(self.hist) and _shape.msg(self.hist[lead]).is_system:
            lead += 1
        self.lead = lead
        self.marks: list[int] = []
        self.toks = token_items(body, provider, anthropic, model, self.marks)
        self.total_tokens = sum(t[2] for t in self.toks)
        self.last_turn_start = -1
        for i in range(len(self.hist) - 1, -1, -1):
            if _shape.msg(self.hist[i]).turn_start:
                self.last_turn_start = i
                break


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """What changed between the previous request and this one."""

    verdict: Verdict
    """The most serious kind found."""
    changes: tuple[Verdict, ...]
    """Every kind found, in the order met."""
    offset: int
    """Byte offset of the first changed byte in this request's body."""
    path: str
    """JSON path of that byte's value."""
    detail: str
    """One line saying what differs."""
    lost_bytes: int
    """Normalized bytes of the previous request's items from the first changed one on."""
    divergence: str | None = None
    """For a break: ``tools``, ``system`` or ``messages`` (``report.DIVERGENCES``)."""
    section: str = ""
    """For a break, the first prefix section whose cache it discards."""
    kind: str = "prefix"
    """For a break: ``prefix`` (a byte of the prefix changed) or ``parameter`` (a field the
    provider keys a cache level on changed: :mod:`llmcore.audit.keymodel`)."""
    parameter: str | None = None
    """For a ``parameter`` break, the field (``tool_choice``, ``first image``)."""


Notes = list[tuple[str, str]]
"""Equivalences met while comparing: (equivalence name, item name), in order."""


def _same(
    c: Prepared, a: ItemInfo, b: ItemInfo, where: tuple[str, int], notes: Notes | None
) -> bool:
    """Whether ``a`` (earlier) and ``b`` (``c``'s item ``where``) are one item to the provider.

    Equal normalized texts, or texts the cache-key model calls equivalent (the equivalence is
    added to ``notes``).
    """
    if a is b or a.norm == b.norm:
        return True
    section, j = where
    found = keymodel.equivalence(
        c.provider, a, b, history=section == _shape.history_key(c.provider)
    )
    if found is None:
        return False
    if notes is not None:
        notes.append((found, _name(c.body, section, j)))
    return True


def _name(body: ScannedBody, section: str, j: int) -> str:
    return section if section in body.values else f"{section}[{body.wire_index(section, j)}]"


def _snip(text: str, at: int) -> str:
    piece = text[max(0, at - 8) : at + _SNIP]
    return repr(piece if piece else "<end>")


def _item_diff(
    c: Prepared, section: str, j: int, prev: ItemInfo | str, cur: ItemInfo
) -> tuple[int, str, str]:
    """Locate the first byte where ``cur`` differs from ``prev``: (offset, path, detail).

    ``prev`` is the previous item, or its normalized text with an allowed change applied.
    """
    before = prev if isinstance(prev, str) else prev.norm
    k = common_prefix(before, cur.norm)
    start = c.body.starts[section][j]
    at = start + raw_offset(k, cur.deletions)
    name = _name(c.body, section, j)
    path = find_path(c.body.text, start, at, name)
    detail = f"{name} differs: was {_snip(before, k)}, now {_snip(cur.norm, k)}"
    return byte_offset(c.body, at), path, detail


def _missing_offset(c: Prepared, section: str) -> int:
    """Where a removed item would have been: its section's closing bracket, or what follows."""
    span = c.body.spans.get(section)
    if span is not None:
        return byte_offset(c.body, span[1] - 1)
    sections = _shape.SECTIONS[c.provider]
    for later in sections[sections.index(section) + 1 :]:
        starts = c.body.starts.get(later)
        if starts:
            return byte_offset(c.body, starts[0])
    return len(c.body.text.encode("utf-8"))


def _lost(p: Prepared, section: str, j: int) -> int:
    sections = _shape.SECTIONS[p.provider]
    lost = sum(info.nbytes for info in p.body.items.get(section, ())[j:])
    for later in sections[sections.index(section) + 1 :]:
        lost += sum(info.nbytes for info in p.body.items.get(later, ()))
    return lost


def divergence(provider: str, section: str, is_system: bool = False) -> str:
    """Name where a break lies: ``tools``, ``system`` or ``messages``.

    ``system`` covers Anthropic ``system``, OpenAI ``instructions`` and leading system/developer
    messages of the history (``is_system``).
    """
    if section == "tools":
        return "tools"
    if section != _shape.history_key(provider) or is_system:
        return "system"
    return "messages"


def _break(p: Prepared, c: Prepared, section: str, where: tuple[int, int]) -> Change:
    """A break in a fixed section at previous item ``where[0]`` / current item ``where[1]``."""
    pj, cj = where
    prev_items = p.body.items.get(section, [])
    cur_items = c.body.items.get(section, [])
    if cj < len(cur_items):
        offset, path, detail = _item_diff(c, section, cj, prev_items[pj], cur_items[cj])
    else:
        offset, path = _missing_offset(c, section), f"{section}[{cj}]"
        detail = f"{section}[{pj}] removed (the previous request had {len(prev_items)})"
    return Change(
        verdict=Verdict.BREAK,
        changes=(Verdict.BREAK,),
        offset=offset,
        path=path,
        detail=detail,
        lost_bytes=_lost(p, section, pj),
        divergence=divergence(c.provider, section),
        section=section,
    )


def _kept(c: Prepared, section: str, items: list[ItemInfo]) -> list[tuple[int, ItemInfo]]:
    """The items of a fixed section that are in the cached prefix, with their indices.

    Anthropic tools marked ``defer_loading: true`` are not (:attr:`Verdict.DEFERRED_TOOLS`).
    """
    if section != "tools" or c.provider != "anthropic":
        return list(enumerate(items))
    return [(j, info) for j, info in enumerate(items) if not _shape.deferred(info)]


def frame(p: Prepared) -> tuple[str, ...]:
    """The normalized tools (deferred ones left out) and system items of a request, in order.

    Two requests with equal frames share their tool definitions and system prompt; leading
    system/developer history messages count as system.
    """
    out: list[str] = []
    for section in _shape.SECTIONS[p.provider][:-1]:
        out.append(f"\x00{section}")
        out.extend(info.norm for _, info in _kept(p, section, p.body.items.get(section, [])))
    out.extend(info.norm for info in p.hist[: p.lead])
    return tuple(out)


def _fixed(p: Prepared, c: Prepared, section: str, notes: Notes | None) -> Change | None:
    """Tools, system, instructions: every item unchanged, none added or removed.

    Anthropic tools marked ``defer_loading: true`` may come and go (:attr:`Verdict.DEFERRED_TOOLS`).
    """
    prev_all = p.body.items.get(section, [])
    cur_all = c.body.items.get(section, [])
    prev_items, cur_items = _kept(p, section, prev_all), _kept(c, section, cur_all)
    for n, (pj, prev) in enumerate(prev_items):
        if n >= len(cur_items):
            return _break(p, c, section, (pj, len(cur_all)))
        cj, cur = cur_items[n]
        if not _same(c, prev, cur, (section, cj), notes):
            return _break(p, c, section, (pj, cj))
    if len(cur_items) > len(prev_items):
        j = cur_items[len(prev_items)][0]
        name = _name(c.body, section, j)
        return Change(
            verdict=Verdict.BREAK,
            changes=(Verdict.BREAK,),
            offset=byte_offset(c.body, c.body.starts[section][j]),
            path=name,
            detail=f"{name} added",
            lost_bytes=_lost(p, section, prev_items[-1][0] + 1 if prev_items else 0),
            divergence=divergence(c.provider, section),
            section=section,
        )
    if len(prev_all) == len(cur_all) and all(
        _same(c, a, b, (section, j), None)
        for j, (a, b) in enumerate(zip(prev_all, cur_all, strict=True))
    ):
        return None
    return _deferred_change(p, c, section)


def _deferred_change(p: Prepared, c: Prepared, section: str) -> Change:
    """Deferred tools added or removed, every other tool unchanged: the allowed kind."""
    prev_all = p.body.items.get(section, [])
    cur_all = c.body.items.get(section, [])
    j = 0
    while j < min(len(prev_all), len(cur_all)) and prev_all[j].norm == cur_all[j].norm:
        j += 1
    if j < len(cur_all):
        offset = byte_offset(c.body, c.body.starts[section][j])
    else:
        offset = _missing_offset(c, section)
    added = sum(1 for info in cur_all if _shape.deferred(info)) - sum(
        1 for info in prev_all if _shape.deferred(info)
    )
    return Change(
        verdict=Verdict.DEFERRED_TOOLS,
        changes=(Verdict.DEFERRED_TOOLS,),
        offset=offset,
        path=f"{section}[{j}]",
        detail=(
            f"deferred tools (defer_loading: true) changed from {section}[{j}] "
            f"({added:+d}); they are not part of the cached prefix"
        ),
        lost_bytes=0,
    )


def _stripped(info: ItemInfo, what: str) -> str:
    got = info.extra.get(what)
    if got is None:
        if what == "no_thinking":
            got = normalize_text(info.raw, drop_types=_THINKING)
        else:
            got = normalize_text(info.raw, top_keys=_ID_STATUS)
        info.extra[what] = got
    assert isinstance(got, str)
    return got


class _Walk:
    """State of the history walk: positions in both histories and the kinds met."""

    __slots__ = ("p", "c", "pi", "ci", "kinds", "first", "reasoning_turn")

    def __init__(self, p: Prepared, c: Prepared) -> None:
        self.p, self.c = p, c
        self.pi = self.ci = 0
        self.kinds: list[Verdict] = []
        self.first: tuple[int, int] | None = None
        self.reasoning_turn = False

    def allowed(self, a: ItemInfo, b: ItemInfo | None) -> bool:
        """Try the allowed changes at the current positions; advance and return True if one fits."""
        c, turn_over = self.c, self.c.last_turn_start >= self.ci
        fa = _shape.msg(a)
        if c.provider == "anthropic" and fa.has_thinking and b is not None:
            if c.last_turn_start > self.ci and _stripped(a, "no_thinking") == b.norm:
                self._kind(Verdict.THINKING_DROPPED)
                self.pi, self.ci = self.pi + 1, self.ci + 1
                return True
        if c.provider == "openai-responses":
            if fa.type == "reasoning" and turn_over:
                self._kind(Verdict.REASONING_DROPPED)
                self.reasoning_turn = True
                self.pi += 1
                return True
            if self.reasoning_turn and b is not None:
                if _stripped(a, "no_id") == _stripped(b, "no_id"):
                    self.pi, self.ci = self.pi + 1, self.ci + 1
                    return True
        return False

    def _kind(self, kind: Verdict) -> None:
        if kind not in self.kinds:
            self.kinds.append(kind)


def _history(p: Prepared, c: Prepared, notes: Notes | None) -> Change | None:
    section = _shape.history_key(c.provider)
    hp, hc = p.hist, c.hist
    w = _Walk(p, c)
    while w.pi < len(hp):
        a = hp[w.pi]
        b = hc[w.ci] if w.ci < len(hc) else None
        if b is not None and _same(c, a, b, (section, w.ci), notes):
            if _shape.msg(a).turn_start:
                w.reasoning_turn = False
            w.pi, w.ci = w.pi + 1, w.ci + 1
            continue
        if b is None and w.first is None:
            return _rerun(p, c, section, w.pi)
        if w.first is None:
            w.first = (w.pi, w.ci)
            if b is not None and w.ci == c.lead and _shape.msg(b).summary:
                return _at(p, c, section, w.first, [Verdict.COMPACTION], "history compacted")
        if not w.allowed(a, b):
            return _break_at(p, c, section, (w.pi, w.ci), w.kinds, _edited_base(a, c, w.ci))
    if w.first is None or not w.kinds:
        return None
    return _at(p, c, section, w.first, w.kinds, "allowed change")


def _rerun(p: Prepared, c: Prepared, section: str, pi: int) -> Change:
    """The history is a proper prefix of the previous request's: a shorter rerun."""
    return Change(
        verdict=Verdict.SHORTER_RERUN,
        changes=(Verdict.SHORTER_RERUN,),
        offset=_missing_offset(c, section),
        path=f"{section}[{pi}]",
        detail=(
            f"shorter rerun: the history stops after {pi} of the previous request's "
            f"{len(p.hist)} items, every one unchanged"
        ),
        lost_bytes=_lost(p, section, pi),
    )


def _edited_base(a: ItemInfo, c: Prepared, ci: int) -> str | None:
    """For a message whose thinking could be dropped here, the text to diff against."""
    if c.provider == "anthropic" and _shape.msg(a).has_thinking and c.last_turn_start > ci:
        return _stripped(a, "no_thinking")
    return None


def _break_at(
    p: Prepared,
    c: Prepared,
    section: str,
    where: tuple[int, int],
    kinds: list[Verdict],
    base: str | None = None,
) -> Change:
    pi, ci = where
    cur = c.hist[ci] if ci < len(c.hist) else None
    if cur is None:
        offset, path = _missing_offset(c, section), f"{section}[{ci}]"
        detail = f"{section}[{pi}] of the previous request is missing"
    else:
        if base is not None and Verdict.THINKING_DROPPED not in kinds:
            kinds = [*kinds, Verdict.THINKING_DROPPED]
        prev: ItemInfo | str = base if base is not None else p.hist[pi]
        offset, path, detail = _item_diff(c, section, ci, prev, cur)
    return Change(
        verdict=Verdict.BREAK,
        changes=(*kinds, Verdict.BREAK),
        offset=offset,
        path=path,
        detail=detail,
        lost_bytes=_lost(p, section, pi),
        divergence=divergence(c.provider, section, pi < p.lead or ci < c.lead),
        section=section,
    )


def _at(
    p: Prepared,
    c: Prepared,
    section: str,
    first: tuple[int, int],
    kinds: list[Verdict],
    what: str,
) -> Change:
    pi, ci = first
    if ci < len(c.hist):
        offset, path, detail = _item_diff(c, section, ci, p.hist[pi], c.hist[ci])
    else:
        offset, path, detail = _missing_offset(c, section), f"{section}[{ci}]", "items removed"
    return Change(
        verdict=kinds[0],
        changes=tuple(kinds),
        offset=offset,
        path=path,
        detail=f"{what}: {detail}",
        lost_bytes=_lost(p, section, pi),
    )


def compare(p: Prepared, c: Prepared, notes: Notes | None = None) -> Change | None:
    """Check P4 from request ``p`` to the next request ``c`` of its conversation.

    Items are compared on their normalized text; two texts the cache-key model calls one item
    (:func:`llmcore.audit.keymodel.equivalence`) are unchanged, and the equivalence is added to
    ``notes``. Keyed fields outside the sections are judged by
    :func:`llmcore.audit._parameters.with_parameters`.

    Returns:
        ``None`` when P4 holds, else the changes in cache order: a break in tools or system
        comes before any history change; an allowed change of the tools (deferred tools) is
        listed before what the history shows.
    """
    broken, allowed = _frame_change(p, c, notes)
    return broken if broken is not None else _merge(allowed, _history(p, c, notes))


def _frame_change(
    p: Prepared, c: Prepared, notes: Notes | None = None
) -> tuple[Change | None, Change | None]:
    """Compare the fixed sections: (a break, with any allowed kind before it; the allowed kind)."""
    allowed: Change | None = None
    for section in _shape.SECTIONS[c.provider][:-1]:
        change = _fixed(p, c, section, notes)
        if change is not None and change.verdict is Verdict.BREAK:
            return _merge(allowed, change), allowed
        allowed = allowed or change
    return None, allowed


def continuation(p: Prepared, c: Prepared, notes: Notes | None = None) -> Change:
    """Check a Responses request that continues ``p``'s response (``previous_response_id``).

    The server holds ``p``'s input and output; ``c`` carries only the appended input items, so
    only its tools and instructions are compared with ``p``'s, and its appended items are
    checked for a re-send of ``p``'s input (no break, since the server's prefix is unchanged,
    but the detail names the items counted twice). Returns a break there, else
    :attr:`Verdict.CONTINUATION`.
    """
    broken, allowed = _frame_change(p, c, notes)
    if broken is not None:
        return broken
    key = _shape.history_key(c.provider)
    starts = c.body.starts.get(key)
    appended = len(c.hist)
    resent = 0
    for x, y in zip(p.hist, c.hist, strict=False):
        if not (x is y or x.norm == y.norm):
            break
        resent += 1
    again = (
        f"; it re-sends {resent} of request {p.index}'s input items, which the server already"
        " holds (they are counted twice)"
        if resent
        else ""
    )
    own = Change(
        verdict=Verdict.CONTINUATION,
        changes=(Verdict.CONTINUATION,),
        offset=byte_offset(c.body, starts[0]) if starts else _missing_offset(c, key),
        path=f"{key}[0]" if starts else key,
        detail=(
            f"server-side continuation of request {p.index}'s response: "
            f"{plural(appended, 'appended input item')}{again}"
        ),
        lost_bytes=0,
    )
    merged = _merge(allowed, own)
    return merged if merged is not None else own


def _merge(first: Change | None, then: Change | None) -> Change | None:
    """Join an allowed change of the fixed sections with what a later section shows."""
    if first is None or then is None:
        return first or then
    kinds = [*first.changes, *(k for k in then.changes if k not in first.changes)]
    lead = then if then.verdict is Verdict.BREAK else first
    return Change(
        verdict=lead.verdict,
        changes=tuple(kinds),
        offset=lead.offset,
        path=lead.path,
        detail=lead.detail,
        lost_bytes=then.lost_bytes if then.verdict is Verdict.BREAK else first.lost_bytes,
        divergence=lead.divergence,
        section=lead.section,
        kind=lead.kind,
        parameter=lead.parameter,
    )
