"""Adapters between framework message types and llmcore's history (SPEC M1–M4).

One module per framework form, each with ``to_history`` (framework → :class:`History`) and
``from_history`` (history → :class:`Converted`):

* :mod:`llmcore.adapters.openai_chat` — OpenAI Chat message lists (the form LiteLLM users hold);
* :mod:`llmcore.adapters.anthropic` — Anthropic ``MessageParam`` lists and ``system``;
* :mod:`llmcore.adapters.pydantic_ai` — pydantic-ai ``ModelMessage`` lists (needs the
  ``pydantic-ai`` extra; importing it without raises :class:`MissingDependencyError`).

The four content cases convert without loss both ways, tool-call argument bytes exactly (M2);
provider-only parts (thinking, signatures, reasoning) are dropped and said in the returned notes
(M4). Input outside the four cases raises a typed error naming the index and key. This package
imports no framework; the pydantic-ai module is imported only when asked for.
"""

from __future__ import annotations

from llmcore.adapters._common import Converted, History, MissingDependencyError

__all__ = ["Converted", "History", "MissingDependencyError"]
