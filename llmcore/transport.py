"""Sending request bodies: the transport Protocol and the httpx transports, sync and async (P7).

A transport takes a provider and the exact body bytes its module built (P2) and returns the
parsed response. The bytes go on the wire unchanged — never parsed, never re-serialized, since
that would break P4/P5 — as ``POST <base URL><endpoint path>`` with ``content-type:
application/json``.

* **API keys** come from ``api_keys`` or the environment (``ANTHROPIC_API_KEY``,
  ``OPENAI_API_KEY``, ``OPENROUTER_API_KEY``: :attr:`Endpoint.api_key_env`). They go only into
  the auth header; they are never logged, never put in an error, never written anywhere.
* **Base URL** per provider: ``base_urls[name]``, else the environment variable named like the
  key with ``_BASE_URL`` (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``, ``OPENROUTER_BASE_URL``),
  else the provider's default. With an overridden base URL a missing key is allowed (local
  emulators need none) and no auth header is sent. The base URL is the part before the
  endpoint path (``/v1/messages``, ``/v1/chat/completions``, ``/v1/responses``). For the
  OpenAI-style providers (``openai-chat``, ``openai-responses``, ``openrouter``) both forms are
  accepted: the OpenAI SDK's convention includes ``/v1`` (``OPENAI_BASE_URL=
  https://api.openai.com/v1``, ``https://openrouter.ai/api/v1``), so one trailing ``/v1`` is
  dropped before the path is appended, never giving ``/v1/v1/…``. Anthropic's SDK convention
  has no ``/v1`` (``ANTHROPIC_BASE_URL=https://api.anthropic.com``); that value is used as given.
* **Cloud endpoints** (SPEC P8): ``endpoints`` maps a provider name to a
  :class:`~llmcore.cloud.base.CloudEndpoint` (:class:`~llmcore.cloud.anthropic.AnthropicVertex`,
  :class:`~llmcore.cloud.anthropic.AnthropicBedrock`, :class:`~llmcore.cloud.azure.AzureOpenAI`),
  or lists endpoints, each taking the providers it serves. That provider's bodies then go where
  the endpoint says, with its headers (a SigV4 signature, a fresh Google token, an Azure key)
  made again for every attempt; base URLs and API keys do not apply to it. An
  ``application/vnd.amazon.eventstream`` answer is decoded by
  :mod:`llmcore.providers._eventstream` and turned into the provider's events by the endpoint.
* **Model in the URL, SigV4** (Bedrock Converse): an endpoint path holding ``{model}`` is filled
  from ``send(..., model=...)`` (:func:`model_argument`), and a streamed request goes to
  :attr:`~llmcore.providers.base.Endpoint.stream_path`. An endpoint with ``sigv4`` auth is
  signed for every attempt by :class:`llmcore.cloud.aws.SigV4Signer` (the ``aws`` extra; region
  and credentials from the AWS chain or the transport's ``environ``, never logged) unless an API
  key (a Bedrock bearer key) is set; the default base URL's ``{region}`` is the signer's. Its
  ``application/vnd.amazon.eventstream`` answer is read message by message
  (:func:`aws_events`).
* **Vertex AI bearer tokens** (Gemini): a base URL on one of the provider's
  :attr:`~llmcore.providers.base.Endpoint.bearer_hosts` sends ``Authorization: Bearer`` with
  ``api_keys``' key, else the endpoint's variable (``GOOGLE_OAUTH_ACCESS_TOKEN``), else the token
  of ``google_auth`` (:class:`~llmcore.cloud.google.GoogleAuth`: Application Default
  Credentials, refreshed when expired; the ``google`` extra, without which
  :class:`MissingAPIKeyError` names the variable and the extra).
* **Timeouts**: connect 10 s, read 600 s, write 60 s by default (:data:`DEFAULT_TIMEOUT`; the
  long read is for long generations — ``llmcore bench --live`` passes 120 s).
* **Retries** (:class:`RetryPolicy`): statuses 408, 409, 429, 5xx (Anthropic 529
  ``overloaded_error`` included) and connection failures or timeouts are retried with
  exponential backoff and jitter; a ``retry-after`` / ``retry-after-ms`` header sets the wait
  instead (capped). A stream that breaks after it started raises :class:`StreamBrokenError` (a
  :class:`~llmcore.errors.TransportError`; not retried; nothing of it reaches a history). An
  ``error`` event inside a stream is the provider's status error and is retried like one.
* **Errors**: :class:`~llmcore.errors.TransportError` (no response), the provider module's
  :class:`~llmcore.errors.APIStatusError` (status, provider error type and message, request id,
  ``retryable``), :class:`~llmcore.errors.ResponseParseError` (a body or stream that cannot be
  parsed), :class:`MissingAPIKeyError` (a caller mistake).

* **Checking before sending**: :meth:`HTTPTransport.prepare` resolves all of the above for a
  provider and model (key, token, SigV4 credentials, a cloud endpoint's settings) and raises
  what the first :meth:`~HTTPTransport.send` would, without sending anything.

Tests feed handler functions through ``httpx.MockTransport`` by passing ``client=``.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

import anyio
import httpx

from llmcore._transport_setup import (
    MissingAPIKeyError,
    _endpoint_map,
    _parsed_url,
    _planner,
    _preflight,
    _Setup,
    _Setups,
    _wire_headers,
    aws_events,
)
from llmcore.errors import (
    APIStatusError,
    ProviderError,
    ResponseParseError,
    TransportError,
)
from llmcore.providers._eventstream import CONTENT_TYPE as EVENTSTREAM
from llmcore.providers._eventstream import EventMessage, EventStreamDecoder
from llmcore.providers._sse import SSEEvent, SSEReader
from llmcore.providers.base import ParsedResponse, Provider, StreamParser

if TYPE_CHECKING:
    from llmcore.cloud.base import CloudEndpoint, WireRequest
    from llmcore.cloud.google import GoogleAuth

__all__ = [
    "DEFAULT_TIMEOUT",
    "AsyncHTTPTransport",
    "AsyncTransport",
    "HTTPTransport",
    "MissingAPIKeyError",
    "RetryPolicy",
    "StreamBrokenError",
    "Transport",
    "aws_events",
    "model_argument",
]

_log = logging.getLogger("llmcore.transport")

DEFAULT_TIMEOUT: Final = httpx.Timeout(connect=10.0, read=600.0, write=60.0, pool=10.0)
"""Connect 10 s, read 600 s (long generations), write 60 s, pool 10 s."""


class StreamBrokenError(TransportError):
    """The connection broke after the response body started; nothing of it was kept.

    Not retried by the transport (the generation may have cost tokens already); ``retryable``
    is true, so the caller may send the same body again.
    """


class Transport(Protocol):
    """Sends body bytes to a provider and returns the parsed response."""

    def send(
        self, provider: Provider, body: bytes, *, stream: bool = False, model: str | None = None
    ) -> ParsedResponse:
        """Send ``body`` exactly as given and return the parsed response.

        Args:
            provider: The provider module the body was built by.
            body: The exact body bytes (SPEC P2).
            stream: Whether the body asked for a server-sent-event stream. The response's
                content type (``text/event-stream``) or an event-stream body decides how it
                is read, so a recorded JSON answer to a streamed request still parses. Where
                the API streams on a path of its own (:attr:`Endpoint.stream_path`) it picks
                that path.
            model: The model, for an API whose URL holds it (Gemini, Bedrock Converse);
                callers pass it only there (:func:`model_argument`).

        Raises:
            TransportError: No response (after retries).
            APIStatusError: An HTTP error status (after retries for retryable ones).
            ResponseParseError: The response cannot be parsed.
        """
        ...


class AsyncTransport(Protocol):
    """The asyncio form of :class:`Transport`."""

    async def send(
        self, provider: Provider, body: bytes, *, stream: bool = False, model: str | None = None
    ) -> ParsedResponse:
        """As :meth:`Transport.send`."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """When and how long to wait before sending a request again.

    The wait before retry ``n`` (0-based) is ``min(max_delay, initial_delay * 2**n)`` reduced by
    a random fraction up to ``jitter``; a ``retry-after`` header replaces it, capped at
    ``max_retry_after`` (a longer ask is not retried).
    """

    max_retries: int = 2
    """Retries after the first attempt."""
    initial_delay: float = 0.5
    """Seconds before the first retry."""
    max_delay: float = 8.0
    """Longest computed wait, seconds."""
    jitter: float = 0.25
    """Largest random fraction taken off a computed wait."""
    max_retry_after: float = 60.0
    """Longest ``retry-after`` honoured, seconds."""

    def delay(self, attempt: int, error: ProviderError, rand: float) -> float | None:
        """Return the seconds to wait before retry ``attempt``, or ``None`` not to retry.

        Args:
            attempt: 0 for the first retry.
            error: The failure of the attempt before.
            rand: A number in [0, 1) for the jitter.
        """
        if attempt >= self.max_retries or not error.retryable:
            return None
        asked = error.retry_after if isinstance(error, APIStatusError) else None
        if asked is not None:
            return asked if asked <= self.max_retry_after else None
        base: float = min(self.max_delay, self.initial_delay * (2.0**attempt))
        return base * (1.0 - self.jitter * rand)


def model_argument(provider: Provider, model: str) -> dict[str, str]:
    """Return ``{"model": model}`` for a provider whose URL holds the model, else ``{}``.

    The keyword arguments a caller adds to :meth:`Transport.send`, so a transport of a provider
    with a fixed path is called as before.
    """
    return {"model": model} if "{model}" in provider.endpoint.path else {}


def _transport_error(provider: Provider, exc: httpx.HTTPError, url: str) -> TransportError:
    kind = type(exc).__name__
    return TransportError(
        f"{provider.name}: no response from {url} ({kind}: {exc})",
        provider=provider.name,
        retryable=True,
    )


def _cut_error(provider: Provider, exc: httpx.HTTPError, received: int) -> StreamBrokenError:
    return StreamBrokenError(
        f"{provider.name}: the response stream broke after {received} bytes "
        f"({type(exc).__name__}: {exc}); nothing of it was kept",
        provider=provider.name,
        retryable=True,
    )


def _stream_kind(response: httpx.Response) -> str | None:
    """``"sse"``, ``"aws"`` (an AWS event stream) or ``None`` (a whole body)."""
    content_type: str = response.headers.get("content-type", "")
    if content_type.startswith("text/event-stream"):
        return "sse"
    return "aws" if content_type.startswith(EVENTSTREAM) else None


def _wait(policy: RetryPolicy, attempt: int, error: ProviderError, rand: float) -> float | None:
    if isinstance(error, StreamBrokenError):
        return None
    return policy.delay(attempt, error, rand)


class _StreamState:
    """Feeds body chunks to the SSE reader and the provider's stream parser."""

    def __init__(self, provider: Provider) -> None:
        self.reader = SSEReader(provider.name)
        self.parser: StreamParser = provider.stream_parser()
        self.received = 0

    def feed(self, chunk: bytes) -> None:
        self.received += len(chunk)
        for event in self.reader.feed(chunk):
            self.parser.feed(event)

    def finish(self) -> ParsedResponse:
        for event in self.reader.close():
            self.parser.feed(event)
        return self.parser.finish()


class _AWSStreamState:
    """Feeds an AWS event stream's messages, as events, to the provider's stream parser."""

    def __init__(
        self, provider: Provider, convert: Callable[[EventMessage], Iterable[SSEEvent]] | None
    ) -> None:
        if convert is None:
            raise ResponseParseError(
                f"{provider.name}: an AWS event stream answered a request that expects none",
                provider=provider.name,
            )
        self.decoder = EventStreamDecoder(provider.name)
        self.convert = convert
        self.parser: StreamParser = provider.stream_parser()
        self.received = 0

    def feed(self, chunk: bytes) -> None:
        self.received += len(chunk)
        for message in self.decoder.feed(chunk):
            for event in self.convert(message):
                self.parser.feed(event)

    def finish(self) -> ParsedResponse:
        self.decoder.close()
        return self.parser.finish()


def _stream_state(
    provider: Provider, response: httpx.Response, wire: WireRequest
) -> _StreamState | _AWSStreamState | None:
    """The reader of a streamed answer, or ``None`` when the answer is read whole."""
    kind = _stream_kind(response)
    if response.status_code >= 400 or kind is None:
        return None
    return _StreamState(provider) if kind == "sse" else _AWSStreamState(provider, wire.event_stream)


class HTTPTransport:
    """The synchronous httpx transport (see the module doc).

    Args:
        base_urls: Base URL per provider name, overriding environment and defaults.
        api_keys: API key per provider name, overriding the environment.
        timeout: httpx timeout; :data:`DEFAULT_TIMEOUT` by default.
        retry: The retry policy.
        client: An httpx client to use (e.g. with ``httpx.MockTransport``); closed by
            :meth:`close` only if this transport made it.
        sleep: Waits between retries (tests pass a recorder).
        rand: Returns the jitter fraction in [0, 1).
        environ: Where keys and base URLs are read (``os.environ`` by default).
        endpoints: Cloud endpoints by provider name, or a list of them (see the module doc).
        google_auth: Where a Vertex AI base URL's bearer token comes from when neither
            ``api_keys`` nor the endpoint's variable (``GOOGLE_OAUTH_ACCESS_TOKEN``) holds one
            (:class:`~llmcore.cloud.google.GoogleAuth`; Application Default Credentials by
            default, the ``google`` extra).
    """

    def __init__(
        self,
        *,
        base_urls: Mapping[str, str] | None = None,
        api_keys: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
        environ: Mapping[str, str] | None = None,
        endpoints: Mapping[str, CloudEndpoint] | Iterable[CloudEndpoint] | None = None,
        google_auth: GoogleAuth | None = None,
    ) -> None:
        self._endpoints = _endpoint_map(endpoints)
        self._setups = _Setups(
            dict(base_urls or {}),
            dict(api_keys or {}),
            os.environ if environ is None else environ,
            google_auth,
        )
        self._owns = client is None
        self._client = client if client is not None else httpx.Client(timeout=timeout)
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._rand = rand

    def close(self) -> None:
        """Close the httpx client if this transport made it."""
        if self._owns:
            self._client.close()

    def __enter__(self) -> HTTPTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(
        self, provider: Provider, body: bytes, *, stream: bool = False, model: str | None = None
    ) -> ParsedResponse:
        """Send ``body`` unchanged and return the parsed response (see :meth:`Transport.send`).

        Raises:
            MissingAPIKeyError: No key and no base URL override.
            TransportError: No response after the retries, or a stream that broke.
            APIStatusError: An error status (after the retries for retryable ones).
            ResponseParseError: A body or stream that cannot be parsed.
        """
        plan = _planner(
            provider,
            body,
            stream,
            self._endpoints.get(provider.name),
            self._setup(provider),
            model,
        )
        attempt = 0
        while True:
            try:
                return self._once(provider, plan())
            except (TransportError, APIStatusError) as error:
                wait = _wait(self._retry, attempt, error, self._rand())
                if wait is None:
                    raise
                _log.info(
                    "%s: retry %d in %.3f s after: %s", provider.name, attempt + 1, wait, error
                )
                self._sleep(wait)
                attempt += 1

    def prepare(self, provider: Provider, *, model: str, stream: bool = False) -> str:
        """Resolve what a request of ``provider`` needs, without sending; return its URL.

        The base URL and key, a Vertex AI token, SigV4 region and credentials, or the cloud
        endpoint's settings, as the first :meth:`send` would (a command checks them before
        its first prompt). The URL holds no secret.

        Raises:
            MissingAPIKeyError: No key and no base URL override.
            MissingCredentialsError: No cloud credentials (the chain tried is named).
            CloudSetupError: A missing cloud setting (region, project, location).
            MissingDependencyError: The ``aws`` or ``google`` extra is needed and missing.
        """
        endpoint = self._endpoints.get(provider.name)
        return _preflight(provider, endpoint, self._setup(provider), model, stream)

    def _setup(self, provider: Provider) -> Callable[[], _Setup]:
        return lambda: self._setups(provider)

    def _once(self, provider: Provider, wire: WireRequest) -> ParsedResponse:
        _log.debug("%s: POST %s (%d bytes)", provider.name, wire.url, len(wire.body))
        request = self._client.build_request(
            "POST", _parsed_url(wire.url), content=wire.body, headers=_wire_headers(wire.headers)
        )
        try:
            response = self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise _transport_error(provider, exc, wire.url) from exc
        try:
            return self._read(provider, response, wire)
        finally:
            response.close()

    def _read(
        self, provider: Provider, response: httpx.Response, wire: WireRequest
    ) -> ParsedResponse:
        state = _stream_state(provider, response, wire)
        if state is None:
            try:
                data = response.read()
            except httpx.HTTPError as exc:
                raise _cut_error(provider, exc, 0) from exc
            return _plain(provider, response, data, wire)
        chunks: Iterator[bytes] = response.iter_bytes()
        try:
            for chunk in chunks:
                state.feed(chunk)
        except httpx.HTTPError as exc:
            raise _cut_error(provider, exc, state.received) from exc
        return state.finish()


def _plain(
    provider: Provider, response: httpx.Response, data: bytes, wire: WireRequest
) -> ParsedResponse:
    """Turn a whole (non-stream) response into a parsed response or a typed error."""
    status = response.status_code
    if status >= 400 or status < 200:
        raise (wire.error or provider.parse_error)(status, data, dict(response.headers))
    try:
        if data.lstrip().startswith((b"event:", b"data:")):
            state = _StreamState(provider)
            state.feed(data)
            return state.finish()
        return provider.parse_response(data)
    except ResponseParseError as exc:
        rid = response.headers.get("request-id") or response.headers.get("x-request-id")
        if rid and "request id" not in exc.message:
            exc.message += f" (request id {rid})"
            exc.args = (exc.message,)
        raise


class AsyncHTTPTransport:
    """The asyncio httpx transport; arguments as :class:`HTTPTransport` with async ``sleep``.

    A Google token refresh (``google_auth``) is google-auth's blocking call, made at most once
    per token lifetime.
    """

    def __init__(
        self,
        *,
        base_urls: Mapping[str, str] | None = None,
        api_keys: Mapping[str, str] | None = None,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        client: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        rand: Callable[[], float] = random.random,
        environ: Mapping[str, str] | None = None,
        endpoints: Mapping[str, CloudEndpoint] | Iterable[CloudEndpoint] | None = None,
        google_auth: GoogleAuth | None = None,
    ) -> None:
        self._endpoints = _endpoint_map(endpoints)
        self._setups = _Setups(
            dict(base_urls or {}),
            dict(api_keys or {}),
            os.environ if environ is None else environ,
            google_auth,
        )
        self._owns = client is None
        self._client = client if client is not None else httpx.AsyncClient(timeout=timeout)
        self._retry = retry or RetryPolicy()
        self._sleep = sleep
        self._rand = rand

    async def aclose(self) -> None:
        """Close the httpx client if this transport made it."""
        if self._owns:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncHTTPTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def send(
        self, provider: Provider, body: bytes, *, stream: bool = False, model: str | None = None
    ) -> ParsedResponse:
        """As :meth:`HTTPTransport.send`."""
        endpoint = self._endpoints.get(provider.name)
        plan = _planner(provider, body, stream, endpoint, self._setup(provider), model)
        attempt = 0
        while True:
            try:
                wire = await anyio.to_thread.run_sync(plan) if endpoint else plan()
                return await self._once(provider, wire)
            except (TransportError, APIStatusError) as error:
                wait = _wait(self._retry, attempt, error, self._rand())
                if wait is None:
                    raise
                _log.info(
                    "%s: retry %d in %.3f s after: %s", provider.name, attempt + 1, wait, error
                )
                await self._sleep(wait)
                attempt += 1

    async def prepare(self, provider: Provider, *, model: str, stream: bool = False) -> str:
        """As :meth:`HTTPTransport.prepare` (a cloud endpoint's in a worker thread)."""
        endpoint = self._endpoints.get(provider.name)
        setup = self._setup(provider)
        return await anyio.to_thread.run_sync(
            lambda: _preflight(provider, endpoint, setup, model, stream)
        )

    def _setup(self, provider: Provider) -> Callable[[], _Setup]:
        return lambda: self._setups(provider)

    async def _once(self, provider: Provider, wire: WireRequest) -> ParsedResponse:
        _log.debug("%s: POST %s (%d bytes)", provider.name, wire.url, len(wire.body))
        request = self._client.build_request(
            "POST", _parsed_url(wire.url), content=wire.body, headers=_wire_headers(wire.headers)
        )
        try:
            response = await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise _transport_error(provider, exc, wire.url) from exc
        try:
            return await self._read(provider, response, wire)
        finally:
            await response.aclose()

    async def _read(
        self, provider: Provider, response: httpx.Response, wire: WireRequest
    ) -> ParsedResponse:
        state = _stream_state(provider, response, wire)
        if state is None:
            try:
                data = await response.aread()
            except httpx.HTTPError as exc:
                raise _cut_error(provider, exc, 0) from exc
            return _plain(provider, response, data, wire)
        chunks: AsyncIterator[bytes] = response.aiter_bytes()
        try:
            async for chunk in chunks:
                state.feed(chunk)
        except httpx.HTTPError as exc:
            raise _cut_error(provider, exc, state.received) from exc
        return state.finish()
