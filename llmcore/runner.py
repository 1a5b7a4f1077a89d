"""The turn runner: one agent turn, user message to final answer (SPEC P4, P6, M2, M4, U, F1).

A turn is request → response → run the tool calls → tool results → request … until the model
answers without tool calls, or ``max_steps`` requests were made. Each request's body is built
by the provider module from the whole history (so P4 holds on every request of the turn, with
one :class:`~llmcore.providers.base.EncodeCache` per provider kept by the :class:`Runner`) and
sent as those exact bytes by a transport.

What the history gains, in order: the user message (F1 context sections that changed since the
model last saw them, then the message text); per response, one assistant message holding its
text and tool calls exactly as received (a response with no content adds none); per set of tool
calls, one ``tool`` message answering every call in call order, then — when a tool returned
images — one user message ``Here is the image you asked for.`` followed by those images (M2).

* A tool that raises, is unknown, or gets arguments that are not a JSON object gives an
  ``is_error`` result describing the failure; the turn goes on.
* Provider-only data (Anthropic thinking, Responses reasoning items) is carried in memory for
  the rest of the turn (:data:`~llmcore.providers.base.Carry`) and dropped when it ends (M4).
* Usage, last-round usage and cost (:class:`~llmcore.usage.UsageTotals`) are updated per
  request; the cost of each request comes from :mod:`llmcore.pricing`.
* **Generated images (U2).** A tool that generates images says so in
  :attr:`ToolOutput.generated` (:class:`GeneratedImage`: image model and count). Their cost,
  :meth:`~llmcore.pricing.PriceTable.image_cost`, is added to the cost of the request whose
  response made the tool call, so it reaches the conversation's cost (and the archive's
  ``estimatedCost``) with the kinds of :class:`~llmcore.usage.Cost`: a priced image model adds
  ``count × image price`` (``estimated``); an image model the table does not price makes the
  cost ``unknown``; the request's usage (tokens) is unchanged.
* The provider and model can change between turns (P6): the next request carries the same
  history; the conversation's ``provider`` and ``model`` are updated when that turn ends.
* **Errors and cancellation**: the turn's result is returned only when the turn ends. A
  provider error, a parse error, ``KeyboardInterrupt`` or task cancellation propagates and the
  caller's conversation is unchanged — nothing partial is ever appended. Tools that already
  ran are not undone.
* A turn that ends on ``pause_turn`` (an Anthropic server-tool loop paused) is not resumed:
  its server-tool blocks are provider-only and left out of the history (M4).

There is one conversation (:class:`llmcore.archive.Conversation`, holding a
:class:`~llmcore.archive.ConversationState`): a turn run on the host object advances it in place
through :meth:`~llmcore.archive.Conversation.end_turn` (A10), and the archive saves that same
object. It leaves out saving (:mod:`llmcore.archive`) and the panel transcript.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from llmcore import jsonbytes
from llmcore.archive import Conversation, ConversationState
from llmcore.checks import check_request, report
from llmcore.errors import InvalidRequestError
from llmcore.facts import Section, SentFacts, TurnFacts, plan_turn, render_sections
from llmcore.messages import (
    Image,
    Message,
    MessageContent,
    Text,
    ToolCall,
    ToolResult,
    clean_text,
)
from llmcore.pricing import PriceTable, default_prices
from llmcore.providers import get_provider
from llmcore.providers.base import EncodeCache, ParsedResponse, Provider, StopReason
from llmcore.request import Params, Request, Tool
from llmcore.transport import AsyncTransport, Transport, model_argument
from llmcore.usage import Cost, Usage

__all__ = [
    "IMAGE_FOLLOW_UP_TEXT",
    "FunctionTool",
    "GeneratedImage",
    "Runner",
    "ToolOutput",
    "TurnResult",
    "TurnStop",
]

IMAGE_FOLLOW_UP_TEXT: Final = "Here is the image you asked for."
"""The text of the user message that carries images returned by tools (M2)."""

TurnStop: TypeAlias = StopReason | Literal["step_limit"]
"""Why a turn ended: the last response's stop reason, or ``step_limit``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GeneratedImage:
    """Images a tool generated with an image model, for the conversation's cost (SPEC U2).

    The price table has one price per image per model (:attr:`ModelPrice.image
    <llmcore.pricing.ModelPrice.image>`, e.g. ``gpt-image-1`` at its 1024×1024 medium-quality
    rate); report images of another size or quality under a model name the table prices that
    way.
    """

    model: str
    """The image model's name, looked up in the price table (e.g. ``gpt-image-1``)."""
    count: int = 1
    """How many images it generated (at least 0)."""

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"a negative image count ({self.count})")


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutput:
    """What a tool may return besides a plain ``str`` / ``bytes`` / :class:`Image`."""

    content: str | bytes = b""
    """The result text (``str`` is sent as UTF-8) or raw bytes."""
    images: tuple[Image, ...] = ()
    """Images for the next user message (M2)."""
    is_error: bool = False
    """Whether the result reports a failure."""
    generated: tuple[GeneratedImage, ...] = ()
    """Images the tool generated (with any model), costed into the turn (U2)."""


ToolReturn: TypeAlias = str | bytes | Image | ToolOutput | dict[str, Any] | list[Any] | None
"""A tool's return value: text, bytes, an image, a :class:`ToolOutput`, or a JSON value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionTool:
    """A tool the model may call: its definition and the Python callable that runs it.

    The callable receives the call's arguments as a dict (parsed from the argument bytes) and
    returns a :data:`ToolReturn`; in :meth:`Runner.arun_turn` it may be ``async``.
    """

    tool: Tool
    """The definition sent to the model."""
    function: Callable[[dict[str, Any]], Any] = field(compare=False)
    """Runs the tool."""

    def __post_init__(self) -> None:
        if not isinstance(self.tool, Tool):
            kind = type(self.tool).__name__
            raise InvalidRequestError(f"a FunctionTool needs a Tool, not {kind}", location="tool")
        if not callable(self.function):
            raise InvalidRequestError(
                f"tool {self.tool.name!r}: the function must be callable, not "
                f"{type(self.function).__name__}",
                location="function",
            )

    @classmethod
    def create(
        cls,
        name: str,
        description: str,
        schema: dict[str, Any],
        function: Callable[[dict[str, Any]], Any],
    ) -> FunctionTool:
        """Return a tool from its name, description, JSON Schema and callable."""
        return cls(tool=Tool.from_schema(name, description, schema), function=function)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnResult:
    """The outcome of one turn."""

    state: ConversationState
    """The conversation after the turn (for a :class:`Conversation`, its new state)."""
    appended: tuple[Message, ...]
    """The messages this turn added to the history, in order."""
    stop: TurnStop
    """Why the turn ended."""
    bodies: tuple[bytes, ...]
    """The exact body bytes of each request of the turn."""
    responses: tuple[ParsedResponse, ...]
    """Each request's parsed response."""
    rounds: tuple[tuple[Usage, Cost], ...] = ()
    """Each request's usage and cost, in order."""


class _Turn:
    """The state of one running turn; the sync and async loops drive it."""

    def __init__(self, runner: Runner, start: ConversationState, user: Message) -> None:
        self.runner = runner
        self.provider = runner.current_provider()
        self.target = model_argument(self.provider, runner.model)
        """The model for a transport whose URL holds it (:func:`.transport.model_argument`)."""
        self.start = start
        self.messages: list[Message] = [*start.history, user]
        self.checked = len(start.history)
        """Messages already checked for what providers refuse (the history before the turn)."""
        self.carry: dict[int, tuple[str, ...]] = {}
        self.rounds: list[tuple[Usage, Cost]] = []
        self.bodies: list[bytes] = []
        self.responses: list[ParsedResponse] = []

    def body(self) -> bytes:
        request = Request(
            model=self.runner.model,
            system=self.runner.system,
            tools=tuple(t.tool for t in self.runner.tools),
            messages=tuple(self.messages),
            params=self.runner.params,
        )
        # What providers refuse, in the messages added since the last request (llmcore.checks).
        report(check_request(request, first=self.checked), stacklevel=4)
        self.checked = len(self.messages)
        cache = self.runner.cache_for(self.provider.name)
        body = self.provider.build_body(request, cache=cache, carry=self.carry)
        self.bodies.append(body)
        return body

    def accept(self, parsed: ParsedResponse) -> list[ToolCall]:
        """Record a response; return the tool calls to run (none ends the turn)."""
        self.responses.append(parsed)
        cost = self.runner.prices.cost(self.runner.model, parsed.usage)
        self.rounds.append((parsed.usage, cost))
        if not parsed.content:
            return []
        if parsed.carry:
            self.carry[len(self.messages)] = parsed.carry
        self.messages.append(Message(role="assistant", content=parsed.content))
        return [part for part in parsed.content if isinstance(part, ToolCall)]

    def add_results(self, outputs: list[tuple[ToolResult, ToolOutput]]) -> None:
        self.messages.append(Message.tool(*(result for result, _ in outputs)))
        images = [image for _, output in outputs for image in output.images]
        if images:
            self.messages.append(Message.user(IMAGE_FOLLOW_UP_TEXT, *images))
        generated = [g for _, output in outputs for g in output.generated]
        if generated:
            usage, cost = self.rounds[-1]
            for image in generated:
                cost = cost + self.runner.prices.image_cost(image.model, image.count)
            self.rounds[-1] = (usage, cost)

    def result(self, facts: SentFacts, stop: TurnStop) -> TurnResult:
        appended = tuple(self.messages[len(self.start.history) :])
        state = self.start.after_turn(
            messages=appended,
            provider=self.provider.name,
            model=self.runner.model,
            rounds=self.rounds,
            sent_facts=facts,
        )
        return TurnResult(
            state=state,
            appended=appended,
            stop=stop,
            bodies=tuple(self.bodies),
            responses=tuple(self.responses),
            rounds=tuple(self.rounds),
        )


def _finish(conversation: Conversation | ConversationState, result: TurnResult) -> TurnResult:
    """Advance a host :class:`Conversation` by the finished turn (A10); a value is left as is."""
    if isinstance(conversation, Conversation):
        conversation.end_turn(
            messages=result.appended,
            provider=result.state.provider,
            model=result.state.model,
            rounds=result.rounds,
            sent_facts=result.state.sent_facts,
        )
        return dataclasses.replace(result, state=conversation.state)
    return result


def _start(conversation: Conversation | ConversationState) -> ConversationState:
    if isinstance(conversation, Conversation):
        return conversation.state
    if not isinstance(conversation, ConversationState):
        raise InvalidRequestError(
            "the conversation must be a Conversation (ArchiveStore.open(), Conversation()) or a "
            f"ConversationState, not {type(conversation).__name__}",
            location="conversation",
        )
    return conversation


def _check_tools(tools: Sequence[FunctionTool]) -> tuple[FunctionTool, ...]:
    out = tuple(tools)
    for index, tool in enumerate(out):
        if not isinstance(tool, FunctionTool):
            hint = " (wrap a Tool with FunctionTool(tool=…, function=…))" * isinstance(tool, Tool)
            raise InvalidRequestError(
                f"tools[{index}] must be a FunctionTool, not {type(tool).__name__}{hint}",
                location=f"tools[{index}]",
            )
    return out


def _with_stream(params: Params, stream: bool | None) -> Params:
    """Return ``params`` with the runner's ``stream`` shortcut applied (:class:`Runner`)."""
    if stream is not None and not isinstance(stream, bool):
        raise InvalidRequestError(
            f"stream must be a bool or None, not {type(stream).__name__}", location="stream"
        )
    if stream is None or stream == params.stream:
        return params
    if params.stream:
        raise InvalidRequestError(
            "stream=False contradicts params.stream=True: give one of them", location="stream"
        )
    return dataclasses.replace(params, stream=True)


class Runner:
    """Runs turns of one conversation (see the module doc).

    Args:
        provider: A registered provider name or a provider module instance.
        model: The model name.
        transport: Sends bodies in :meth:`run_turn`.
        async_transport: Sends bodies in :meth:`arun_turn`.
        system: System prompt blocks.
        tools: The tools the model may call.
        params: Sampling and caching parameters.
        max_steps: Most requests in one turn (at least 1).
        prices: The price table for costs; the bundled one by default.
        stream: Ask for streamed responses: the shortcut for ``Params(stream=…)``. ``None``
            (the default) keeps ``params.stream``; ``True`` or ``False`` sets it in
            :attr:`params`. As ``Params.stream`` defaults to ``False``, ``stream=True`` beside
            params that leave it so streams; ``stream=False`` beside ``Params(stream=True)``
            contradicts it.

    Raises:
        InvalidRequestError: ``max_steps`` below 1, an empty model, a tool that is not a
            :class:`FunctionTool`, a ``stream`` that is not a bool or ``None``, or
            ``stream=False`` with ``params.stream`` true.
        UnknownProviderError: ``provider`` names no registered provider.

    Attributes ``provider`` (a name or instance) and ``model`` may be changed between turns (P6).
    """

    def __init__(
        self,
        *,
        provider: str | Provider,
        model: str,
        transport: Transport | None = None,
        async_transport: AsyncTransport | None = None,
        system: Sequence[str] = (),
        tools: Sequence[FunctionTool] = (),
        params: Params | None = None,
        max_steps: int = 25,
        prices: PriceTable | None = None,
        stream: bool | None = None,
    ) -> None:
        if max_steps < 1:
            raise InvalidRequestError("max_steps must be at least 1", location="max_steps")
        if not isinstance(model, str) or not model:
            raise InvalidRequestError("the model must be a non-empty string", location="model")
        if isinstance(system, str):
            system = (system,)
        self.provider = provider
        self.model = model
        self.transport = transport
        self.async_transport = async_transport
        self.system = tuple(system)
        self.tools = _check_tools(tools)
        self.params = _with_stream(params or Params(), stream)
        self.max_steps = max_steps
        self.prices = prices or default_prices()
        self._caches: dict[str, EncodeCache] = {}

    @property
    def provider(self) -> str | Provider:
        """The provider of the next turn: a registered name or a provider instance (P6).

        Raises:
            UnknownProviderError: Set to a name no provider is registered under (checked
                when set, so a misspelt name fails at construction, not at the first turn).
            InvalidRequestError: Set to something that is neither a name nor a provider.
        """
        return self._provider

    @provider.setter
    def provider(self, value: str | Provider) -> None:
        if isinstance(value, str):
            get_provider(value)
        elif not callable(getattr(value, "build_body", None)):
            raise InvalidRequestError(
                f"provider must be a provider name or instance, not {type(value).__name__}",
                location="provider",
            )
        self._provider = value

    def current_provider(self) -> Provider:
        """Return the provider module the next turn uses."""
        return get_provider(self.provider) if isinstance(self.provider, str) else self.provider

    def cache_for(self, name: str) -> EncodeCache:
        """Return the conversation's encode cache for provider ``name``."""
        return self._caches.setdefault(name, EncodeCache())

    def run_turn(
        self,
        conversation: Conversation | ConversationState,
        message: str | Message,
        *,
        sections: Sequence[Section] = (),
    ) -> TurnResult:
        """Run one turn with the sync transport.

        Args:
            conversation: The conversation so far. A :class:`Conversation` (the host object
                the archive saves) is advanced when the turn ends
                (:meth:`Conversation.end_turn`, which marks the document edited, A10); a
                :class:`ConversationState` value is left as it is and the new one returned in
                :attr:`TurnResult.state`. On any error neither changes.
            message: The user's message: text, or a user :class:`Message` (text and images).
            sections: The turn's context sections as they stand now (F1).

        Raises:
            InvalidRequestError: No transport, or the history cannot be sent.
            ProviderError: The request failed (``TransportError``, ``APIStatusError``,
                ``ResponseParseError``); the conversation is unchanged.
        """
        if self.transport is None:
            hint = (
                "; this runner has only an async_transport: use await runner.arun_turn(…)"
                if self.async_transport is not None
                else " (Runner(transport=HTTPTransport()))"
            )
            raise InvalidRequestError(f"run_turn needs a transport{hint}", location="transport")
        start = _start(conversation)
        user, facts = _user_message(start, message, sections)
        turn = _Turn(self, start, user)
        for _ in range(self.max_steps):
            parsed = self.transport.send(
                turn.provider, turn.body(), stream=self.params.stream, **turn.target
            )
            calls = turn.accept(parsed)
            if not calls:
                return _finish(conversation, turn.result(facts, parsed.stop_reason))
            turn.add_results([_finish_call(call, self._run_tool(call)) for call in calls])
        return _finish(conversation, turn.result(facts, "step_limit"))

    async def arun_turn(
        self,
        conversation: Conversation | ConversationState,
        message: str | Message,
        *,
        sections: Sequence[Section] = (),
    ) -> TurnResult:
        """As :meth:`run_turn` with the async transport; ``async`` tools are awaited.

        Cancelling the task leaves the caller's conversation unchanged.
        """
        if self.async_transport is None:
            hint = (
                "; this runner has only a sync transport: use runner.run_turn(…)"
                if self.transport is not None
                else " (Runner(async_transport=AsyncHTTPTransport()))"
            )
            raise InvalidRequestError(
                f"arun_turn needs an async transport{hint}", location="async_transport"
            )
        start = _start(conversation)
        user, facts = _user_message(start, message, sections)
        turn = _Turn(self, start, user)
        for _ in range(self.max_steps):
            body = turn.body()
            parsed = await self.async_transport.send(
                turn.provider, body, stream=self.params.stream, **turn.target
            )
            calls = turn.accept(parsed)
            if not calls:
                return _finish(conversation, turn.result(facts, parsed.stop_reason))
            results = []
            for call in calls:
                outcome = self._run_tool(call)
                if inspect.isawaitable(outcome):
                    outcome = await _await_tool(call, outcome)
                results.append(_finish_call(call, outcome))
            turn.add_results(results)
        return _finish(conversation, turn.result(facts, "step_limit"))

    def _run_tool(self, call: ToolCall) -> Any:
        """Run one call; return its value, an awaitable, or a :class:`ToolOutput` error."""
        tool = next((t for t in self.tools if t.tool.name == call.name), None)
        if tool is None:
            return ToolOutput(content=f"unknown tool {call.name!r}", is_error=True)
        arguments = _arguments(call.arguments)
        if arguments is None:
            return ToolOutput(content="the arguments are not a JSON object", is_error=True)
        try:
            return tool.function(arguments)
        except Exception as exc:  # a failing tool is a result, not a crash
            return ToolOutput(content=f"{type(exc).__name__}: {exc}", is_error=True)


async def _await_tool(call: ToolCall, outcome: Awaitable[Any]) -> Any:
    try:
        return await outcome
    except Exception as exc:  # a failing tool is a result, not a crash
        return ToolOutput(content=f"{type(exc).__name__}: {exc}", is_error=True)


def _arguments(data: bytes) -> dict[str, Any] | None:
    if not data.strip():
        return {}
    try:
        value = jsonbytes.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _finish_call(call: ToolCall, value: Any) -> tuple[ToolResult, ToolOutput]:
    """Turn a tool's return value into its result and its output (images, generated images)."""
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()
        value = ToolOutput(content="an async tool needs arun_turn", is_error=True)
    output = _as_output(value)
    content = output.content
    if isinstance(content, str):
        content = clean_text(content).encode("utf-8")
    result = ToolResult(
        call_id=call.id, tool_name=call.name, content=content, is_error=output.is_error
    )
    return result, output


def _as_output(value: Any) -> ToolOutput:
    if isinstance(value, ToolOutput):
        return value
    if value is None:
        return ToolOutput()
    if isinstance(value, str | bytes):
        return ToolOutput(content=value)
    if isinstance(value, Image):
        return ToolOutput(images=(value,))
    try:
        return ToolOutput(content=jsonbytes.dumps(value))
    except Exception as exc:  # an unwritable return value is the tool's failure
        return ToolOutput(content=f"the tool returned {type(value).__name__}: {exc}", is_error=True)


def _user_message(
    conversation: ConversationState, message: str | Message, sections: Sequence[Section]
) -> tuple[Message, SentFacts]:
    """Return the turn's user message (F1 sections first) and the facts to keep after it."""
    start = len(conversation.history)
    if not isinstance(message, str | Message):
        raise InvalidRequestError(
            f"the message must be text or a user Message, not {type(message).__name__}",
            location="message",
        )
    parts: list[MessageContent] = (
        [Text(text=message)] if isinstance(message, str) else list(message.content)
    )
    if isinstance(message, Message) and message.role != "user":
        raise InvalidRequestError("a turn starts with a user message", location="message")
    if not sections and not conversation.sent_facts.held():
        facts = SentFacts(turns=(*conversation.sent_facts.turns, TurnFacts(message=start)))
        return Message(role="user", content=tuple(parts)), facts
    plan = plan_turn(conversation.sent_facts, start=start, sections=sections)
    first = next((i for i, p in enumerate(parts) if isinstance(p, Text)), None)
    if first is None:
        head = render_sections(plan.send, "")
        parts = ([Text(text=head)] if head else []) + parts
    else:
        text = parts[first]
        assert isinstance(text, Text)
        parts[first] = Text(text=render_sections(plan.send, text.text))
    return Message(role="user", content=tuple(parts)), plan.facts
