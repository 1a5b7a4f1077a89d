"""Turn facts (SPEC F1): which context sections the model already holds.

A turn's first user message may carry context sections (``# This turn``, the design system, the
selection, …). :class:`SentFacts` records, per turn, where the turn starts in the history and
which sections it left with the model (name → SHA-256 of the section text sent). The next turn
sends only the sections whose text changed since (:func:`plan_turn`). The record is persisted
in the archive (``sentFacts``), so a reopened conversation sends exactly what it would have sent
had it stayed open (P5).

Each record's ``sections`` is the whole set the model holds after that turn, not only what that
turn sent; a record without sections (``None``, e.g. after compaction, C1) means the model holds
none, so the next turn resends every section in full.

It leaves out what a section says and how the host renders the message around it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from llmcore.messages import clean_text

__all__ = [
    "Section",
    "SentFacts",
    "TurnFacts",
    "TurnPlan",
    "plan_turn",
    "render_sections",
    "section_hash",
]


def section_hash(text: str) -> str:
    """Return the lowercase hex SHA-256 of ``text`` as UTF-8 (lone surrogates as U+FFFD)."""
    return hashlib.sha256(clean_text(text).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """One context section of a turn's first user message."""

    name: str
    """The section's name, e.g. ``This turn`` or ``Design system``."""
    text: str
    """The full text sent for it, heading included."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFacts:
    """One turn's record (SPEC F1; on disk ``{"message": int, "sections"?: {name: sha256}}``)."""

    message: int
    """Index into the history of the turn's first message."""
    sections: tuple[tuple[str, str], ...] | None = None
    """(name, SHA-256 hex) of every section the model holds after the turn, sorted by name;
    ``None`` when the turn left none on record."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SentFacts:
    """The per-turn records of a conversation, oldest first (SPEC F1)."""

    turns: tuple[TurnFacts, ...] = ()
    """One record per turn still in the history."""

    def held(self) -> dict[str, str]:
        """Return what the model holds now: section name → SHA-256 hex (the last turn's record)."""
        if not self.turns or self.turns[-1].sections is None:
            return {}
        return dict(self.turns[-1].sections)

    def turn_starts(self) -> tuple[int, ...]:
        """Return each turn's first history index, oldest first."""
        return tuple(turn.message for turn in self.turns)

    def after_compaction(self, starts: Sequence[int]) -> SentFacts:
        """Return the record after compaction (SPEC C1): the given turn starts, no sections."""
        return SentFacts(turns=tuple(TurnFacts(message=start) for start in starts))


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnPlan:
    """What a new turn sends, and the record to keep once it has been sent."""

    send: tuple[Section, ...]
    """The sections to put in the turn's first user message, in the caller's order."""
    facts: SentFacts
    """:class:`SentFacts` with the new turn appended; store it when the turn ends."""


def plan_turn(facts: SentFacts, *, start: int, sections: Sequence[Section]) -> TurnPlan:
    """Decide which sections a new turn sends: those new or changed since the model last saw them.

    Args:
        facts: The conversation's record so far.
        start: The history index where the new turn's first message will be (the history's
            length before the turn).
        sections: Every section as it stands now, in the order they are sent.

    Returns:
        The sections to send and the updated record (the model then holds every current
        section; a section no longer given stays held with its old text).
    """
    held = facts.held()
    send = tuple(s for s in sections if held.get(s.name) != section_hash(s.text))
    for section in send:
        held[section.name] = section_hash(section.text)
    record = TurnFacts(message=start, sections=tuple(sorted(held.items())))
    return TurnPlan(send=send, facts=SentFacts(turns=(*facts.turns, record)))


def render_sections(sections: Sequence[Section], message: str) -> str:
    """Return the turn's first user message text: each section's text, then ``message``.

    Parts are separated by one blank line; empty parts are left out.
    """
    parts = [s.text for s in sections if s.text]
    if message:
        parts.append(message)
    return "\n\n".join(parts)
