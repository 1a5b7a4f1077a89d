"""``GET /v1/models`` and ``GET /v1/models/{id}`` for both providers (SPEC V2).

One path serves both APIs, told apart as the server tells every unknown path apart
(:func:`llmcore.emulator.routes.shape_of`): a request with an ``anthropic-version`` or
``x-api-key`` header gets Anthropic's shape, any other OpenAI's.

* Anthropic [A-MODELS] https://docs.anthropic.com/en/api/models-list (read 2026-12-02):
  ``{"data": [ModelInfo], "has_more", "first_id", "last_id"}`` with ``ModelInfo`` = ``type``
  ``"model"``, ``id``, ``display_name``, ``created_at`` (RFC 3339; "May be set to an epoch value
  if the release date is unknown"), ``lifecycle``; an unknown id is 404 ``not_found_error``.
* OpenAI [O-MODELS] https://platform.openai.com/docs/api-reference/models (read 2026-12-02):
  ``{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}``; an unknown
  id is 404 ``model_not_found``.

The model ids are the ones the pinned SDKs name (anthropic 2.14 ``Model``, openai 3.57
``ChatModel``, a selection); the emulator still answers a Messages or Chat request for any
model id, as it always has.
"""

from __future__ import annotations

import datetime
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.errors import Rejection, Shape

__all__ = ["ANTHROPIC_MODELS", "OPENAI_MODELS", "model_list", "model_one"]

ANTHROPIC_MODELS: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("claude-opus-4-8", "Claude Opus 4.8", "1970-01-01T00:00:00Z", "active"),
    ("claude-opus-4-7", "Claude Opus 4.7", "1970-01-01T00:00:00Z", "active"),
    ("claude-opus-4-6", "Claude Opus 4.6", "1970-01-01T00:00:00Z", "active"),
    ("claude-sonnet-4-6", "Claude Sonnet 4.6", "1970-01-01T00:00:00Z", "active"),
    ("claude-haiku-4-5-20251001", "Claude Haiku 4.5", "2025-10-01T00:00:00Z", "active"),
    ("claude-opus-4-5-20251101", "Claude Opus 4.5", "2025-11-01T00:00:00Z", "deprecated"),
    ("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5", "2025-09-29T00:00:00Z", "deprecated"),
)
"""``(id, display_name, created_at, lifecycle)``, newest first as the API lists them; a dated
id is also found by its alias without the date (``claude-haiku-4-5``)."""

OPENAI_MODELS: Final[tuple[tuple[str, str], ...]] = (
    ("gpt-5.5", "2026-04-23"),
    ("gpt-5.4", "2026-03-05"),
    ("gpt-5.4-mini", "2026-03-17"),
    ("gpt-5.4-nano", "2026-03-17"),
    ("gpt-5.2", "2025-12-11"),
    ("gpt-5.1", "2025-11-13"),
    ("gpt-5", "2025-08-07"),
    ("gpt-5-mini", "2025-08-07"),
    ("gpt-5-nano", "2025-08-07"),
    ("gpt-4.1", "2025-04-14"),
    ("gpt-4o", "2024-05-13"),
    ("gpt-4o-mini", "2024-07-18"),
)
"""``(id, release date)``: the date its dated snapshot id names (``gpt-5-2025-08-07``, in the
SDK's ``ChatModel`` or in recorded responses); ``created`` is that day at 00:00 UTC."""


def _anthropic(entry: tuple[str, str, str, str]) -> dict[str, Any]:
    ident, name, created, lifecycle = entry
    return {
        "type": "model",
        "id": ident,
        "display_name": name,
        "created_at": created,
        "lifecycle": lifecycle,
    }


def _openai(entry: tuple[str, str]) -> dict[str, Any]:
    day = datetime.date.fromisoformat(entry[1])
    created = int(datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC).timestamp())
    return {"id": entry[0], "object": "model", "created": created, "owned_by": "system"}


def model_list(shape: Shape) -> bytes:
    """Return the ``GET /v1/models`` body in ``shape`` (every model, one page)."""
    if shape == "anthropic":
        data = [_anthropic(entry) for entry in ANTHROPIC_MODELS]
        return jsonbytes.dumps(
            {"data": data, "has_more": False, "first_id": data[0]["id"], "last_id": data[-1]["id"]}
        )
    return jsonbytes.dumps({"object": "list", "data": [_openai(e) for e in OPENAI_MODELS]})


def model_one(shape: Shape, ident: str) -> bytes:
    """Return the ``GET /v1/models/{ident}`` body in ``shape``.

    Raises:
        Rejection: 404, the model is not in the table (``not_found_error`` /
            ``model_not_found``).
    """
    if shape == "anthropic":
        for entry in ANTHROPIC_MODELS:
            if ident in (entry[0], entry[0].rsplit("-", 1)[0] if entry[0][-8:].isdigit() else ""):
                return jsonbytes.dumps(_anthropic(entry))
        raise Rejection(f"model: {ident}", status=404, error_type="not_found_error")
    for known in OPENAI_MODELS:
        if known[0] == ident:
            return jsonbytes.dumps(_openai(known))
    raise Rejection(
        f"The model '{ident}' does not exist or you do not have access to it.",
        status=404,
        code="model_not_found",
    )
