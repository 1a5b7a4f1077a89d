"""Breaks of kind ``parameter``: a keyed request field changed (SPEC V1, V5).

The cache-key model (:mod:`llmcore.audit.keymodel`) names the fields outside the prefix sections
that a provider keys a cache level on: the model (every level), Anthropic ``tool_choice``,
``thinking`` and the presence of images (the messages level), OpenAI ``response_format`` and
Responses ``text.format`` (from the system message on). When one of them differs between two
requests of a conversation, the cache from that level on is discarded even though every byte of
the prefix is unchanged: the request is a break of kind ``parameter`` naming the field, and its
lost prefix is counted from that level.

Also here: the note lines for the equivalences the comparison met (:func:`note_lines`), and
why a change loses nothing when nothing was cacheable (:func:`nothing_cached`).

Leaves out: the byte comparison (:mod:`llmcore.audit._compare`).
"""

from __future__ import annotations

from collections.abc import Callable

from llmcore._words import plural
from llmcore.audit import _shape, keymodel
from llmcore.audit._compare import Change, Notes, Prepared, _lost, _missing_offset, divergence
from llmcore.audit._scan import byte_offset
from llmcore.audit.report import Verdict

__all__ = ["lost_from", "lost_tokens", "note_lines", "nothing_cached", "with_parameters"]


def _offset(c: Prepared, found: keymodel.ParameterChange, section: str) -> int:
    """Where the change is in ``c``'s body: the field's value, the image, or the level's start."""
    body = c.body
    if found.item is not None:
        key = _shape.history_key(c.provider)
        return byte_offset(body, body.starts[key][found.item])
    head = found.path.split(".", 1)[0]
    span = body.spans.get(head)
    if span is not None and found.parameter != keymodel.IMAGES:
        return byte_offset(body, span[0])
    starts = body.starts.get(section)
    return byte_offset(body, starts[0]) if starts else _missing_offset(c, section)


def _detail(found: keymodel.ParameterChange, section: str, sections: tuple[str, ...]) -> str:
    discarded = ", ".join(sections[sections.index(section) :])
    if found.parameter == "model":
        why = "each model has its own cache"
    else:
        why = f"the provider keys its {section} cache on it"
    return (
        f"parameter {found.parameter} changed from {found.before} to {found.after}: {why}, so "
        f"the cache of {discarded} is discarded"
    )


def with_parameters(p: Prepared, c: Prepared, change: Change | None) -> Change | None:
    """Return ``change`` or, when a keyed field changed first in cache order, that break.

    A parameter at a level before the byte break's section, or at the same level (it discards
    the whole level, from its start), wins; a byte break in an earlier section stays.
    """
    found = keymodel.parameter_change(c.provider, (p.model, c.model), p.body, c.body)
    if found is None:
        return change
    sections = _shape.SECTIONS[c.provider]
    section = found.level or sections[0]
    if change is not None and change.verdict is Verdict.BREAK and change.section:
        if sections.index(change.section) < sections.index(section):
            return change
    before = change.changes if change is not None else ()
    kinds = tuple(k for k in before if k is not Verdict.BREAK)
    return Change(
        verdict=Verdict.BREAK,
        changes=(*kinds, Verdict.BREAK),
        offset=_offset(c, found, section),
        path=found.path,
        detail=_detail(found, section, sections),
        lost_bytes=_lost(p, section, 0),
        divergence=divergence(c.provider, section),
        section=section,
        kind="parameter",
        parameter=found.parameter,
    )


def lost_from(p: Prepared, section: str) -> int:
    """Tokens of ``p``'s prefix items in ``section`` and every later section."""
    sections = _shape.SECTIONS[p.provider]
    later = frozenset(sections[sections.index(section) :])
    return sum(tok[2] for tok in p.toks if tok[3] in later)


def note_lines(notes: Notes) -> tuple[str, ...]:
    """One line per equivalence met: its name and the items it covered."""
    by_name: dict[str, list[str]] = {}
    for name, item in notes:
        items = by_name.setdefault(name, [])
        if item not in items:
            items.append(item)
    return tuple(
        f"{name} at {', '.join(items[:3])}{' …' if len(items) > 3 else ''}: not a change to "
        "the provider (cache-key model)"
        for name, items in by_name.items()
    )


def lost_tokens(
    p: Prepared | None,
    c: Prepared,
    change: Change | None,
    past_shared: Callable[[Prepared, Prepared], int],
) -> int:
    """Tokens lost: from the discarded level on for a parameter break, else ``past_shared``.

    ``past_shared`` counts ``p``'s tokens past the prefix items ``c`` shares (the maximum's
    item rule, in the auditor).
    """
    if p is None or change is None:
        return 0
    if change.kind == "parameter" and change.verdict is Verdict.BREAK:
        return lost_from(p, change.section)
    return past_shared(p, c) if change.lost_bytes else 0


def nothing_cached(p: Prepared | None, change: Change | None) -> str | None:
    """Why a change to ``p``'s prefix loses nothing: no cache hit on it was possible; else ``None``.

    Below the model's minimum cacheable prefix nothing is written (PROVIDER-RULES §1.3: "below
    min → no write, no error"; §2.1: OpenAI caches from 1,024 tokens), so when ``p``'s whole
    cacheable prefix is shorter, a break after it loses no cache read. Tokens are estimated as
    everywhere in the audit; the reason names no request number (the merge of ``--jobs``
    renumbers requests, not free text).
    """
    if p is None or change is None or (not change.lost_bytes and change.verdict != Verdict.BREAK):
        return None
    minimum = _shape.minimum_tokens(p.model, p.anthropic)
    if p.total_tokens >= minimum:
        return None
    if minimum >= _shape.NO_CACHE_MIN:
        return f"nothing was cacheable: {p.model or 'the model'} has no prompt cache here"
    return (
        f"nothing was cacheable: the previous request's prompt "
        f"({plural(p.total_tokens, 'token')}, estimated) is under {p.model}'s minimum cacheable "
        f"prefix of {plural(minimum, 'token')}, so no cache entry was written to lose"
    )
