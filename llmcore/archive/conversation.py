"""The host-facing conversation: one object whose changes mark the document edited (SPEC A10).

A :class:`Conversation` holds the current :class:`~llmcore.archive.state.ConversationState` and
changes it only through its methods: a turn ends, a rating, a card state, queued or unsent
messages, a new conversation, a compaction. Each change calls the host's ``on_edited`` callback
and sets :attr:`Conversation.edited` (the host marks its document edited, without an undo step),
unless ``keep_conversation`` is off at that moment (A11). Restoring on open is not a change.

It also carries what a save must know beyond the state (A8, A9, A12): whether an unreadable
folder is being kept (until a turn runs), whether a confirmed new conversation must delete the
folder, and which ``conversation.json`` it was opened from (its :attr:`Conversation.base`), so a
save can refuse to overwrite another process's save. Saving lives in
:class:`~llmcore.archive.store.ArchiveStore`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

from llmcore.facts import Section, SentFacts, TurnPlan, plan_turn
from llmcore.messages import Message
from llmcore.usage import Cost, Usage

from .state import ConversationState, Feedback, Item, Rating, canonical_json, set_pair

if TYPE_CHECKING:
    from .store import Notice

__all__ = ["UNBOUND", "UNKNOWN", "CardKind", "Conversation"]

UNBOUND: Final = "unbound"
"""A conversation's :attr:`~Conversation.base` before it was opened from or saved to a folder:
its first save is not checked against the disk (it replaces what is there)."""
UNKNOWN: Final = "unknown"
"""The :attr:`~Conversation.base` of a conversation whose ``conversation.json`` could not be read
when opened (an I/O error, a lock held too long): a save conflicts with any file it finds."""

CardKind: TypeAlias = Literal["skill", "lintRule", "approval"]
"""Which card map a state belongs to: ``skillCards``, ``lintRuleCards`` or ``approvalCards``."""

_CARD_FIELDS: dict[str, str] = {
    "skill": "skill_cards",
    "lintRule": "lint_rule_cards",
    "approval": "approval_cards",
}


def _always() -> bool:
    return True


class Conversation:
    """A conversation as the host sees it: state, notices, and change tracking (SPEC A8–A11).

    Args:
        state: The restored state (empty for a new conversation).
        keep_conversation: Reads the host setting (A11); read at every change.
        on_edited: Called once per change while ``keep_conversation`` is on (A10).
        notices: Notices for the panel, e.g. the one unreadable-archive notice (A8).
        keep_unreadable: The folder holds an archive this version cannot read; saves keep it
            until a turn runs or a new conversation is confirmed.
        base: What ``conversation.json`` held when this conversation was opened: its SHA-256
            hex, ``None`` for no file, :data:`UNKNOWN`, or :data:`UNBOUND` (not opened from a
            folder; set by :meth:`~llmcore.archive.store.ArchiveStore.open`).
    """

    def __init__(
        self,
        state: ConversationState | None = None,
        *,
        keep_conversation: Callable[[], bool] = _always,
        on_edited: Callable[[], None] | None = None,
        notices: Sequence[Notice] = (),
        keep_unreadable: bool = False,
        base: str | None = UNBOUND,
    ) -> None:
        self._state = state or ConversationState()
        self._base = base
        self._keep = keep_conversation
        self._on_edited = on_edited
        self._notices = tuple(notices)
        self._keep_unreadable = keep_unreadable
        self._delete_pending = False
        self.edited = False
        """Whether a change happened since the host last cleared this flag."""

    # ---------------------------------------------------------------------------- reading

    @property
    def state(self) -> ConversationState:
        """The current state (an immutable value)."""
        return self._state

    @property
    def history(self) -> tuple[Message, ...]:
        """The model history."""
        return self._state.history

    @property
    def notices(self) -> tuple[Notice, ...]:
        """Notices for the panel (at most one: the archive could not be read, A8)."""
        return self._notices

    @property
    def keeps_unreadable(self) -> bool:
        """Whether saves keep an unreadable folder untouched (A8)."""
        return self._keep_unreadable

    @property
    def delete_pending(self) -> bool:
        """Whether a confirmed new conversation still has to delete the folder."""
        return self._delete_pending

    @property
    def base(self) -> str | None:
        """The ``conversation.json`` this conversation continues (SPEC A9).

        SHA-256 hex of the bytes it was opened from or last saved as, ``None`` for no file,
        :data:`UNKNOWN` or :data:`UNBOUND`. A save refuses to replace a file that is something
        else.
        """
        return self._base

    def saved(self, version: str | None) -> None:
        """Tell the conversation a save wrote or deleted its folder (called by the store).

        Args:
            version: SHA-256 hex of the ``conversation.json`` now on disk, ``None`` if none.
        """
        self._delete_pending = False
        self._base = version

    # ---------------------------------------------------------------------------- changes

    def _change(self, state: ConversationState) -> None:
        self._state = state
        if self._keep():
            self.edited = True
            if self._on_edited is not None:
                self._on_edited()

    def plan_turn(self, sections: Sequence[Section]) -> TurnPlan:
        """Return which context sections the next turn sends, and its facts record (SPEC F1).

        Pass :attr:`TurnPlan.facts` to :meth:`end_turn` once the turn has run.
        """
        return plan_turn(self._state.sent_facts, start=len(self._state.history), sections=sections)

    def end_turn(
        self,
        *,
        messages: Sequence[Message],
        provider: str,
        model: str,
        items: Sequence[Item] = (),
        rounds: Sequence[tuple[Usage, Cost]] = (),
        sent_facts: SentFacts | None = None,
    ) -> None:
        """Record a finished turn: new history messages, items, usage per request (A10, U3).

        A turn replaces a kept unreadable folder at the next save (A8); ``provider`` and
        ``model`` update here, at the end of the turn (P6).

        Args:
            messages: The turn's messages, appended to the history.
            provider: The provider the turn ran on.
            model: The model the turn ran on.
            items: Panel items the turn added (items already added stay).
            rounds: (usage, cost) of each request the turn made, in order.
            sent_facts: The record from :meth:`plan_turn` (``None`` keeps the current one).
        """
        self._keep_unreadable = False
        self._change(
            self._state.after_turn(
                messages=messages,
                provider=provider,
                model=model,
                items=items,
                rounds=rounds,
                sent_facts=sent_facts,
            )
        )

    def add_items(self, items: Sequence[Item]) -> None:
        """Append panel items (e.g. while a turn runs)."""
        self._change(dataclasses.replace(self._state, items=(*self._state.items, *items)))

    def update_item(self, item: Item) -> None:
        """Replace the item with ``item.id`` (e.g. a tool item's status).

        Raises:
            KeyError: No item has that id.
        """
        items = list(self._state.items)
        for index, old in enumerate(items):
            if old.id == item.id:
                items[index] = item
                self._change(dataclasses.replace(self._state, items=tuple(items)))
                return
        raise KeyError(item.id)

    def rate(self, item_id: str, rating: Rating | None, reasons: Sequence[str] = ()) -> None:
        """Rate the turn that ends with ``item_id`` (``None`` removes the rating)."""
        value = None if rating is None else Feedback(rating=rating, reasons=tuple(reasons))
        feedback = set_pair(self._state.feedback, item_id, value)
        self._change(dataclasses.replace(self._state, feedback=feedback))

    def set_card(self, kind: CardKind, item_id: str, state: Any) -> None:
        """Set the state (any JSON value the host defines; ``None`` removes it) of a card.

        Raises:
            InvalidArchiveValueError: ``state`` has no stable JSON form.
        """
        attr = _CARD_FIELDS[kind]
        text = None if state is None else canonical_json(state, f"$.{kind}Cards.{item_id}")
        cards: Any = set_pair(getattr(self._state, attr), item_id, text)
        self._change(dataclasses.replace(self._state, **{attr: cards}))

    def resolve_card(self, item_id: str) -> None:
        """Mark the card of ``item_id`` resolved (once)."""
        if item_id in self._state.resolved_cards:
            return
        resolved = (*self._state.resolved_cards, item_id)
        self._change(dataclasses.replace(self._state, resolved_cards=resolved))

    def set_queued(self, messages: Sequence[str]) -> None:
        """Set the messages waiting for the running turn to end."""
        self._change(dataclasses.replace(self._state, queued=tuple(messages)))

    def set_unsent(self, messages: Sequence[str]) -> None:
        """Set the messages a turn put back into the composer."""
        self._change(dataclasses.replace(self._state, unsent=tuple(messages)))

    def new_conversation(self) -> None:
        """Start over, once the user confirmed: the next save deletes the folder (A8, A12)."""
        self._keep_unreadable = False
        self._delete_pending = True
        self._notices = ()
        self._change(ConversationState())

    def compact(
        self,
        *,
        summary: Message,
        keep_from: int,
        notice: Item,
        kept_turn_starts: Sequence[int],
        rounds: Sequence[tuple[Usage, Cost]] = (),
    ) -> None:
        """Apply a compaction (SPEC C1): ``summary`` replaces ``history[:keep_from]``.

        :func:`llmcore.compaction.run_compaction` plans and calls this; use it directly only
        with a cut at a turn boundary.

        Args:
            summary: The ``# Conversation so far`` user message.
            keep_from: The first history index kept verbatim (the start of the last two turns).
            notice: The notice item the panel gains.
            kept_turn_starts: The kept turns' starts in the new history; recorded with no
                sections, so the next turn resends every section in full.
            rounds: (usage, cost) of the summarization call, added to the totals (U3).
        """
        history = (summary, *self._state.history[keep_from:])
        facts = self._state.sent_facts.after_compaction(kept_turn_starts)
        totals = self._state.usage
        for usage, cost in rounds:
            totals = totals.record(usage, cost)
        self._change(
            dataclasses.replace(
                self._state,
                history=history,
                items=(*self._state.items, notice),
                sent_facts=facts,
                usage=totals,
            )
        )
