"""Each provider's request URL and headers for :mod:`llmcore.transport` (base URL, key, signer).

The rules are those of :mod:`llmcore.transport`'s documentation (base URLs and the OpenAI-style
``/v1``, API keys and their variables, Vertex AI bearer tokens, SigV4 signing); that module
re-exports :class:`MissingAPIKeyError` and :func:`aws_events`. :func:`_planner` gives each
attempt's request; :func:`_preflight` makes one without sending (``prepare``). Nothing here is
logged: the headers hold the key.
"""

from __future__ import annotations

import functools
import os
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import httpx

from llmcore import jsonbytes
from llmcore.errors import (
    CloudSetupError,
    MissingCredentialsError,
    MissingDependencyError,
    ResponseParseError,
    UserError,
)
from llmcore.providers._eventstream import EventMessage, event_kind
from llmcore.providers._sse import SSEEvent
from llmcore.providers.base import Endpoint, Provider

if TYPE_CHECKING:
    from llmcore.cloud.base import CloudEndpoint, WireRequest
    from llmcore.cloud.google import GoogleAuth

__all__ = ["MissingAPIKeyError", "aws_events"]


_USER_AGENT: Final = "llmcore/0.1.0"

_V1_IN_BASE_URL: Final = frozenset({"OPENAI", "OPENROUTER"})
"""Key prefixes whose SDK base-URL convention ends in ``/v1`` (the OpenAI SDK's)."""


def _url(base: str, path: str, prefix: str) -> str:
    """Join a base URL and an endpoint path, dropping an SDK-style trailing ``/v1`` if doubled.

    Args:
        base: The base URL as configured (``https://api.openai.com`` or ``…/v1``).
        path: The endpoint path (``/v1/chat/completions``).
        prefix: The key variable's prefix (``OPENAI``): only OpenAI-style bases drop ``/v1``.
    """
    base = base.rstrip("/")
    if prefix in _V1_IN_BASE_URL and path.startswith("/v1/") and base.endswith("/v1"):
        base = base.removesuffix("/v1")
    return base + path


class MissingAPIKeyError(UserError):
    """No API key is set for a provider whose default base URL needs one."""


def _endpoint_map(
    endpoints: Mapping[str, CloudEndpoint] | Iterable[CloudEndpoint] | None,
) -> dict[str, CloudEndpoint]:
    """Return provider name → endpoint; a list gives each endpoint its ``providers``.

    Raises:
        UserError: Two listed endpoints serve the same provider.
    """
    if endpoints is None:
        return {}
    if isinstance(endpoints, Mapping):
        return dict(endpoints)
    out: dict[str, CloudEndpoint] = {}
    for endpoint in endpoints:
        for name in sorted(endpoint.providers):
            if name in out:
                raise UserError(f"two endpoints serve {name}: pass a mapping to choose one")
            out[name] = endpoint
    return out


class _Setup:
    """The URL and headers of one provider's requests (never logged: they hold the key).

    Made once per provider, base URL and key (:class:`_Setups`), the headers normalized by
    httpx once, so a request costs httpx no parsing of them. ``bearer``: the base URL is one of
    :attr:`Endpoint.bearer_hosts` (Vertex AI), whose key is a bearer token. A SigV4 endpoint
    (Bedrock Converse) without a key gets a signer (region and credentials from the AWS chain
    or ``environ``); its requests are signed per attempt by :func:`_planner`.
    """

    def __init__(
        self,
        provider: Provider,
        base: str | None,
        key: str | None,
        environ: Mapping[str, str] | None = None,
        bearer: bool = False,
    ) -> None:
        endpoint = provider.endpoint
        prefix = endpoint.api_key_env.removesuffix("_API_KEY")
        headers = {"content-type": "application/json", "user-agent": _USER_AGENT}
        headers.update(dict(endpoint.headers))
        chosen = base or endpoint.base_url
        self.signer: Any = None
        if key:
            if endpoint.auth in ("x-api-key", "x-goog-api-key") and not bearer:
                headers[endpoint.auth] = key
            else:
                headers["authorization"] = f"Bearer {key}"
            if "{region}" in chosen:  # a Bedrock API key on the default URL: the AWS region
                chosen = chosen.replace("{region}", _region(environ))
        elif endpoint.auth == "sigv4":
            self.signer = _signer(endpoint, environ)
            chosen = chosen.replace("{region}", self.signer.region)
        elif not base:
            named = " or ".join((endpoint.api_key_env, *endpoint.fallback_key_envs))
            raise MissingAPIKeyError(
                f"no API key for {provider.name}: set {named}", location=endpoint.api_key_env
            )
        self.headers = httpx.Headers(headers)
        self._base, self._prefix, self._provider = chosen, prefix, provider
        self.url = self.url_for(None, stream=False) if "{model}" not in endpoint.path else ""

    def url_for(self, model: str | None, *, stream: bool) -> str:
        """Return the URL of a request: the stream path when asked, ``{model}`` filled."""
        return _url(self._base, _path(self._provider, model, stream), self._prefix)


class _Setups:
    """Each provider's :class:`_Setup`, made again only when its base URL or key changes.

    The base URL and key are read at every request (``base_urls``/``api_keys``, else the
    environment), so a changed environment variable takes effect at the next request. A bearer
    host (Vertex AI) with neither takes the token of ``google_auth`` (made on first use from
    Application Default Credentials), refreshed when it expired: a new token, a new setup.
    """

    def __init__(
        self,
        base_urls: Mapping[str, str],
        api_keys: Mapping[str, str],
        environ: Mapping[str, str],
        google_auth: GoogleAuth | None = None,
    ) -> None:
        self._base_urls, self._api_keys, self._environ = base_urls, api_keys, environ
        self._google = google_auth
        self._made: dict[str, tuple[Provider, str | None, str | None, _Setup]] = {}

    def __call__(self, provider: Provider) -> _Setup:
        """The setup of ``provider``'s requests now.

        Raises:
            MissingAPIKeyError: No key and no base URL override, or a bearer host with no
                token and no ``google`` extra.
            MissingCredentialsError: A bearer host with no token and no Google credentials.
        """
        endpoint = provider.endpoint
        name = provider.name
        base_env = endpoint.api_key_env.removesuffix("_API_KEY") + "_BASE_URL"
        base = self._base_urls.get(name) or self._environ.get(base_env)
        bearer = _bearer_host(base or endpoint.base_url, endpoint.bearer_hosts)
        key = self._api_keys.get(name) or _key(endpoint, self._environ, bearer)
        if bearer and not key:
            key = self._google_token(provider)
        made = self._made.get(name)
        if made is not None and made[0] is provider and made[1] == base and made[2] == key:
            return made[3]
        setup = _Setup(provider, base, key, self._environ, bearer)
        self._made[name] = (provider, base, key, setup)
        return setup

    def _google_token(self, provider: Provider) -> str:
        """The Google access token of a bearer host's request (refreshed when it expired)."""
        variable = provider.endpoint.bearer_key_env or "GOOGLE_OAUTH_ACCESS_TOKEN"
        try:
            if self._google is None:
                from llmcore.cloud.google import GoogleAuth

                self._google = GoogleAuth(environ=self._environ)
            return self._google.token()
        except MissingDependencyError as exc:
            raise MissingAPIKeyError(
                f"no bearer token for {provider.name} on Vertex AI: set {variable}, or install"
                " the google extra (pip install 'llmcore[google]') to use Application Default"
                " Credentials",
                location=variable,
            ) from exc


def _path(provider: Provider, model: str | None, stream: bool) -> str:
    """Return the endpoint path: the stream path when asked and there is one, ``{model}`` set."""
    endpoint = provider.endpoint
    path = endpoint.stream_path if stream and endpoint.stream_path else endpoint.path
    if "{model}" not in path:
        return path
    if not model:
        raise UserError(
            f"{provider.name}: the model goes in the URL; send(..., model=...) names it",
            location="model",
        )
    return path.replace("{model}", urllib.parse.quote(model.removeprefix("models/"), safe="-._~"))


def _bearer_host(base: str, hosts: tuple[str, ...]) -> bool:
    host = urllib.parse.urlsplit(base).hostname or ""
    return any(host.endswith(suffix) for suffix in hosts)


def _key(endpoint: Endpoint, environ: Mapping[str, str], bearer: bool) -> str | None:
    if bearer:
        return environ.get(endpoint.bearer_key_env) if endpoint.bearer_key_env else None
    for name in (endpoint.api_key_env, *endpoint.fallback_key_envs):
        if environ.get(name):
            return environ[name]
    return None


def _region(environ: Mapping[str, str] | None) -> str:
    """The AWS region of a request sent with a Bedrock API key (no signer needed).

    As the signer finds it (``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile's); without
    the ``aws`` extra, only the variables.

    Raises:
        CloudSetupError: No region is set.
    """
    from llmcore.cloud.aws import SigV4Signer, resolve_region

    environ = os.environ if environ is None else environ
    try:
        return SigV4Signer(environ=environ).region
    except MissingDependencyError:  # the profile's region needs botocore
        return resolve_region(environ=environ)


def _signer(endpoint: Endpoint, environ: Mapping[str, str] | None) -> Any:
    """Return the SigV4 signer of an endpoint (region and credentials from the AWS chain).

    Keys in ``environ`` (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``)
    are used as given, so a transport's own ``environ`` decides like the process environment.
    """
    from llmcore.cloud.aws import SigV4Signer  # the ``aws`` extra, loaded only when used

    environ = os.environ if environ is None else environ
    return SigV4Signer(
        service=endpoint.sigv4_service or "bedrock",
        environ=environ,
        access_key=environ.get("AWS_ACCESS_KEY_ID"),
        secret_key=environ.get("AWS_SECRET_ACCESS_KEY"),
        session_token=environ.get("AWS_SESSION_TOKEN"),
    )


@functools.lru_cache(maxsize=64)
def _parsed_url(url: str) -> httpx.URL:
    """``url`` parsed by httpx, once per URL (a request's URL is one of a few)."""
    return httpx.URL(url)


def _wire_headers(headers: Mapping[str, str]) -> httpx.Headers | dict[str, str]:
    """The headers as httpx takes them: normalized ones as they are, others copied."""
    return headers if isinstance(headers, httpx.Headers) else dict(headers)


def _planner(
    provider: Provider,
    body: bytes,
    stream: bool,
    endpoint: CloudEndpoint | None,
    setup: Callable[[], _Setup],
    model: str | None = None,
) -> Callable[[], WireRequest]:
    """Return what gives each attempt's request: the endpoint's, or the base URL and key's.

    ``model`` fills a ``{model}`` path; a SigV4 setup signs each attempt afresh.
    """
    if endpoint is not None:
        return lambda: endpoint.prepare(provider.name, body, stream=stream)
    from llmcore.cloud.base import WireRequest

    fixed = setup()
    url = fixed.url if fixed.url and not stream else fixed.url_for(model, stream=stream)
    signer = fixed.signer
    events = aws_events(provider.name) if provider.endpoint.auth == "sigv4" else None
    if signer is not None:  # SigV4: a fresh signature (and x-amz-date) for every attempt
        return lambda: WireRequest(
            url=url,
            headers={**fixed.headers, **signer.sign("POST", url, fixed.headers, body)},
            body=body,
            event_stream=events,
        )
    wire = WireRequest(url=url, headers=fixed.headers, body=body, event_stream=events)
    return lambda: wire


def aws_events(provider: str) -> Callable[[EventMessage], list[SSEEvent]]:
    """Return the reader of a provider's AWS event-stream messages as stream-parser events.

    Each message becomes one event: ``event`` is the ``:event-type`` (or, for an exception,
    the ``:exception-type``; for an error, the ``:error-code``), ``data`` the payload text (an
    error's ``{"message": …}``) and ``id`` the ``:message-type`` (``event``, ``exception``,
    ``error``), so a parser tells an exception from an event (Bedrock Converse's,
    :mod:`llmcore.providers.bedrock_converse.parse`). A payload that is not UTF-8 raises
    :class:`~llmcore.errors.ResponseParseError`.
    """

    def convert(message: EventMessage) -> list[SSEEvent]:
        kind, name = event_kind(message)
        if kind == "error":
            text = str(message.headers.get(":error-message", ""))
            return [SSEEvent(event=name, data=jsonbytes.dumps_text({"message": text}), id=kind)]
        try:
            data = message.payload.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ResponseParseError(
                f"event {name!r}: payload is not UTF-8 ({exc})", provider=provider
            ) from exc
        return [SSEEvent(event=name, data=data, id=kind)]

    return convert


def _preflight(
    provider: Provider,
    endpoint: CloudEndpoint | None,
    setup: Callable[[], _Setup],
    model: str,
    stream: bool,
) -> str:
    """Make (never send) one request of ``provider`` for ``model``; return its URL.

    What the first request would resolve is resolved now: the base URL and key, a Vertex AI
    token, SigV4 region and credentials (a signature of a one-message body), a cloud
    endpoint's settings. A SigV4 endpoint's missing credentials also name its API key variable.

    Raises:
        MissingAPIKeyError: No key where one is needed.
        MissingCredentialsError: No cloud credentials (the chain that was tried named).
        CloudSetupError: A cloud setting is missing (region, project, location).
        MissingDependencyError: The extra that signs or fetches tokens is not installed.
    """
    from llmcore.messages import Message
    from llmcore.request import Params, Request

    request = Request(model=model, messages=(Message.user("."),), params=Params(stream=stream))
    body = provider.build_body(request)
    sigv4 = endpoint is None and provider.endpoint.auth == "sigv4"
    try:
        return _planner(provider, body, stream, endpoint, setup, model)().url
    except (MissingCredentialsError, CloudSetupError) as exc:
        if not sigv4:
            raise
        variable = provider.endpoint.api_key_env
        raise type(exc)(
            f"{exc.message}; or set {variable} (a Bedrock API key)", location=exc.location
        ) from None
