"""Write ``conversation.json``, format 1 (SPEC A1–A4, U1, U2, F1): the encoding half of the codec.

:mod:`llmcore.archive.codec` re-exports :func:`encode` and :func:`encode_pieces` and describes
the format both ways; this module holds the writer and the key tables the reader shares.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.facts import TurnFacts
from llmcore.messages import Image
from llmcore.usage import Cost, CostKind, Usage

from ._history import history_json
from .format import FORMAT_VERSION, INDENT
from .fragments import FragmentCache
from .state import CardMap, ConversationState, Item

__all__ = ["encode", "encode_pieces"]

_COST_KINDS: Final[dict[str, CostKind]] = {
    "reported": "reported",
    "estimated": "estimated",
    "unknown": "unknown",
    "notBilled": "not_billed",
}
_COST_NAMES: Final = {value: key for key, value in _COST_KINDS.items()}
_USAGE_KEYS: Final = {
    "input": "input",
    "output": "output",
    "cacheRead": "cache_read",
    "cacheWrite": "cache_write",
    "webSearchRequests": "web_search_requests",
}


def encode(
    state: ConversationState,
    *,
    kept_images: Collection[str] | None = None,
    digest: Callable[[Image], str] | None = None,
    fragments: FragmentCache | None = None,
    kept_unread: Collection[str] = (),
) -> bytes:
    """Return the bytes of ``conversation.json`` for ``state`` (SPEC A1, A2).

    The concatenation of :func:`encode_pieces` (same arguments).

    Args:
        state: The conversation.
        kept_images: SHA-256 hex of the images written as ``image``; every other image is
            written as ``imageOmitted``. ``None`` keeps every image.
        kept_unread: SHA-256 hex of unread images (omitted-image texts with
            :attr:`~llmcore.messages.Text.unread_image_sha256`) whose file is still there: they
            are written as ``image`` blocks; every other omitted image as ``imageOmitted``.
        digest: Returns an image's SHA-256 hex (a cache); ``None`` hashes each image.
        fragments: Encoded messages and items of earlier calls, reused when unchanged (the
            output is the same bytes as without it).

    Raises:
        EncodingError: A value has no JSON form (cannot happen for values built through
            :mod:`llmcore.archive.state`).
    """
    pieces = encode_pieces(
        state, kept_images=kept_images, digest=digest, fragments=fragments, kept_unread=kept_unread
    )
    return b"".join(pieces)


def encode_pieces(
    state: ConversationState,
    *,
    kept_images: Collection[str] | None = None,
    digest: Callable[[Image], str] | None = None,
    fragments: FragmentCache | None = None,
    kept_unread: Collection[str] = (),
) -> list[bytes | memoryview]:
    """Return the bytes of :func:`encode` as pieces whose concatenation they are, in order.

    With ``fragments`` most pieces are the cached bytes of messages and items, so a save writes,
    hashes and compares a large file without copying it into one buffer. Arguments and errors
    are :func:`encode`'s.
    """
    doc = {
        "formatVersion": FORMAT_VERSION,
        "provider": state.provider,
        "model": state.model,
        "items": _items_json(state.items, fragments),
        "feedback": {
            key: {"rating": fb.rating, "reasons": list(fb.reasons)} for key, fb in state.feedback
        },
        "skillCards": _cards_json(state.skill_cards),
        "lintRuleCards": _cards_json(state.lint_rule_cards),
        "approvalCards": _cards_json(state.approval_cards),
        "resolvedCards": list(state.resolved_cards),
        "history": history_json(
            state.history,
            fragments,
            kept_images=kept_images,
            kept_unread=frozenset(kept_unread),
            digest=digest,
        ),
        "queued": list(state.queued),
        "unsent": list(state.unsent),
        "usage": _usage_json(state.usage.total),
        "lastRoundUsage": _usage_json(state.usage.last_round),
        "estimatedCost": _cost_json(state.usage.cost),
        "sentFacts": [_fact_json(turn) for turn in state.sent_facts.turns],
    }
    return jsonbytes.dumps_sorted_pieces(doc, indent=INDENT, end="\n")


def _no_variant(obj: object) -> None:
    return None


def _items_json(items: Sequence[Item], fragments: FragmentCache | None) -> Any:
    if fragments is None:
        return [item.fields() for item in items]
    return fragments.array("items", items, _no_variant, Item.fields)


def _cards_json(cards: CardMap) -> dict[str, Any]:
    return {key: jsonbytes.loads(text, exact_floats=True) for key, text in cards}


def _usage_json(usage: Usage) -> dict[str, Any]:
    out: dict[str, Any] = {disk: getattr(usage, attr) for disk, attr in _USAGE_KEYS.items()}
    if usage.cache_write_1h is not None:
        out["cacheWrite1h"] = usage.cache_write_1h
    if usage.reported_cost is not None:
        out["reportedCost"] = usage.reported_cost
    return out


def _cost_json(cost: Cost) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": _COST_NAMES[cost.kind]}
    if cost.dollars is not None:
        out["dollars"] = cost.dollars
    return out


def _fact_json(turn: TurnFacts) -> dict[str, Any]:
    out: dict[str, Any] = {"message": turn.message}
    if turn.sections is not None:
        out["sections"] = dict(turn.sections)
    return out
