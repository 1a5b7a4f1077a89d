"""The cloud endpoints of the existing wire APIs, and their credentials (SPEC P8).

Endpoints, passed to :class:`llmcore.HTTPTransport` as ``endpoints=[…]``:

* :class:`AnthropicVertex` — Anthropic Messages on Vertex AI (:mod:`llmcore.cloud.anthropic`);
* :class:`AnthropicBedrock` — Anthropic Messages on Bedrock InvokeModel (same module);
* :class:`AzureOpenAI` — OpenAI Chat and Responses on Azure (:mod:`llmcore.cloud.azure`).

Credentials:

* :mod:`llmcore.cloud.aws` — SigV4 signing with botocore's signer and the AWS credential chain
  (the ``aws`` extra);
* :mod:`llmcore.cloud.google` — Google OAuth bearer tokens through google-auth's Application
  Default Credentials (the ``google`` extra).

Neither module imports its third-party library until it is used, so ``import llmcore`` and
``import llmcore.cloud.aws`` stay light; a missing extra raises
:class:`~llmcore.errors.MissingDependencyError` naming the extra to install. Credentials are
never logged, never put in an error message and never written anywhere.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from llmcore._lazy import lazy_names as _lazy_names
from llmcore.errors import MissingDependencyError, missing_extra_message

if TYPE_CHECKING:
    from llmcore.cloud.anthropic import AnthropicBedrock, AnthropicVertex
    from llmcore.cloud.aws import SigV4Signer
    from llmcore.cloud.azure import AzureOpenAI
    from llmcore.cloud.base import CloudEndpoint, WireRequest
    from llmcore.cloud.google import GoogleAuth

__all__ = [
    "AnthropicBedrock",
    "AnthropicVertex",
    "AzureOpenAI",
    "CloudEndpoint",
    "GoogleAuth",
    "SigV4Signer",
    "WireRequest",
    "require",
]

_HOMES = {
    "AnthropicBedrock": "llmcore.cloud.anthropic",
    "AnthropicVertex": "llmcore.cloud.anthropic",
    "AzureOpenAI": "llmcore.cloud.azure",
    "CloudEndpoint": "llmcore.cloud.base",
    "GoogleAuth": "llmcore.cloud.google",
    "SigV4Signer": "llmcore.cloud.aws",
    "WireRequest": "llmcore.cloud.base",
}


def require(module: str, *, extra: str, what: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise the typed error naming the extra that installs it.

    Args:
        module: The module to import (``"botocore.auth"``).
        extra: The llmcore extra that installs it (``"aws"``).
        what: What needs it, put in front of the message (``"SigV4 signing"``).
        package: The distribution to name (``"google-auth"``); the top module by default.

    Raises:
        MissingDependencyError: The module's distribution is not installed.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = package or (exc.name or module).partition(".")[0]
        raise MissingDependencyError(f"{what} {missing_extra_message(extra, missing)}") from exc


__getattr__, __dir__ = _lazy_names(__name__, _HOMES, globals())
