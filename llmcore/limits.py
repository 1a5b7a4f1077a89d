"""The bundled context-limits table and the compaction notice rule (SPEC C4, P6).

``llmcore/data/context_limits.json`` holds, per model, its context window in tokens, with the
pages it was taken from and the date (``sources``, ``retrieved``). Windows change with new
models: the file is the one place to update them.

Lookup (:func:`context_limit`): the exact model name, after removing a ``vendor/`` prefix
(OpenRouter), a dated snapshot suffix (``-20250929``, ``-2025-04-14``) or ``-latest``; Claude
names also match with OpenRouter's dotted versions (``claude-sonnet-4.6``). Any other name is
**unknown** (``None``): a model the table does not list never gets a guessed window, so it never
gets a notice.

The notice rule (:func:`context_notice_fields`), applied when a turn ends
(:meth:`~llmcore.archive.ConversationState.after_turn`, so every runner turn gets it): the
conversation gains one ``notice`` panel item offering compaction when the turn **crosses**
:data:`NOTICE_FRACTION` (80 %) of the current model's window — its last request read at least
80 % (read = ``input + cache_read + cache_write`` of
:attr:`~llmcore.usage.UsageTotals.last_round`) while the request before it (the previous turn's
last, on the model that ran it) read less than 80 % of *that* model's window, or no request was
made before. A conversation that stays above the line gets no second notice; one that drops
below (after a compaction) and crosses again gets a new one. The notice id is
:data:`NOTICE_ID_PREFIX` followed by the history length at the crossing, and a notice whose id
is already present is not added again. The limit follows the model the turn ran on (P6): after
a switch from a large window to a small one, the same usage can cross. An unknown model never
crosses. Nothing here calls a model; compaction happens only on request (C1).

It leaves out compaction itself (:mod:`llmcore.compaction`) and per-model output defaults
(:mod:`llmcore.models`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.usage import Usage

__all__ = [
    "NOTICE_FRACTION",
    "NOTICE_ID_PREFIX",
    "ContextLimits",
    "context_limit",
    "context_notice_fields",
    "crossed",
    "default_limits",
    "parse_limits",
]

NOTICE_FRACTION: Final = 0.8
"""The share of the context window whose reading triggers the compaction notice (C4)."""

NOTICE_ID_PREFIX: Final = "llmcore-context-limit-"
"""Start of the notice item's id; the history length at the crossing follows it."""

_SNAPSHOT: Final = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextLimits:
    """A context-limits table: model → window in tokens, plus where and when it was taken."""

    models: tuple[tuple[str, int], ...]
    """(model name, context window in tokens)."""
    sources: tuple[str, ...] = ()
    """The pages the windows come from."""
    retrieved: str = ""
    """The date they were checked (ISO 8601)."""

    def lookup(self, model: str) -> int | None:
        """Return the window of ``model`` in tokens, or ``None`` when unknown (module doc)."""
        table = dict(self.models)
        name = model.rsplit("/", 1)[-1]
        for candidate in (model, name, _SNAPSHOT.sub("", name)):
            for spelling in (candidate, _dashed(candidate)):
                if spelling in table:
                    return table[spelling]
        return None


def _dashed(name: str) -> str:
    return name.replace(".", "-") if name.startswith("claude") else name


def parse_limits(data: bytes, where: str = "context_limits.json") -> ContextLimits:
    """Return the table a ``context_limits.json`` text holds.

    Raises:
        ValueError: Not JSON, no ``models`` object, or a window that is not a positive
            integer (the message names ``where`` and the key).
    """
    top: Any = jsonbytes.loads(data)
    if not isinstance(top, dict) or not isinstance(top.get("models"), dict):
        raise ValueError(f"{where}: expected an object with a 'models' object")
    models: list[tuple[str, int]] = []
    for name, tokens in top["models"].items():
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
            raise ValueError(f"{where}: $.models.{name} must be a positive integer")
        models.append((name, tokens))
    sources = top.get("sources", [])
    return ContextLimits(
        models=tuple(models),
        sources=tuple(str(s) for s in sources) if isinstance(sources, list) else (),
        retrieved=str(top.get("retrieved", "")),
    )


@functools.cache
def default_limits() -> ContextLimits:
    """Return the bundled table (``llmcore/data/context_limits.json``), read once."""
    data = resources.files("llmcore").joinpath("data/context_limits.json").read_bytes()
    return parse_limits(data, "llmcore/data/context_limits.json")


def context_limit(model: str) -> int | None:
    """Return ``model``'s context window in tokens from the bundled table; ``None`` if unknown."""
    return default_limits().lookup(model)


def crossed(model: str, usage: Usage, limits: ContextLimits | None = None) -> bool:
    """Return whether a request with ``usage`` on ``model`` read at least 80 % of its window.

    An unknown model (no window in the table) never crosses.
    """
    window = (limits or default_limits()).lookup(model)
    return window is not None and usage.total_input >= NOTICE_FRACTION * window


def context_notice_fields(
    *,
    model: str,
    last_round: Usage,
    previous_model: str,
    previous_round: Usage | None,
    history_length: int,
    limits: ContextLimits | None = None,
) -> dict[str, Any] | None:
    """Return the compaction notice's fields when a turn crossed 80 % (C4, module doc).

    Args:
        model: The model the turn ran on (the current model, P6).
        last_round: The turn's last request's usage (tokens).
        previous_model: The model of the turn before (``""`` for none).
        previous_round: The last request's usage before this turn; ``None`` if there was none.
        history_length: Messages in the history after the turn (makes the id).
        limits: The table; the bundled one by default.

    Returns:
        ``{"id", "type": "notice", "detail", "contextLimit", "contextRead"}`` (tokens), or
        ``None`` when the turn did not cross (an unknown model never does).
    """
    table = limits or default_limits()
    if not crossed(model, last_round, table):
        return None
    if previous_round is not None and crossed(previous_model, previous_round, table):
        return None
    window = table.lookup(model)
    assert window is not None
    read = last_round.total_input
    return {
        "id": f"{NOTICE_ID_PREFIX}{history_length}",
        "type": "notice",
        "detail": (
            f"The last request used {100 * read // window}% of {model}'s context window "
            f"({read:,} of {window:,} tokens). Compact the conversation to keep going; "
            "nothing is summarized until you ask."
        ),
        "contextLimit": window,
        "contextRead": read,
    }
