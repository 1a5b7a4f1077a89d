"""What a session keeps of the conversation: the tail, and the extracted summary (SPEC S1).

**The tail** (:func:`split_history`): when the history was compacted
(:mod:`llmcore.compaction`, C1) it starts with the user message ``# Conversation so far`` +
summary; that summary becomes ``compacted_history_summary`` and the compaction's kept turns
the ``recent_messages``. Otherwise ``recent_messages`` is the last :data:`RECENT_MESSAGES`
messages, cut at a turn start (:func:`~llmcore.compaction.turn_starts`) so no tool result is
separated from its call: the earliest turn start whose tail fits; the last turn whole if even
it is longer. A resume rebuilds the history as the summary message (if any) + the tail
(:func:`rebuild_history`).

**The summary and decisions** (:func:`extract`): one model call, made at ``/save`` and at exit
when the session has a runner (a provider is configured), with the runner's provider, model,
parameters and transport, system prompt :data:`EXTRACTION_PROMPT`, no tools, and one user
message: the transcript of the whole history (:func:`~llmcore.compaction.transcript`). The
model is asked for JSON ``{"summary": str, "decisions": [str]}``; an answer that is not such
JSON (after stripping a Markdown fence) is taken whole as the summary with no decisions. Its
cost is that one request: input ≈ the transcript (characters ÷ 4 tokens) + the prompt, and a
short output; :class:`Extraction` returns the reported usage and its priced
:class:`~llmcore.usage.Cost` so the caller can show it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.archive import ConversationState
from llmcore.compaction import SUMMARY_HEAD, transcript, turn_starts
from llmcore.errors import InvalidRequestError
from llmcore.messages import Message, Text
from llmcore.request import Request
from llmcore.runner import Runner
from llmcore.transport import model_argument
from llmcore.usage import Cost, Usage

__all__ = [
    "EXTRACTION_PROMPT",
    "RECENT_MESSAGES",
    "Extraction",
    "extract",
    "parse_extraction",
    "rebuild_history",
    "split_history",
]

RECENT_MESSAGES: Final = 20
"""N: the most messages ``recent_messages`` keeps when the history was not compacted."""
EXTRACTION_PROMPT: Final = (
    "You record the state of a working session between a user and a coding assistant so that "
    "a later session can resume it. Read the transcript and answer with one JSON object and "
    'nothing else: {"summary": "<a concise narrative of what the user wanted and what was '
    'done, with exact file names>", "decisions": ["<one key decision and its reason>", ...]}. '
    "Never include API keys, tokens, passwords or other secrets."
)
"""The system prompt of the extraction call."""


def split_history(history: Sequence[Message]) -> tuple[str | None, tuple[Message, ...]]:
    """Return (compacted summary or ``None``, the tail to store) — see the module doc."""
    head = history[0] if history else None
    if (
        head is not None
        and head.role == "user"
        and len(head.content) == 1
        and isinstance(head.content[0], Text)
        and head.content[0].text.startswith(SUMMARY_HEAD + "\n\n")
    ):
        return head.content[0].text[len(SUMMARY_HEAD) + 2 :], tuple(history[1:])
    starts = turn_starts(ConversationState(history=tuple(history)))
    if not starts:
        return None, tuple(history[-RECENT_MESSAGES:]) if len(history) > RECENT_MESSAGES else tuple(
            history
        )
    fitting = [s for s in starts if len(history) - s <= RECENT_MESSAGES]
    cut = fitting[0] if fitting else starts[-1]
    return None, tuple(history[cut:])


def rebuild_history(summary: str | None, tail: Sequence[Message]) -> tuple[Message, ...]:
    """Return the history a resume starts from: the summary message (if any), then ``tail``."""
    if summary:
        return (Message.user(f"{SUMMARY_HEAD}\n\n{summary}"), *tail)
    return tuple(tail)


@dataclass(frozen=True, slots=True, kw_only=True)
class Extraction:
    """The result of the extraction call."""

    summary: str | None
    """The narrative summary (``None`` if the answer was empty)."""
    decisions: tuple[str, ...]
    """The key decisions."""
    usage: Usage
    """The call's reported usage."""
    cost: Cost
    """Its cost from the runner's price table."""


def _strip_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        stripped = stripped[3:-3]
        stripped = stripped.removeprefix("json")
    return stripped.strip()


def parse_extraction(text: str) -> tuple[str | None, tuple[str, ...]]:
    """Read the model's answer: the JSON object, else the whole text as the summary."""
    try:
        value: Any = jsonbytes.loads(_strip_fence(text))
    except ValueError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("summary"), str):
        decisions = value.get("decisions", [])
        if isinstance(decisions, list):
            kept = tuple(d.strip() for d in decisions if isinstance(d, str) and d.strip())
            return value["summary"].strip() or None, kept
    return text.strip() or None, ()


def extract(runner: Runner, history: Sequence[Message]) -> Extraction:
    """Make the one extraction call through ``runner`` (see the module doc).

    Raises:
        InvalidRequestError: The runner has no transport.
        ProviderError: The call failed.
    """
    if runner.transport is None:
        raise InvalidRequestError("the extraction call needs a transport", location="transport")
    provider = runner.current_provider()
    request = Request(
        model=runner.model,
        system=(EXTRACTION_PROMPT,),
        messages=(Message.user(transcript(history) or "(no messages yet)"),),
        params=runner.params,
    )
    parsed = runner.transport.send(
        provider,
        provider.build_body(request),
        stream=runner.params.stream,
        **model_argument(provider, runner.model),
    )
    text = "\n".join(p.text for p in parsed.content if isinstance(p, Text))
    summary, decisions = parse_extraction(text)
    cost = runner.prices.cost(runner.model, parsed.usage)
    return Extraction(summary=summary, decisions=decisions, usage=parsed.usage, cost=cost)
