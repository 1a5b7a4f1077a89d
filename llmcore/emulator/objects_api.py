"""OpenAI's stored objects: Responses by id and the Conversations API (SPEC V2).

* ``GET /v1/responses/{id}``, ``DELETE /v1/responses/{id}``, ``GET /v1/responses/{id}/input_items``
  [O-RESP] https://platform.openai.com/docs/api-reference/responses (read 2026-12-02): a stored
  response (``store`` not false) is returned as it was answered; deleting answers
  ``{"id", "object": "response", "deleted": true}``, after which the id is unknown (404, and a
  ``previous_response_id`` naming it is refused). Input items are listed newest first by
  default (``order``, ``limit`` 1–100, default 20, ``after``).
* ``POST /v1/conversations`` (``items``, ``metadata``), ``GET`` / ``POST`` (metadata) /
  ``DELETE /v1/conversations/{id}``, ``GET`` / ``POST /v1/conversations/{id}/items``,
  ``GET`` / ``DELETE /v1/conversations/{id}/items/{item_id}`` [O-CONV]
  https://platform.openai.com/docs/api-reference/conversations (read 2026-12-02). A Responses
  request with ``conversation`` reads the conversation's items before its ``input`` (its cache
  prefix) and appends its input and output items to it.

Items are stored as the client sent them, so the next request's prefix has the same bytes; an
item without an ``id`` is listed with one derived from its conversation and position.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.common import make_id
from llmcore.emulator.errors import Rejection
from llmcore.emulator.store import ObjectStore

__all__ = ["ConversationStore", "item_page", "listed_item", "not_found"]

MAX_PAGE: Final = 100
"""Largest ``limit`` a list accepts."""
ITEM_BYTES: Final = 256
"""Estimated bytes of one stored item besides twice its JSON length (as engine.py counts)."""


def not_found(what: str, ident: str) -> Rejection:
    """Return OpenAI's 404 for an unknown object: ``{What} with id '{ident}' not found.``."""
    return Rejection(f"{what} with id '{ident}' not found.", status=404, param=None)


def listed_item(owner: str, index: int, item: Any) -> Any:
    """Return ``item`` as a list shows it: a string input as a user message, an ``id`` added.

    Args:
        owner: The response or conversation id (the derived id's seed).
        index: The item's position when it was stored (stable).
        item: The stored item.
    """
    if isinstance(item, str):
        parts = [{"type": "input_text", "text": item}]
        item = {"type": "message", "role": "user", "content": parts}
    if isinstance(item, dict) and "id" not in item:
        kind = "msg_" if item.get("type", "message") == "message" else "item_"
        item = {"id": make_id(kind + "emu_", owner.encode(), index), **item}
    if isinstance(item, dict) and "role" in item and "type" not in item:
        item = {**item, "type": "message"}
    return item


def _limit(query: dict[str, str]) -> int:
    raw = query.get("limit", "20")
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_PAGE:
        raise Rejection(
            f"Invalid 'limit': integer between 1 and {MAX_PAGE} expected, got {raw!r}.",
            param="limit",
            code="invalid_value",
        )
    return int(raw)


def item_page(listed: list[Any], query: dict[str, str]) -> bytes:
    """Return one page of ``listed`` items (:func:`listed_item`) as OpenAI lists them.

    Query: ``order`` (``asc`` / ``desc``, default ``desc``), ``limit``, ``after`` (an item id).

    Raises:
        Rejection: A bad ``limit`` or ``order``.
    """
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise Rejection(
            f"Invalid value: '{order}'. Supported values are: 'asc' and 'desc'.",
            param="order",
            code="invalid_value",
        )
    listed = listed[::-1] if order == "desc" else list(listed)
    after = query.get("after")
    if after is not None:
        ids = [item.get("id") if isinstance(item, dict) else None for item in listed]
        listed = listed[ids.index(after) + 1 :] if after in ids else []
    limit = _limit(query)
    page = listed[:limit]
    return jsonbytes.dumps(
        {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(listed) > limit,
        }
    )


@dataclass(slots=True)
class _Conversation:
    created_at: int
    metadata: dict[str, Any]
    items: list[Any] = field(default_factory=list)
    numbers: list[int] = field(default_factory=list)
    size: int = 0


class ConversationStore(ObjectStore[_Conversation]):
    """Conversations by id, charged to the emulator's memory budget (evicted when over it).

    Args:
        budget: The shared memory budget.
    """

    def create(self, items: list[Any], metadata: dict[str, Any], now: int) -> str:
        """Store a new conversation; return its ``conv_…`` id."""
        with self._lock:
            ident = make_id("conv_emu_", b"conversation", self._next(), length=32)
            self._add(ident, _Conversation(created_at=now, metadata=metadata), ITEM_BYTES)
        self.append(ident, items)
        return ident

    def _get(self, ident: str) -> _Conversation:
        found = self._find(ident)
        if found is None:
            raise not_found("Conversation", ident)
        return found

    def items(self, ident: str) -> list[Any]:
        """Return a copy of the conversation's items.

        Raises:
            Rejection: 404, no such conversation.
        """
        with self._lock:
            return list(self._get(ident).items)

    def listed(self, ident: str) -> list[Any]:
        """Return the conversation's items as a list shows them (:func:`listed_item`).

        Raises:
            Rejection: 404, no such conversation.
        """
        with self._lock:
            entry = self._get(ident)
            return [
                listed_item(ident, n, item)
                for n, item in zip(entry.numbers, entry.items, strict=True)
            ]

    def append(self, ident: str, items: list[Any]) -> list[Any]:
        """Append ``items``; return them as listed (:func:`listed_item`).

        Raises:
            Rejection: 404, no such conversation.
        """
        with self._lock:
            entry = self._get(ident)
            start = entry.numbers[-1] + 1 if entry.numbers else 0
            numbers = list(range(start, start + len(items)))
            entry.items.extend(items)
            entry.numbers.extend(numbers)
            entry.size += sum(ITEM_BYTES + 2 * len(jsonbytes.dumps(item)) for item in items)
            self._budget.charge(self, ident, ITEM_BYTES + entry.size)
            return [listed_item(ident, n, item) for n, item in zip(numbers, items, strict=True)]

    def remove_item(self, ident: str, item_id: str) -> None:
        """Delete the item listed as ``item_id``.

        Raises:
            Rejection: 404, no such conversation or item.
        """
        with self._lock:
            entry = self._get(ident)
            for index, (number, item) in enumerate(zip(entry.numbers, entry.items, strict=True)):
                if listed_item(ident, number, item).get("id") == item_id:
                    del entry.items[index], entry.numbers[index]
                    return
        raise not_found("Item", item_id)

    def update(self, ident: str, metadata: dict[str, Any]) -> None:
        """Replace the conversation's metadata.

        Raises:
            Rejection: 404, no such conversation.
        """
        with self._lock:
            self._get(ident).metadata = metadata

    def delete(self, ident: str) -> None:
        """Forget the conversation.

        Raises:
            Rejection: 404, no such conversation.
        """
        with self._lock:
            self._get(ident)
            self._drop(ident)

    def describe(self, ident: str) -> bytes:
        """Return the ``conversation`` object.

        Raises:
            Rejection: 404, no such conversation.
        """
        with self._lock:
            entry = self._get(ident)
            return jsonbytes.dumps(
                {
                    "id": ident,
                    "object": "conversation",
                    "created_at": entry.created_at,
                    "metadata": entry.metadata,
                }
            )
