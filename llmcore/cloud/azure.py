"""OpenAI Chat Completions and Responses on Azure OpenAI (SPEC P8).

The body is the ``openai-chat`` / ``openai-responses`` writer's, unchanged: its ``model`` is the
deployment name. Only the URL and the authentication differ:

=====================  ===============================================================
API version            URL (``{endpoint}`` is ``https://{resource}.openai.azure.com``)
=====================  ===============================================================
``v1`` (the default)   ``{endpoint}/openai/v1/chat/completions``,
                       ``{endpoint}/openai/v1/responses`` (no ``api-version``)
a dated version        ``{endpoint}/openai/deployments/{deployment}/chat/completions
                       ?api-version={v}``, ``{endpoint}/openai/responses?api-version={v}``
=====================  ===============================================================

The deployment of the dated Chat path is the ``deployment`` argument, else the body's ``model``
(as the openai SDK's ``AzureOpenAI`` does). Authentication: an API key in the ``api-key``
header, or a Microsoft Entra ID token as ``Authorization: Bearer`` (a fixed token, or a
function called for every attempt, e.g. azure-identity's ``get_bearer_token_provider``).

Settings read as the openai SDK reads them: ``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY``,
``AZURE_OPENAI_AD_TOKEN`` (preferred over the key when both are set), ``OPENAI_API_VERSION``.

Sources: https://learn.microsoft.com/azure/ai-foundry/openai/api-version-lifecycle (the v1
API: ``/openai/v1/``, no ``api-version``), https://learn.microsoft.com/azure/ai-foundry/openai/reference
(the deployments path, ``api-version``, ``api-key``, Entra ID), the openai SDK's
``lib/azure.py`` (``/deployments/{model}`` for the deployment endpoints, ``/openai`` base).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import quote

from llmcore.cloud.base import USER_AGENT, WireRequest, path_segment, rewrite_body
from llmcore.errors import CloudSetupError, MissingCredentialsError

__all__ = ["V1", "AzureOpenAI"]

V1: Final = "v1"
"""The API version that selects the ``/openai/v1/`` paths."""

_PATHS: Final = {"openai-chat": "chat/completions", "openai-responses": "responses"}
_SAFE: Final = "!$&'()*+,;=:@"  # RFC 3986 pchar, as the openai SDK's path_template keeps it


class AzureOpenAI:
    """Azure OpenAI for ``openai-chat`` and ``openai-responses`` bodies (see the module doc).

    Args:
        endpoint: ``https://{resource}.openai.azure.com`` (else ``AZURE_OPENAI_ENDPOINT``), or
            any base before ``/openai`` (an emulator's).
        resource: The resource name, for ``https://{resource}.openai.azure.com``.
        api_key: The resource's API key (else ``AZURE_OPENAI_API_KEY``).
        ad_token: A Microsoft Entra ID token (else ``AZURE_OPENAI_AD_TOKEN``).
        token_provider: Returns a fresh Entra ID token; called for every attempt.
        api_version: ``"v1"`` or a dated version such as ``"2024-10-21"`` (else
            ``OPENAI_API_VERSION``, else ``"v1"``).
        deployment: The deployment of the dated Chat path (else the body's ``model``).
        environ: Where settings are read (``os.environ`` by default).

    Raises:
        CloudSetupError: No endpoint or resource.
        MissingCredentialsError: No key, token or token provider.
    """

    providers: Final = frozenset(_PATHS)

    def __init__(
        self,
        *,
        endpoint: str | None = None,
        resource: str | None = None,
        api_key: str | None = None,
        ad_token: str | None = None,
        token_provider: Callable[[], str] | None = None,
        api_version: str | None = None,
        deployment: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        if resource:
            endpoint = endpoint or f"https://{resource}.openai.azure.com"
        endpoint = endpoint or env.get("AZURE_OPENAI_ENDPOINT")
        if not endpoint:
            raise CloudSetupError(
                "no Azure OpenAI endpoint: pass endpoint= or resource=, or set"
                " AZURE_OPENAI_ENDPOINT",
                location="AZURE_OPENAI_ENDPOINT",
            )
        self.endpoint = endpoint.rstrip("/")
        self.api_version = api_version or env.get("OPENAI_API_VERSION") or V1
        self.deployment = deployment
        self._auth = _auth(api_key, ad_token, token_provider, env)

    def __repr__(self) -> str:
        return f"AzureOpenAI(endpoint={self.endpoint!r}, api_version={self.api_version!r})"

    def url(self, provider: str, model: object) -> str:
        """Return the URL of a ``provider`` body whose ``model`` is given (see the module doc).

        Raises:
            InvalidRequestError: The dated Chat path needs a deployment and the body has none.
        """
        path = _PATHS[provider]
        if self.api_version == V1:
            return f"{self.endpoint}/openai/v1/{path}"
        query = f"?api-version={quote(self.api_version, safe='')}"
        if provider == "openai-responses":
            return f"{self.endpoint}/openai/{path}{query}"
        name = path_segment(self.deployment or model, provider=provider, what="model", safe=_SAFE)
        return f"{self.endpoint}/openai/deployments/{name}/{path}{query}"

    def prepare(self, provider: str, body: bytes, *, stream: bool) -> WireRequest:
        """Return the Azure request for an OpenAI body; the body bytes are sent unchanged."""
        needs_model = self.api_version != V1 and provider == "openai-chat" and not self.deployment
        model = (
            rewrite_body(provider, body, drop=frozenset(), read=frozenset({"model"})).values.get(
                "model"
            )
            if needs_model
            else None
        )
        headers = {"content-type": "application/json", "user-agent": USER_AGENT}
        headers.update(self._auth())
        return WireRequest(url=self.url(provider, model), headers=headers, body=body)


def _auth(
    api_key: str | None,
    ad_token: str | None,
    token_provider: Callable[[], str] | None,
    env: Mapping[str, str],
) -> Callable[[], dict[str, str]]:
    """Return what gives each attempt's auth header, by the openai SDK's precedence."""
    if token_provider is not None:
        return lambda: {"authorization": f"Bearer {token_provider()}"}
    if not (api_key or ad_token):
        ad_token = env.get("AZURE_OPENAI_AD_TOKEN") or None
        api_key = None if ad_token else env.get("AZURE_OPENAI_API_KEY") or None
    if ad_token:
        bearer = {"authorization": f"Bearer {ad_token}"}
        return lambda: dict(bearer)
    if api_key:
        key = {"api-key": api_key}
        return lambda: dict(key)
    raise MissingCredentialsError(
        "no Azure OpenAI credentials: pass api_key=, ad_token= or token_provider=, or set"
        " AZURE_OPENAI_API_KEY (or AZURE_OPENAI_AD_TOKEN)",
        location="AZURE_OPENAI_API_KEY",
    )
