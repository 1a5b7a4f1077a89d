"""The values a saved conversation holds (SPEC A1, A4, U3, F1).

:class:`ConversationState` is one frozen snapshot of everything ``conversation.json`` stores:
panel items, feedback, card states, history, queued and unsent messages, usage, cost and turn
facts. Panel items (:class:`Item`) and card states are the host's JSON, kept unchanged except for
key order (A4): they are held as compact JSON text with sorted keys, so the snapshot stays an
immutable value and encodes to the same bytes every time.

It leaves out the disk (:mod:`llmcore.archive.codec`, :mod:`llmcore.archive.store`) and change
tracking (:mod:`llmcore.archive.conversation`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from llmcore import jsonbytes
from llmcore.errors import UserError
from llmcore.facts import SentFacts
from llmcore.limits import context_notice_fields
from llmcore.messages import Message, clean_text
from llmcore.usage import Cost, Usage, UsageTotals

from .format import ITEM_TYPES

__all__ = [
    "MAX_JSON_DEPTH",
    "CardMap",
    "ConversationState",
    "Feedback",
    "InvalidArchiveValueError",
    "Item",
    "Rating",
    "canonical_json",
    "set_pair",
    "short_repr",
]

MAX_JSON_DEPTH: Final = 200
"""Deepest nesting of arrays and objects accepted in host JSON (items, card states)."""

Rating: TypeAlias = Literal["good", "bad"]
CardMap: TypeAlias = tuple[tuple[str, str], ...]
"""Card states: (item id, state as compact sorted JSON text), sorted by item id."""


class InvalidArchiveValueError(UserError):
    """A host value cannot be stored in the archive; ``location`` is its JSON path (``$…``)."""


def short_repr(value: Any, limit: int = 40) -> str:
    """Return ``repr(value)`` cut to about ``limit`` characters, for error messages."""
    text = repr(value) if isinstance(value, str | int | float | bool | None) else _kind(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kind(value: Any) -> str:
    return "an object" if isinstance(value, Mapping) else "an array"


def canonical_json(value: Any, location: str = "$") -> str:
    """Return ``value`` as compact JSON text with sorted keys, after checking it can be stored.

    Lone surrogates in strings and keys become U+FFFD (the one treatment of :mod:`messages`).

    Raises:
        InvalidArchiveValueError: A non-finite float, a non-string key, a type JSON has no form
            for, or nesting deeper than :data:`MAX_JSON_DEPTH`; ``location`` names the place.
    """
    checked = _check(value, location, 0)
    return jsonbytes.dumps_sorted(checked).decode("utf-8")


def _check(value: Any, location: str, depth: int) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArchiveValueError("number out of range", location=location)
        return value
    if depth >= MAX_JSON_DEPTH:
        raise InvalidArchiveValueError(
            f"nested deeper than {MAX_JSON_DEPTH} levels", location=location
        )
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            if not isinstance(key, str):
                raise InvalidArchiveValueError(f"key {key!r} is not a string", location=location)
            out[clean_text(key)] = _check(inner, f"{location}.{key}", depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_check(inner, f"{location}[{i}]", depth + 1) for i, inner in enumerate(value)]
    raise InvalidArchiveValueError(f"a {type(value).__name__} has no JSON form", location=location)


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    """One panel item (SPEC A4): ``id``, ``type`` and the host's own fields, kept unchanged.

    Build one with :meth:`make` or :meth:`from_json`; read the fields back with :meth:`fields`.
    """

    id: str
    """The item's id (the host's, e.g. a UUID string)."""
    type: str
    """One of the 13 types of :data:`~llmcore.archive.format.ITEM_TYPES`."""
    json: str
    """The whole object (``id`` and ``type`` included) as compact JSON text, keys sorted."""

    @classmethod
    def from_json(cls, obj: Mapping[str, Any], location: str = "$") -> Item:
        """Return the item for a JSON object as the host (or the file) gives it.

        Raises:
            InvalidArchiveValueError: ``id`` is not a string, ``type`` is not one of the 13
                types, ``detail`` is not a string, ``citations`` is not an array, or a value has
                no stable JSON form; ``location`` names the place.
        """
        item_id = obj.get("id")
        if not isinstance(item_id, str):
            raise InvalidArchiveValueError("item id must be a string", location=f"{location}.id")
        item_type = obj.get("type")
        if not isinstance(item_type, str) or item_type not in ITEM_TYPES:
            raise InvalidArchiveValueError(
                f"unknown item type {short_repr(item_type)}", location=f"{location}.type"
            )
        if "detail" in obj and not isinstance(obj["detail"], str):
            raise InvalidArchiveValueError("detail must be a string", location=f"{location}.detail")
        if "citations" in obj and not isinstance(obj["citations"], list | tuple):
            raise InvalidArchiveValueError(
                "citations must be an array", location=f"{location}.citations"
            )
        text = canonical_json(dict(obj), location)
        return cls(id=clean_text(item_id), type=item_type, json=text)

    @classmethod
    def make(cls, *, id: str, type: str, **fields: Any) -> Item:
        """Return an item from keyword fields (``detail``, ``citations`` and the host's own).

        Raises:
            InvalidArchiveValueError: As for :meth:`from_json`.
        """
        return cls.from_json({"id": id, "type": type, **fields})

    def fields(self) -> dict[str, Any]:
        """Return the whole object as a fresh dict (keys sorted)."""
        value: dict[str, Any] = jsonbytes.loads(self.json, exact_floats=True)
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class Feedback:
    """A rating of the turn that ends with an item (SPEC A4 ``feedback``)."""

    rating: Rating
    """``good`` or ``bad``."""
    reasons: tuple[str, ...] = ()
    """The reasons the user picked, in order."""


def set_pair(pairs: tuple[tuple[str, Any], ...], key: str, value: Any) -> tuple[Any, ...]:
    """Return ``pairs`` (sorted by key) with ``key`` set to ``value``, or removed if ``None``."""
    kept = {k: v for k, v in pairs if k != key}
    if value is not None:
        kept[key] = value
    return tuple(sorted(kept.items()))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationState:
    """Everything ``conversation.json`` stores, as one immutable value (SPEC A1).

    The composer draft is not part of it.
    """

    provider: str = ""
    """The provider of the last turn (informational)."""
    model: str = ""
    """The model of the last turn (informational)."""
    items: tuple[Item, ...] = ()
    """The panel transcript, in order."""
    feedback: tuple[tuple[str, Feedback], ...] = ()
    """(item id, rating), sorted by item id."""
    skill_cards: CardMap = ()
    """Skill proposal card states."""
    lint_rule_cards: CardMap = ()
    """Lint rule proposal card states."""
    approval_cards: CardMap = ()
    """Tool approval card states."""
    resolved_cards: tuple[str, ...] = ()
    """Ids of resolved cards, in order."""
    history: tuple[Message, ...] = ()
    """The model history, as sent."""
    queued: tuple[str, ...] = ()
    """Messages sent during a turn and still waiting."""
    unsent: tuple[str, ...] = ()
    """Messages a turn put back into the composer."""
    usage: UsageTotals = field(default_factory=UsageTotals)
    """Total usage, the last request's usage and the cost (U3)."""
    sent_facts: SentFacts = field(default_factory=SentFacts)
    """The per-turn facts (F1)."""

    @property
    def is_empty(self) -> bool:
        """Whether there is nothing to save: no items, history, queued or unsent (SPEC A9)."""
        return not (self.items or self.history or self.queued or self.unsent)

    def after_turn(
        self,
        *,
        messages: Sequence[Message],
        provider: str,
        model: str,
        items: Sequence[Item] = (),
        rounds: Sequence[tuple[Usage, Cost]] = (),
        sent_facts: SentFacts | None = None,
    ) -> ConversationState:
        """Return the state after a finished turn (SPEC A10, U3, F1, P6, C4).

        The one rule for advancing a conversation: the runner uses it for a state value and
        :meth:`~llmcore.archive.conversation.Conversation.end_turn` for the host object.
        When the turn's last request crossed 80 % of ``model``'s context window, one
        ``notice`` item offering compaction follows the turn's items (the rule and its id:
        :mod:`llmcore.limits`); nothing calls a model.

        Args:
            messages: The turn's messages, appended to the history.
            provider: The provider the turn ran on (becomes :attr:`provider`, P6).
            model: The model the turn ran on (becomes :attr:`model`).
            items: Panel items the turn added.
            rounds: (usage, cost) of each request the turn made, in order.
            sent_facts: The turn-facts record after the turn (``None`` keeps the current one).
        """
        totals = self.usage
        for usage, cost in rounds:
            totals = totals.record(usage, cost)
        history = (*self.history, *messages)
        notice = self._limit_notice(model, totals, len(history), items) if rounds else ()
        added = (*items, *notice)
        return dataclasses.replace(
            self,
            provider=clean_text(provider),
            model=clean_text(model),
            history=history,
            items=(*self.items, *added),
            usage=totals,
            sent_facts=self.sent_facts if sent_facts is None else sent_facts,
        )

    def _limit_notice(
        self, model: str, totals: UsageTotals, length: int, items: Sequence[Item]
    ) -> tuple[Item, ...]:
        """Return the compaction notice the turn earned, if any (C4, :mod:`llmcore.limits`)."""
        fields = context_notice_fields(
            model=model,
            last_round=totals.last_round,
            previous_model=self.model,
            previous_round=self.usage.last_round,
            history_length=length,
        )
        if fields is None or any(i.id == fields["id"] for i in (*self.items, *items)):
            return ()
        return (Item.from_json(fields),)
