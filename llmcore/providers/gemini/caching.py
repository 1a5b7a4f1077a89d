"""Gemini explicit context caching (``cachedContents``) and the Vertex AI endpoint.

* :func:`cached_content_body` — the ``POST /v1beta/cachedContents`` body for a request's
  system instruction, tools and tool config (key order ``model, systemInstruction, tools,
  toolConfig, ttl``), the same bytes :mod:`.encode` writes for them.
* :func:`create_cached_content` — sends it and returns the cache's name
  (``cachedContents/…``), to be named in ``params.extra`` as ``cachedContent``; a request that
  does so sends no system instruction, tools or tool config (PROVIDER-RULES §4). The TTL defaults
  to 1 h, as the API's does; storage is billed per hour while the cache lives
  (https://ai.google.dev/gemini-api/docs/caching).
* :func:`vertex_base_url` — the Vertex AI base URL of a project and location; the transport
  sends a bearer token (an OAuth access token from ``api_keys["gemini"]`` or
  ``GOOGLE_OAUTH_ACCESS_TOKEN``, else google-auth's Application Default Credentials with the
  ``google`` extra) to it instead of the API key
  (https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/inference).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Final

import httpx

from llmcore import jsonbytes
from llmcore.errors import ResponseParseError, UserError
from llmcore.providers import _parse_common as pc
from llmcore.providers.gemini.encode import cache_held, model_path
from llmcore.providers.gemini.parse import ENDPOINT, error_from_body
from llmcore.request import Request

DEFAULT_TTL_SECONDS: Final = 3600
"""The API's default cache lifetime, 1 h."""


def vertex_base_url(project: str, location: str) -> str:
    """Return the Vertex AI base URL for Gemini models of ``project`` in ``location``.

    ``global`` has no regional host name. The transport appends
    ``/models/{model}:generateContent`` (or the stream path).
    """
    host = (
        "aiplatform.googleapis.com"
        if location == "global"
        else f"{location}-aiplatform.googleapis.com"
    )
    return f"https://{host}/v1/projects/{project}/locations/{location}/publishers/google"


def cached_content_body(request: Request, *, ttl_seconds: int = DEFAULT_TTL_SECONDS) -> bytes:
    """Return the ``cachedContents`` create body holding ``request``'s system and tools.

    Raises:
        InvalidRequestError: The model name cannot stand in a URL, or an unknown tool choice.
    """
    body: dict[str, Any] = {"model": f"models/{model_path(request.model)}"}
    body.update(cache_held(request))
    body["ttl"] = f"{ttl_seconds}s"
    return jsonbytes.dumps(body)


def create_cached_content(
    request: Request,
    *,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    base_url: str | None = None,
    api_key: str | None = None,
    client: httpx.Client | None = None,
    environ: Mapping[str, str] | None = None,
) -> str:
    """Create an explicit cache of ``request``'s system and tools; return its name.

    Args:
        request: The request whose system instruction, tools and tool config are cached.
        ttl_seconds: The cache lifetime (default 1 h).
        base_url: The API base (default ``GEMINI_BASE_URL`` or AI Studio's ``…/v1beta``).
        api_key: The key (default ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``); none is needed
            with a base URL override (an emulator).
        client: The httpx client to send with (closed only if made here).
        environ: Where keys and the base URL are read (``os.environ`` by default).

    Raises:
        UserError: No key for the default base URL.
        APIStatusError: The API refused the cache (e.g. below the model's minimum tokens).
        ResponseParseError: The answer has no ``name``.
    """
    env = os.environ if environ is None else environ
    base = (base_url or env.get("GEMINI_BASE_URL") or ENDPOINT.base_url).rstrip("/")
    key = api_key or env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY")
    headers = {"content-type": "application/json"}
    if key:
        headers["x-goog-api-key"] = key
    elif base == ENDPOINT.base_url:
        raise UserError("no API key for gemini: set GEMINI_API_KEY", location="GEMINI_API_KEY")
    own = client is None
    http = client if client is not None else httpx.Client(timeout=60.0)
    try:
        body = cached_content_body(request, ttl_seconds=ttl_seconds)
        response = http.post(f"{base}/cachedContents", content=body, headers=headers)
    finally:
        if own:
            http.close()
    if response.status_code >= 400:
        raise error_from_body(response.status_code, response.content, dict(response.headers))
    name = pc.load_object(response.content, "gemini", "cachedContents answer").get("name")
    if not isinstance(name, str) or not name.startswith("cachedContents/"):
        raise ResponseParseError("the cachedContents answer has no name", provider="gemini")
    return name
