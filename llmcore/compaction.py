"""Compaction: plan it, show its cost, run it with one model call (SPEC C1–C3).

Only on request, and never by itself (C4). :func:`plan_compaction` decides whether compaction is
offered and what it would cost; :func:`run_compaction` makes exactly one model call and applies
the result to the conversation.

**Offered** (C3) unless a turn is running, the history has two turns or fewer, or the
conversation runs on a CLI backend (B1); each refusal is a typed :class:`Refusal`.

**Where the cut goes** (C1): turns are cut only at turn boundaries. A turn starts at the user
message each turn's facts record (:attr:`~llmcore.facts.TurnFacts.message`, F1); without facts,
at each user message that follows nothing or an assistant message without tool calls (an image
follow-up message, which follows a tool message, never starts a turn). Every turn but the last
two is summarized; the kept tail is the last two turns verbatim, so no tool result is ever
separated from its call.

**The cost preview** (C2): input tokens are the last request's total input (uncached input +
cache read + cache write), or the history's text characters ÷ 4 when no usage was reported
yet; dollars come from the price table (``None`` when the model is not priced).

**The call**: one request through the runner's transport and provider, with the runner's model
and parameters, system prompt :data:`SUMMARY_PROMPT` and no tools; its one user message is the
summarized turns as a plain-text transcript (:func:`transcript`: text as is, tool calls and
results as lines, each tool result cut to :data:`RESULT_CHARS` characters, images as
``[image]``), so the request is valid for every provider whatever the turns held.

**The result** (C1): the history becomes one user message ``# Conversation so far`` + a blank
line + the summary, then the last two turns verbatim; the old tool results and images are gone.
The panel keeps every item and gains one ``notice``; the turn facts keep the kept turns' starts
with no sections, so the next turn resends every section in full; the call's usage and cost are
added to the totals. A failed call or an empty summary changes nothing but adds a ``failure``
item (C3). Saving is the host's: :meth:`~llmcore.archive.ArchiveStore.save`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Final, Literal

from llmcore.archive import Conversation, ConversationState, Item
from llmcore.errors import LLMCoreError
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.pricing import PriceTable, default_prices
from llmcore.request import Request
from llmcore.runner import Runner
from llmcore.tokens import BYTES_PER_TOKEN
from llmcore.transport import model_argument
from llmcore.usage import Usage

__all__ = [
    "KEPT_TURNS",
    "RESULT_CHARS",
    "SUMMARY_HEAD",
    "SUMMARY_PROMPT",
    "CompactionOutcome",
    "CompactionPlan",
    "Refusal",
    "plan_compaction",
    "run_compaction",
    "transcript",
    "turn_starts",
]

SUMMARY_HEAD: Final = "# Conversation so far"
"""The first line of the summary message (SPEC C1)."""
KEPT_TURNS: Final = 2
"""Turns kept verbatim after the summary (C1)."""
RESULT_CHARS: Final = 2000
"""Characters of each tool result the transcript keeps (the rest is marked as cut)."""
SUMMARY_PROMPT: Final = (
    "You summarize a conversation between a user and a coding assistant so that the "
    "assistant can continue the work without the full history. Write a concise summary in "
    "Markdown: the user's goals and requests, what was done (files read, changed or created, "
    "commands and their outcomes), decisions and their reasons, open questions and the next "
    "steps. Keep names, paths, numbers and error messages exact. Answer with the summary only."
)
"""The system prompt of the summarization call."""


class Refusal(Enum):
    """Why compaction is not offered (SPEC C3)."""

    TURN_RUNNING = "a turn is running"
    TOO_FEW_TURNS = f"the conversation has {KEPT_TURNS} turns or fewer"
    CLI_BACKEND = "the conversation runs on a CLI backend, whose history is the CLI's own"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionPlan:
    """What a compaction would do and cost (SPEC C2, C3)."""

    refusal: Refusal | None
    """Why it is not offered; ``None`` when it is."""
    turns: int
    """Turns in the history."""
    keep_from: int
    """History index where the kept tail (the last two turns) starts; 0 when not offered."""
    summarized_messages: int
    """History messages the summary replaces."""
    input_tokens: int
    """Input tokens of the call, as C2 estimates them."""
    input_source: Literal["last_request", "characters"]
    """Where :attr:`input_tokens` comes from: the last request's usage or characters ÷ 4."""
    model: str
    """The model the call would use."""
    dollars: float | None
    """Estimated cost of the call's input in US dollars; ``None`` if the model is not priced."""

    @property
    def offered(self) -> bool:
        """Whether compaction is offered."""
        return self.refusal is None


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionOutcome:
    """What :func:`run_compaction` did."""

    ok: bool
    """Whether the history was compacted."""
    summary: str
    """The summary text (empty on failure)."""
    usage: Usage | None
    """The call's usage (``None`` if it failed before a response)."""
    failure: str | None = None
    """Why it failed (also in the added ``failure`` item)."""


def turn_starts(state: ConversationState) -> tuple[int, ...]:
    """Return the history index where each turn starts, in order (see the module doc)."""
    history = state.history
    recorded = [turn.message for turn in state.sent_facts.turns if turn.message < len(history)]
    if recorded and all(history[i].role == "user" for i in recorded):
        return tuple(sorted(set(recorded)))
    starts = []
    for index, message in enumerate(history):
        if message.role != "user":
            continue
        before = history[index - 1] if index else None
        if before is None or (
            before.role == "assistant" and not any(isinstance(p, ToolCall) for p in before.content)
        ):
            starts.append(index)
    return tuple(starts)


def plan_compaction(
    conversation: Conversation | ConversationState,
    *,
    model: str | None = None,
    prices: PriceTable | None = None,
    turn_running: bool = False,
    cli_backend: bool = False,
) -> CompactionPlan:
    """Return the compaction plan and its cost preview (SPEC C1–C3).

    Args:
        conversation: The conversation (host object or state).
        model: The model the call would use (default: the conversation's model).
        prices: The price table (default: the bundled one).
        turn_running: A turn is running now (not offered).
        cli_backend: The conversation runs on a CLI backend (not offered).
    """
    state = conversation.state if isinstance(conversation, Conversation) else conversation
    model = model or state.model
    starts = turn_starts(state)
    tokens, source = _input_estimate(state)
    usage = Usage(input=tokens)
    cost = (prices or default_prices()).cost(model, usage)
    refusal = None
    if turn_running:
        refusal = Refusal.TURN_RUNNING
    elif cli_backend:
        refusal = Refusal.CLI_BACKEND
    elif len(starts) <= KEPT_TURNS:
        refusal = Refusal.TOO_FEW_TURNS
    keep_from = 0 if refusal else starts[-KEPT_TURNS]
    return CompactionPlan(
        refusal=refusal,
        turns=len(starts),
        keep_from=keep_from,
        summarized_messages=keep_from,
        input_tokens=tokens,
        input_source=source,
        model=model,
        dollars=cost.dollars if cost.kind in ("estimated", "reported") else None,
    )


def _input_estimate(state: ConversationState) -> tuple[int, Literal["last_request", "characters"]]:
    last = state.usage.last_round
    total = last.input + last.cache_read + last.cache_write
    if total:
        return total, "last_request"
    characters = sum(len(p.text) for m in state.history for p in m.content if isinstance(p, Text))
    return characters // BYTES_PER_TOKEN, "characters"


def transcript(messages: Sequence[Message]) -> str:
    """Return ``messages`` as the plain-text transcript the summarization call reads."""
    lines: list[str] = []
    for message in messages:
        for part in message.content:
            lines.append(_line(message.role, part))
    return "\n\n".join(lines)


def _line(role: str, part: object) -> str:
    speaker = {"user": "User", "assistant": "Assistant", "tool": "Tool"}[role]
    if isinstance(part, Text):
        return f"{speaker}: {part.text}"
    if isinstance(part, Image):
        return f"{speaker}: [image, {part.mime_type}]"
    if isinstance(part, ToolCall):
        arguments = part.arguments.decode("utf-8", "replace")
        return f"Assistant called {part.name}({arguments})"
    assert isinstance(part, ToolResult)
    text = part.content.decode("utf-8", "replace")
    if len(text) > RESULT_CHARS:
        text = text[:RESULT_CHARS] + f" [… {len(text) - RESULT_CHARS} more characters cut]"
    status = "failed" if part.is_error else "returned"
    return f"Tool {part.tool_name} {status}: {text}"


def run_compaction(
    conversation: Conversation, runner: Runner, plan: CompactionPlan | None = None
) -> CompactionOutcome:
    """Compact ``conversation`` with one call through ``runner`` (SPEC C1, C3).

    Args:
        conversation: The host conversation; changed in place (the host saves it).
        runner: Its transport, provider, model and parameters make the call.
        plan: A plan from :func:`plan_compaction` (made now when ``None``).

    Returns:
        The outcome; on failure the conversation only gained a ``failure`` item.

    Raises:
        LLMCoreError: ``plan`` is not offered (its refusal is the message), or the runner has
            no transport.
    """
    plan = plan or plan_compaction(conversation, model=runner.model, prices=runner.prices)
    if plan.refusal is not None:
        raise LLMCoreError(f"compaction is not offered: {plan.refusal.value}")
    if runner.transport is None:
        raise LLMCoreError("compaction needs a runner with a transport")
    state = conversation.state
    provider = runner.current_provider()
    request = Request(
        model=runner.model,
        system=(SUMMARY_PROMPT,),
        messages=(Message.user(transcript(state.history[: plan.keep_from])),),
        params=runner.params,
    )
    try:
        parsed = runner.transport.send(
            provider,
            provider.build_body(request),
            stream=runner.params.stream,
            **model_argument(provider, runner.model),
        )
    except LLMCoreError as exc:
        return _failed(conversation, f"the summarization call failed: {exc}", None)
    summary = "\n".join(p.text for p in parsed.content if isinstance(p, Text)).strip()
    if not summary:
        return _failed(
            conversation, "the summarization call returned an empty summary", parsed.usage
        )
    _apply(conversation, plan, summary, parsed.usage, runner)
    return CompactionOutcome(ok=True, summary=summary, usage=parsed.usage)


def _apply(
    conversation: Conversation, plan: CompactionPlan, summary: str, usage: Usage, runner: Runner
) -> None:
    state = conversation.state
    shift = plan.keep_from - 1
    starts = turn_starts(state)
    kept = [start - shift for start in starts if start >= plan.keep_from]
    turns = len(starts)
    notice = Item.make(
        id=f"compaction-{len(state.items)}",
        type="notice",
        text=f"Compacted {turns - KEPT_TURNS} earlier turns into a summary; "
        f"the last {KEPT_TURNS} turns are kept as they were.",
    )
    conversation.compact(
        summary=Message.user(f"{SUMMARY_HEAD}\n\n{summary}"),
        keep_from=plan.keep_from,
        notice=notice,
        kept_turn_starts=kept,
        rounds=[(usage, runner.prices.cost(runner.model, usage))],
    )


def _failed(conversation: Conversation, reason: str, usage: Usage | None) -> CompactionOutcome:
    item = Item.make(
        id=f"compaction-failure-{len(conversation.state.items)}", type="failure", text=reason
    )
    conversation.add_items([item])
    return CompactionOutcome(ok=False, summary="", usage=usage, failure=reason)
