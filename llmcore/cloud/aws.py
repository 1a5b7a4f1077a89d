"""AWS Signature Version 4 for Amazon Bedrock requests, with botocore's signer (``aws`` extra).

:class:`SigV4Signer` signs one request at a time: it takes the method, URL, headers and the
exact body bytes, and returns the headers to add (``authorization``, ``x-amz-date`` and, for
temporary credentials, ``x-amz-security-token``). The body is hashed, never changed, so the
bytes llmcore built are the bytes that are signed and sent (SPEC P2).

* **Signer**: ``botocore.auth.SigV4Auth`` over a ``botocore.awsrequest.AWSRequest``; the
  signing name of Bedrock Runtime is ``bedrock``
  (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_sigv.html).
* **Credentials**: explicit keys when given, else botocore's credential chain
  (``botocore.session.Session().get_credentials()``): the environment (``AWS_ACCESS_KEY_ID``,
  ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``), the shared files with ``AWS_PROFILE``
  (``~/.aws/credentials``, ``~/.aws/config``: static keys, SSO, assume-role, credential
  process), then container and instance-metadata roles
  (https://docs.aws.amazon.com/sdkref/latest/guide/standardized-credentials.html).
  Refreshable credentials (SSO, roles) are frozen afresh for every signature.
* **Region**: the ``region`` argument, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else
  the profile's configured region.

Credentials are never logged, never in an error message and never in the signer's ``repr``:
botocore's own signer logs the canonical request at DEBUG level, which holds the session token,
so its ``botocore.auth`` logger is switched off while llmcore signs.
Without the ``aws`` extra the first signature raises
:class:`~llmcore.errors.MissingDependencyError`; without credentials
:class:`~llmcore.errors.MissingCredentialsError` naming the chain that was tried.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from typing import Any, Final

from llmcore.cloud import require
from llmcore.errors import CloudSetupError, MissingCredentialsError

__all__ = ["CREDENTIAL_CHAIN", "SERVICE", "SigV4Signer", "resolve_region"]

SERVICE: Final = "bedrock"
"""The SigV4 signing name of Bedrock Runtime (``bedrock-runtime.<region>.amazonaws.com``)."""

CREDENTIAL_CHAIN: Final = (
    "explicit keys",
    "environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)",
    "shared files (AWS_PROFILE; ~/.aws/credentials, ~/.aws/config: keys, SSO, assume-role)",
    "container and instance-metadata roles",
)
"""Where credentials are looked for, in order (for the error message)."""

_REGION_ENV: Final = ("AWS_REGION", "AWS_DEFAULT_REGION")
_SIGNED_OUT: Final = frozenset({"authorization", "x-amz-date", "x-amz-security-token"})
_SIGNER_LOG: Final = logging.getLogger("botocore.auth")
_QUIET: Final = threading.Lock()


def resolve_region(
    region: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    profile_region: str | None = None,
) -> str:
    """Return the AWS region: ``region``, ``AWS_REGION``, ``AWS_DEFAULT_REGION``, the profile's.

    Raises:
        CloudSetupError: None of them is set.
    """
    env = os.environ if environ is None else environ
    found = region or next((env[name] for name in _REGION_ENV if env.get(name)), None)
    found = found or profile_region
    if not found:
        raise CloudSetupError(
            "no AWS region: pass region= or set AWS_REGION (or AWS_DEFAULT_REGION)",
            location="AWS_REGION",
        )
    return found


class SigV4Signer:
    """Signs Bedrock requests with SigV4 (see the module doc).

    Args:
        region: The AWS region (``us-east-1``); resolved by :func:`resolve_region` when ``None``.
        service: The signing name; ``bedrock`` for Bedrock Runtime.
        profile: A named profile of the shared files (else ``AWS_PROFILE`` or the default).
        access_key: An explicit access key id (with ``secret_key``); skips the chain.
        secret_key: The explicit secret access key.
        session_token: The explicit session token of temporary credentials.
        environ: Where the region is read (``os.environ`` by default; botocore reads the
            process environment for credentials).

    Raises:
        CloudSetupError: No region (at construction).
    """

    __slots__ = ("_credentials", "_explicit", "_profile", "region", "service")

    def __init__(
        self,
        *,
        region: str | None = None,
        service: str = SERVICE,
        profile: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        session_token: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.service = service
        self._profile = profile
        self._explicit = (access_key, secret_key, session_token)
        self._credentials: Any = None
        self.region = region or resolve_region(
            None, environ=environ, profile_region=_profile_region(profile, environ)
        )

    def __repr__(self) -> str:
        return f"SigV4Signer(region={self.region!r}, service={self.service!r})"

    def sign(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> dict[str, str]:
        """Return the headers that sign this request, lower-case names (the body is unchanged).

        Args:
            method: The HTTP method (``POST``).
            url: The full URL, as it will be sent.
            headers: The headers that will be sent; each is signed, so none may change after.
            body: The exact body bytes.

        Returns:
            ``authorization``, ``x-amz-date`` and, for temporary credentials,
            ``x-amz-security-token``.

        Raises:
            MissingDependencyError: The ``aws`` extra (botocore) is not installed.
            MissingCredentialsError: No credentials anywhere in the chain.
        """
        auth = require("botocore.auth", extra="aws", what="SigV4 signing")
        awsrequest = require("botocore.awsrequest", extra="aws", what="SigV4 signing")
        frozen = self._frozen()
        request = awsrequest.AWSRequest(
            method=method.upper(), url=url, headers=dict(headers), data=body
        )
        with _QUIET:  # its DEBUG lines hold the canonical request, session token included
            was, _SIGNER_LOG.disabled = _SIGNER_LOG.disabled, True
            try:
                auth.SigV4Auth(frozen, self.service, self.region).add_auth(request)
            finally:
                _SIGNER_LOG.disabled = was
        return {
            name.lower(): value
            for name, value in request.headers.items()
            if name.lower() in _SIGNED_OUT
        }

    def _frozen(self) -> Any:
        if self._credentials is None:
            self._credentials = self._load()
        return self._credentials.get_frozen_credentials()

    def _load(self) -> Any:
        credentials_mod = require("botocore.credentials", extra="aws", what="SigV4 signing")
        access_key, secret_key, token = self._explicit
        if access_key or secret_key:
            if not (access_key and secret_key):
                raise MissingCredentialsError(
                    "explicit AWS credentials need both access_key and secret_key",
                    location="access_key/secret_key",
                )
            return credentials_mod.Credentials(access_key, secret_key, token)
        session_mod = require("botocore.session", extra="aws", what="SigV4 signing")
        exceptions = require("botocore.exceptions", extra="aws", what="SigV4 signing")
        try:
            found = session_mod.Session(profile=self._profile).get_credentials()
        except exceptions.BotoCoreError as exc:
            raise _no_credentials(f" ({type(exc).__name__})") from exc
        if found is None:
            raise _no_credentials("")
        return found


def _no_credentials(why: str) -> MissingCredentialsError:
    return MissingCredentialsError(
        f"no AWS credentials found{why}; tried: {'; '.join(CREDENTIAL_CHAIN)}",
        location="AWS credential chain",
    )


def _profile_region(profile: str | None, environ: Mapping[str, str] | None) -> str | None:
    """The region configured for the profile, when the region is set nowhere else."""
    env = os.environ if environ is None else environ
    if any(env.get(name) for name in _REGION_ENV):
        return None
    session_mod = require("botocore.session", extra="aws", what="the AWS region")
    region: str | None = session_mod.Session(profile=profile).get_config_variable("region")
    return region
