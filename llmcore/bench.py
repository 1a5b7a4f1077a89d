"""The main job: a scripted agent session whose prompt-cache hits are measured (SPEC R2 ``bench``).

:func:`run_bench` starts the provider emulator in-process (SPEC V2) with its built-in agent
script, and plays the session's user prompts through the turn runner (:mod:`llmcore.runner`)
with the script's four workspace tools — parallel calls, a 12 KB tool result, a ~49 KB image,
an error result — as a real agent would. Midway it saves the conversation archive, drops every
in-memory state, and reopens it (SPEC A, P5); later it switches provider once (P6). Every
request's usage comes back from the emulator's cache accounting; the stability auditor
(SPEC V1) then computes, from the bodies actually sent, the theoretical maximum it could have
been. Both count tokens with :mod:`llmcore.tokens`.

hit rate = Σ cache_read ÷ Σ (input + cache_read + cache_write), per request and in total.

With ``live=True`` the same prompts go to the real API of one provider (an API key from the
environment is required; it is never used otherwise). A live run reads with
:data:`LIVE_TIMEOUT` (120 s per read, not the library's 600 s for long generations: the
session's answers are short, and an endpoint that accepts but never answers must not hold the
command for half an hour across retries), and ``on_send`` names each request as it starts
waiting, so a progress display can say which request is outstanding.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import httpx

from llmcore import jsonbytes
from llmcore.archive import ArchiveStore, Conversation
from llmcore.audit import audit_bodies
from llmcore.messages import Image
from llmcore.providers import get_provider
from llmcore.providers.base import ParsedResponse, Provider
from llmcore.request import Params, Request
from llmcore.runner import FunctionTool, Runner, ToolOutput
from llmcore.transport import HTTPTransport, Transport
from llmcore.usage import Usage

if TYPE_CHECKING:
    from llmcore.emulator import AgentWorkspace, ManualClock

__all__ = [
    "DEFAULT_PLAN",
    "LIVE_MODELS",
    "LIVE_TIMEOUT",
    "BenchLeg",
    "BenchResult",
    "BenchRow",
    "run_bench",
]

LIVE_TIMEOUT: Final = httpx.Timeout(connect=10.0, read=120.0, write=60.0, pool=10.0)
"""The httpx timeout of ``bench --live``: connect 10 s, read 120 s, write 60 s, pool 10 s."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchLeg:
    """A stretch of the session on one provider and model."""

    provider: str
    """The provider's registry name."""
    model: str
    """The model name sent."""
    turns: int
    """User turns played on this leg."""
    reopen_after: int | None = None
    """After this many user turns of the leg, save the archive and reopen it."""


LIVE_MODELS: Final[dict[str, str]] = {
    "anthropic": "claude-sonnet-4-6",
    "openai-chat": "gpt-5.4-mini",
    "openai-responses": "gpt-5.4-mini",
    "openrouter": "anthropic/claude-sonnet-4.6",
    "gemini": "gemini-2.5-flash",
    "bedrock-converse": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
}
"""The model ``bench --live --provider P`` uses when ``--model`` is not given.

``bedrock-converse`` names a Bedrock cross-region inference profile; a live run signs with the
AWS credential chain (``AWS_ACCESS_KEY_ID`` …, ``AWS_PROFILE``) and ``AWS_REGION``, or sends a
Bedrock API key from ``AWS_BEARER_TOKEN_BEDROCK``; neither is ever logged.

Each is a model the pinned ``anthropic`` and ``openai`` SDKs do not mark deprecated
(``anthropic._data.DEPRECATED_MODELS``; the "Deprecated values" list of
``openai.types.shared.ChatModel``); ``tests/test_default_models.py`` checks it.
"""

DEFAULT_PLAN: Final = (
    BenchLeg(provider="anthropic", model=LIVE_MODELS["anthropic"], turns=6, reopen_after=3),
    BenchLeg(provider="openai-chat", model=LIVE_MODELS["openai-chat"], turns=3),
)
"""The embedded session: 9 user turns (24 requests); reopen after turn 3, switch after turn 6."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchRow:
    """One request of the session."""

    request: int
    """1-based request number."""
    turn: int
    """1-based user turn the request belongs to."""
    provider: str
    """The provider it went to."""
    model: str
    """The model."""
    usage: Usage
    """Its usage as the provider reported it (normalized, U1)."""
    event: str = ""
    """``reopened`` on the first request after the archive was reopened, ``switched`` on the
    first request after the provider switch, ``first image`` on the first request carrying an
    image (Anthropic then reads only tools and system from its cache, PROVIDER-RULES §1.6)."""

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens: input + cache_read + cache_write."""
        return self.usage.input + self.usage.cache_read + self.usage.cache_write

    @property
    def hit_rate(self) -> float:
        """cache_read ÷ prompt tokens (0 for an empty prompt)."""
        total = self.prompt_tokens
        return self.usage.cache_read / total if total else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchResult:
    """The whole session's numbers."""

    rows: tuple[BenchRow, ...]
    """Every request, in order."""
    bodies: tuple[bytes, ...]
    """The exact bodies sent, in order."""
    theoretical_hit_rate: float
    """The auditor's Σ max cacheable tokens ÷ Σ prompt tokens over :attr:`bodies` (V1)."""
    audit_breaks: int
    """Prefix-invariant breaks the auditor found in :attr:`bodies` (expected 0): breaks of kind
    ``prefix``; the script's first image is a ``parameter`` break of the messages level, inherent
    to the conversation and already a miss in the maximum."""
    reopen_identical: bool
    """Whether the body built after reopening equals the one built before saving (P5)."""
    archive_bytes: int
    """Size of ``conversation.json`` at the reopen (bytes)."""
    live: bool = False
    """Whether a real API answered."""

    @property
    def hit_rate(self) -> float:
        """Σ cache_read ÷ Σ (input + cache_read + cache_write)."""
        read = sum(r.usage.cache_read for r in self.rows)
        total = sum(r.prompt_tokens for r in self.rows)
        return read / total if total else 0.0

    def to_json(self) -> bytes:
        """The machine-readable results (UTF-8 JSON, keys sorted)."""
        rows = [
            {
                "request": r.request,
                "turn": r.turn,
                "provider": r.provider,
                "model": r.model,
                "input": r.usage.input,
                "cacheRead": r.usage.cache_read,
                "cacheWrite": r.usage.cache_write,
                "output": r.usage.output,
                "hitRate": round(r.hit_rate, 6),
                "event": r.event,
            }
            for r in self.rows
        ]
        value = {
            "live": self.live,
            "requests": len(self.rows),
            "hitRate": round(self.hit_rate, 6),
            "theoreticalHitRate": round(self.theoretical_hit_rate, 6),
            "auditBreaks": self.audit_breaks,
            "reopenIdentical": self.reopen_identical,
            "archiveBytes": self.archive_bytes,
            "bodyBytes": sum(len(b) for b in self.bodies),
            "rows": rows,
        }
        return jsonbytes.dumps_sorted(value, indent=2) + b"\n"


def _agent_tools(workspace: AgentWorkspace) -> list[FunctionTool]:
    from llmcore.emulator import AGENT_TOOLS

    def make(name: str) -> Callable[[dict[str, Any]], ToolOutput]:
        def run(arguments: dict[str, Any]) -> ToolOutput:
            outcome = workspace.call(name, jsonbytes.dumps(arguments))
            images: tuple[Image, ...] = ()
            if outcome.image is not None:
                images = (Image(data=outcome.image[0], mime_type=outcome.image[1]),)
            return ToolOutput(content=outcome.content, images=images, is_error=outcome.is_error)

        return run

    return [
        FunctionTool.create(t.name, t.description, dict(t.input_schema), make(t.name))
        for t in AGENT_TOOLS
    ]


class _Announcing:
    """A :class:`~llmcore.transport.Transport` that names each request before it is sent."""

    def __init__(self, inner: Transport, on_send: Callable[[int, str], None]) -> None:
        self._inner = inner
        self._on_send = on_send
        self.sent = 0

    def send(
        self, provider: Provider, body: bytes, *, stream: bool = False, model: str | None = None
    ) -> ParsedResponse:
        """Call ``on_send(request number, provider name)``, then send through the inner one."""
        self.sent += 1
        self._on_send(self.sent, provider.name)
        return self._inner.send(provider, body, stream=stream, **_model(model))


@dataclass(slots=True)
class _Session:
    """The mutable state of one bench run."""

    transport: Transport
    tools: list[FunctionTool]
    on_request: Callable[[BenchRow], None] | None
    conversation: Conversation = field(default_factory=Conversation)
    rows: list[BenchRow] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    event: str = ""
    turn: int = 0
    reopen_identical: bool = True
    archive_bytes: int = 0
    clock: ManualClock | None = None
    image_seen: bool = False

    def runner(self, leg: BenchLeg) -> Runner:
        from llmcore.emulator.session import SYSTEM

        params = Params(max_tokens=1024)
        return Runner(
            provider=leg.provider,
            model=leg.model,
            transport=self.transport,
            system=(SYSTEM,),
            tools=self.tools,
            params=params,
        )

    def play(self, runner: Runner, leg: BenchLeg, prompt: str) -> None:
        self.turn += 1
        result = runner.run_turn(self.conversation, prompt)  # advances self.conversation
        for body, response in zip(result.bodies, result.responses, strict=True):
            if not self.image_seen and _carries_image(body):
                self.image_seen = True
                self.event = ", ".join(filter(None, (self.event, "first image")))
            row = BenchRow(
                request=len(self.rows) + 1,
                turn=self.turn,
                provider=leg.provider,
                model=leg.model,
                usage=response.usage,
                event=self.event,
            )
            self.event = ""
            self.rows.append(row)
            self.bodies.append(body)
            if self.on_request is not None:
                self.on_request(row)
        if self.clock is not None:
            self.clock.advance(30.0)

    def reopen(self, runner: Runner, leg: BenchLeg, folder: Path) -> Runner:
        before = _next_body(runner, self.conversation, leg)
        store = ArchiveStore(folder)
        store.save(self.conversation)
        self.archive_bytes = store.conversation_file.stat().st_size
        self.conversation = ArchiveStore(folder).open()  # every in-memory state dropped
        fresh = self.runner(leg)  # a new process would start with empty encode caches
        self.reopen_identical = before == _next_body(fresh, self.conversation, leg)
        self.event = "reopened"
        return fresh


_IMAGE_MARKERS: Final = (b'"type":"image"', b'"type":"image_url"', b'"type":"input_image"')


def _carries_image(body: bytes) -> bool:
    """Whether a body (as llmcore writes it) holds an image block or part."""
    return any(marker in body for marker in _IMAGE_MARKERS)


def _next_body(runner: Runner, conversation: Conversation, leg: BenchLeg) -> bytes:
    """The body the next turn would start with for a fixed probe message (P5 check)."""
    from llmcore.messages import Message

    request = Request(
        model=leg.model,
        system=runner.system,
        tools=tuple(t.tool for t in runner.tools),
        messages=(*conversation.history, Message.user("probe")),
        params=runner.params,
    )
    return get_provider(leg.provider).build_body(request)


def _play_legs(session: _Session, plan: Sequence[BenchLeg], folder: Path) -> None:
    from llmcore.emulator.session import PROMPTS

    prompts = iter(PROMPTS)
    for index, leg in enumerate(plan):
        runner = session.runner(leg)
        if index:
            session.event = "switched"
        for played in range(leg.turns):
            prompt = next(prompts, None)
            if prompt is None:
                return
            session.play(runner, leg, prompt)
            if leg.reopen_after == played + 1:
                runner = session.reopen(runner, leg, folder)


def _result(session: _Session, live: bool) -> BenchResult:
    report = audit_bodies(session.bodies)
    return BenchResult(
        rows=tuple(session.rows),
        bodies=tuple(session.bodies),
        theoretical_hit_rate=report.theoretical_hit_rate,
        audit_breaks=report.prefix_breaks,
        reopen_identical=session.reopen_identical,
        archive_bytes=session.archive_bytes,
        live=live,
    )


def run_bench(
    *,
    plan: Sequence[BenchLeg] = DEFAULT_PLAN,
    live: bool = False,
    on_request: Callable[[BenchRow], None] | None = None,
    on_send: Callable[[int, str], None] | None = None,
    archive_folder: Path | None = None,
    live_timeout: httpx.Timeout | float = LIVE_TIMEOUT,
) -> BenchResult:
    """Play the agent session and measure its prompt-cache hits.

    Args:
        plan: The legs (provider, model, user turns, where to reopen). Live runs use one leg.
        live: Send to the real APIs (keys from the environment) instead of the emulator.
        on_request: Called with each request's row as soon as its turn ends (progress).
        on_send: Called with (1-based request number, provider name) just before each request
            is sent, i.e. while it is outstanding (progress).
        archive_folder: Where the archive is saved and reopened (default: a temporary folder).
        live_timeout: The httpx timeout of a live run (seconds, or an ``httpx.Timeout``).

    Returns:
        Every request's usage, the bodies sent, and the auditor's theoretical maximum.

    Raises:
        ProviderError: A provider (or the emulator) failed; a live read that waits longer
            than ``live_timeout`` is a :class:`~llmcore.errors.TransportError` (after retries).
        MissingAPIKeyError: ``live`` without the provider's API key.
    """
    from llmcore.emulator import AgentWorkspace, Emulator, ManualClock

    workspace = AgentWorkspace()
    with tempfile.TemporaryDirectory(prefix="llmcore-bench-") as tmp:
        folder = archive_folder or Path(tmp) / "agent"
        if live:
            with HTTPTransport(timeout=live_timeout) as http:
                session = _Session(_announce(http, on_send), _agent_tools(workspace), on_request)
                _play_legs(session, plan, folder)
            return _result(session, live)
        clock = ManualClock()
        with Emulator(clock=clock) as emulator:
            names = {leg.provider for leg in plan}
            transport = HTTPTransport(
                base_urls={name: _emulator_base(emulator, name) for name in names},
                api_keys=dict.fromkeys(names, "emulator"),
            )
            announced = _announce(transport, on_send)
            session = _Session(announced, _agent_tools(workspace), on_request, clock=clock)
            _play_legs(session, plan, folder)
            transport.close()
        return _result(session, live)


def _emulator_base(emulator: Any, provider: str) -> str:
    """The emulator's base URL for ``provider`` (Gemini's paths are under ``/v1beta``)."""
    return str(emulator.gemini_base_url if provider == "gemini" else emulator.base_url)


def _announce(transport: Transport, on_send: Callable[[int, str], None] | None) -> Transport:
    return transport if on_send is None else _Announcing(transport, on_send)


def with_provider(plan: Sequence[BenchLeg], provider: str, model: str | None) -> list[BenchLeg]:
    """Return ``plan`` as one leg on ``provider`` (live runs have one provider).

    The model is ``model``, else the provider's :data:`LIVE_MODELS` entry, else the plan's first.
    """
    turns = sum(leg.turns for leg in plan)
    first = plan[0]
    chosen = model or LIVE_MODELS.get(provider, first.model)
    return [replace(first, provider=provider, model=chosen, turns=turns)]


def _model(model: str | None) -> dict[str, str]:
    """The ``model=`` argument to pass on, only when there is one (inner fakes may lack it)."""
    return {} if model is None else {"model": model}
