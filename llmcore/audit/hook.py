"""An httpx hook that audits every request a client sends, as it is sent (SPEC V6).

The official SDKs take an ``http_client=``: ``anthropic==2.14`` and ``openai==3.57`` take an
``httpx2.Client`` / ``httpx2.AsyncClient``, other clients (pydantic-ai's providers, LiteLLM,
plain code) an ``httpx`` one. :func:`watch` adds an event hook pair to either kind::

    client = anthropic.Anthropic(http_client=watch(httpx2.Client()))

Each POST to a model endpoint (``/messages``, ``/chat/completions``, ``/responses``, …) is
audited before it leaves (:class:`~llmcore.audit.live.LiveAudit`, the verdicts of
``llmcore audit``); the answer's usage is read from a copy of its bytes as the caller reads
them (:class:`~llmcore.audit.tap.UsageTap`; streamed or not, the caller's stream is not
consumed). On a break, ``on_break`` runs before the request is sent: by default a
:class:`CacheBreakWarning` naming the request and the JSON path; ``"raise"`` raises
:class:`CacheBreakError` instead, so the request is never sent (the SDKs wrap it: anthropic and
openai raise their ``APIConnectionError`` with the :class:`CacheBreakError` as ``__cause__``,
and a retry of the same body is refused again); a callable gets the
:class:`~llmcore.audit.live.Observation`.

Leaves out: the proxy (:mod:`llmcore.proxy`), LiteLLM (:mod:`llmcore.audit.litellm`).
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import warnings
import weakref
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Final, Literal, TypeVar

from llmcore.audit.live import LiveAudit, Observation, is_model_path
from llmcore.audit.report import AuditInputError
from llmcore.audit.tap import UsageTap
from llmcore.errors import LLMCoreError

__all__ = ["CacheBreakError", "CacheBreakWarning", "OnBreak", "break_handler", "watch"]

OnBreak = Callable[[Observation], object] | Literal["warn", "raise"] | None
"""What to do on a break: warn (``None`` or ``"warn"``), ``"raise"``, or call a function."""

ClientT = TypeVar("ClientT")

_REFUSED_KEPT: Final = 256
"""Bodies whose break ``on_break`` raised for, remembered (by digest) to refuse their retries."""


class CacheBreakWarning(UserWarning):
    """A request broke the prompt-cache prefix of its conversation (the message names where).

    Args:
        observation: The request as audited.
    """

    def __init__(self, observation: Observation) -> None:
        self.observation = observation
        super().__init__(f"llmcore: cache break: {observation.describe()}")


class CacheBreakError(LLMCoreError):
    """Raised by ``on_break="raise"`` before a request that breaks the prefix is sent.

    Args:
        observation: The request as audited.
    """

    def __init__(self, observation: Observation) -> None:
        self.observation = observation
        record = observation.record
        super().__init__(
            f"cache break: {observation.describe()}",
            location=f"request {observation.number}: {record.path}" if record.path else None,
        )


def break_handler(on_break: OnBreak) -> Callable[[Observation], object]:
    """The function ``on_break`` stands for (:data:`OnBreak`).

    Raises:
        ValueError: ``on_break`` is a string other than ``"warn"`` or ``"raise"``.
    """
    if on_break is None or on_break == "warn":
        return _warn
    if on_break == "raise":
        return _raise
    if callable(on_break):
        return on_break
    raise ValueError(f"on_break must be 'warn', 'raise' or a function, not {on_break!r}")


def _warn(observation: Observation) -> None:
    warnings.warn(CacheBreakWarning(observation), stacklevel=2)


def _raise(observation: Observation) -> None:
    raise CacheBreakError(observation)


class _Hooks:
    """The request and response hooks of one watched client."""

    def __init__(self, audit: LiveAudit, on_break: Callable[[Observation], object], lib: Any):
        self.audit = audit
        self.on_break = on_break
        self.lib = lib
        self.seen: weakref.WeakKeyDictionary[Any, Observation] = weakref.WeakKeyDictionary()
        self.refused: dict[bytes, Observation] = {}

    def observe(self, request: Any, body: bytes) -> None:
        digest = hashlib.blake2b(body, digest_size=16).digest()
        refused = self.refused.get(digest)
        if refused is not None:  # an SDK's retry of a refused request is refused again
            self.on_break(refused)
        try:
            observation = self.audit.observe(body, path=request.url.path)
        except AuditInputError:
            return  # not a body the auditor reads: the provider will say what is wrong
        self.seen[request] = observation
        if observation.is_break:
            try:
                self.on_break(observation)
            except BaseException:
                self.refused[digest] = observation
                while len(self.refused) > _REFUSED_KEPT:
                    self.refused.pop(next(iter(self.refused)))
                raise

    def answer(self, response: Any) -> _Answer | None:
        observation = self.seen.pop(response.request, None)
        if observation is None:
            return None
        headers = response.headers
        tap = UsageTap(headers.get("content-type"), headers.get("content-encoding"))
        return _Answer(self, observation, response.status_code, tap)

    def done(self, observation: Observation, status: int, tap: UsageTap) -> None:
        self.audit.answered(observation, status, tap.finish(), tap.response_id)


def _wanted(request: Any) -> bool:
    return bool(request.method == "POST" and is_model_path(request.url.path))


class _Answer:
    """One answer being read: its usage tap, reported to the audit once, at its end."""

    __slots__ = ("finished", "hooks", "observation", "status", "usage")

    def __init__(self, hooks: _Hooks, observation: Observation, status: int, usage: UsageTap):
        self.hooks, self.observation, self.status, self.usage = hooks, observation, status, usage
        self.finished = False

    def finish(self) -> None:
        if not self.finished:
            self.finished = True
            self.hooks.done(self.observation, self.status, self.usage)


def _sync_stream(lib: Any) -> type:
    """A ``lib.SyncByteStream`` that copies each chunk to an :class:`_Answer` as it passes."""

    class Tapped(lib.SyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, answer: _Answer) -> None:
            self.inner, self.answer = inner, answer

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self.inner:
                self.answer.usage.feed(chunk)
                yield chunk
            self.answer.finish()

        def close(self) -> None:
            self.answer.finish()
            self.inner.close()

    return Tapped


def _async_stream(lib: Any) -> type:
    """A ``lib.AsyncByteStream`` that copies each chunk to an :class:`_Answer` as it passes."""

    class Tapped(lib.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, inner: Any, answer: _Answer) -> None:
            self.inner, self.answer = inner, answer

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self.inner:
                self.answer.usage.feed(chunk)
                yield chunk
            self.answer.finish()

        async def aclose(self) -> None:
            self.answer.finish()
            await self.inner.aclose()

    return Tapped


def _sync_hooks(hooks: _Hooks) -> tuple[Callable[[Any], None], Callable[[Any], None]]:
    tapped = _sync_stream(hooks.lib)

    def on_request(request: Any) -> None:
        if _wanted(request):
            hooks.observe(request, request.read())

    def on_response(response: Any) -> None:
        answer = hooks.answer(response)
        if answer is not None:
            response.stream = tapped(response.stream, answer)

    return on_request, on_response


def _async_hooks(hooks: _Hooks) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    tapped = _async_stream(hooks.lib)

    async def on_request(request: Any) -> None:
        if _wanted(request):
            hooks.observe(request, await request.aread())

    async def on_response(response: Any) -> None:
        answer = hooks.answer(response)
        if answer is not None:
            response.stream = tapped(response.stream, answer)

    return on_request, on_response


def watch(
    client: ClientT,
    on_break: OnBreak = None,
    *,
    audit: LiveAudit | None = None,
    provider: str | None = None,
) -> ClientT:
    """Audit every model request ``client`` sends; return ``client`` (with its hooks added).

    Args:
        client: An ``httpx.Client``, ``httpx.AsyncClient``, ``httpx2.Client`` or
            ``httpx2.AsyncClient`` (any client with httpx's ``event_hooks``).
        on_break: :data:`OnBreak`: ``None``/``"warn"`` warns a :class:`CacheBreakWarning`,
            ``"raise"`` raises :class:`CacheBreakError` before the request is sent, a function
            is called with the :class:`~llmcore.audit.live.Observation`.
        audit: The :class:`~llmcore.audit.live.LiveAudit` to add to (to read its
            :meth:`~llmcore.audit.live.LiveAudit.rows`, or to share one between clients);
            default: a new one.
        provider: A provider name for every body (default: each body's path and shape).

    Raises:
        TypeError: ``client`` has no httpx ``event_hooks``.
        ValueError: ``on_break`` is an unknown string.
    """
    hooks_now = getattr(client, "event_hooks", None)
    if not isinstance(hooks_now, dict):
        raise TypeError(f"{type(client).__name__} is not an httpx client (no event_hooks)")
    lib = importlib.import_module(type(client).__module__.split(".", 1)[0])
    hooks = _Hooks(audit or LiveAudit(provider), break_handler(on_break), lib)
    is_async = inspect.iscoroutinefunction(getattr(client, "send", None))
    on_request, on_response = _async_hooks(hooks) if is_async else _sync_hooks(hooks)
    client.event_hooks = {  # type: ignore[attr-defined]
        "request": [*hooks_now.get("request", []), on_request],
        "response": [*hooks_now.get("response", []), on_response],
    }
    return client
