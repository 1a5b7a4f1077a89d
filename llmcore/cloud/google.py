"""Google Cloud bearer tokens and project/location for Vertex AI (``google`` extra).

:class:`GoogleAuth` gives the ``Authorization: Bearer <token>`` value of a Vertex AI request:

* **Credentials**: an explicit ``access_token`` (used as given, never refreshed), else explicit
  google-auth ``credentials``, else Application Default Credentials,
  ``google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])``: the
  ``GOOGLE_APPLICATION_CREDENTIALS`` file, the gcloud user credentials
  (``gcloud auth application-default login``), then the metadata server of Google Cloud
  compute (https://cloud.google.com/docs/authentication/application-default-credentials).
* **Refresh**: a token that is missing or no longer ``valid`` (expired, or within google-auth's
  clock-skew margin of expiring) is refreshed with ``google.auth.transport.requests.Request``
  before it is used, as the anthropic SDK's Vertex client does.
* **Project**: the ``project`` argument, else the first set of ``GOOGLE_CLOUD_PROJECT``,
  ``ANTHROPIC_VERTEX_PROJECT_ID`` (the anthropic SDK's), else the project the default
  credentials belong to. **Location**: the ``location`` argument, else ``GOOGLE_CLOUD_LOCATION``,
  else ``CLOUD_ML_REGION`` (the anthropic SDK's).

Tokens are never logged, never in an error message and never in the ``repr``. Without the
``google`` extra the first token raises :class:`~llmcore.errors.MissingDependencyError`;
without credentials :class:`~llmcore.errors.MissingCredentialsError`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any, Final

from llmcore.cloud import require
from llmcore.errors import CloudSetupError, MissingCredentialsError

__all__ = ["LOCATION_ENV", "PROJECT_ENV", "SCOPE", "GoogleAuth"]

SCOPE: Final = "https://www.googleapis.com/auth/cloud-platform"
"""The OAuth scope Vertex AI requests need."""
PROJECT_ENV: Final = ("GOOGLE_CLOUD_PROJECT", "ANTHROPIC_VERTEX_PROJECT_ID")
"""Environment variables naming the project, in order."""
LOCATION_ENV: Final = ("GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION")
"""Environment variables naming the location (region), in order."""

_DIST: Final = "google-auth"
_CHAIN: Final = (
    "GOOGLE_APPLICATION_CREDENTIALS",
    "gcloud application-default credentials",
    "the Google Cloud metadata server",
)


class GoogleAuth:
    """Bearer tokens, project and location for Vertex AI requests (see the module doc).

    Args:
        access_token: A token used as given (tests, or a caller that manages tokens).
        credentials: google-auth credentials to use instead of the default ones.
        project: The Google Cloud project id.
        location: The region (``us-east5``, ``europe-west1``) or ``global``.
        environ: Where project and location are read (``os.environ`` by default).
    """

    __slots__ = ("_credentials", "_environ", "_location", "_lock", "_project", "_static")

    def __init__(
        self,
        *,
        access_token: str | None = None,
        credentials: Any = None,
        project: str | None = None,
        location: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._static = access_token
        self._credentials = credentials
        self._project = project
        self._location = location
        self._environ = os.environ if environ is None else environ
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GoogleAuth(project={self._project!r}, location={self._location!r})"

    @property
    def location(self) -> str:
        """The location: the argument, ``GOOGLE_CLOUD_LOCATION``, ``CLOUD_ML_REGION``.

        Raises:
            CloudSetupError: None is set.
        """
        found = self._location or _first(self._environ, LOCATION_ENV)
        if not found:
            raise CloudSetupError(
                "no Google Cloud location: pass location= or set GOOGLE_CLOUD_LOCATION"
                " (or CLOUD_ML_REGION)",
                location="GOOGLE_CLOUD_LOCATION",
            )
        return found

    @property
    def project(self) -> str:
        """The project: the argument, the environment, else the default credentials' project.

        Raises:
            CloudSetupError: None is set and the credentials name none.
            MissingCredentialsError: The default credentials had to be loaded and none exist.
        """
        found = self._project or _first(self._environ, PROJECT_ENV)
        if not found and self._static is None:
            with self._lock:
                found = self._load_default()
        if not found:
            raise CloudSetupError(
                "no Google Cloud project: pass project= or set GOOGLE_CLOUD_PROJECT",
                location="GOOGLE_CLOUD_PROJECT",
            )
        self._project = found
        return found

    def token(self) -> str:
        """Return a valid access token, refreshing the credentials when it expired.

        Raises:
            MissingDependencyError: The ``google`` extra (google-auth) is not installed.
            MissingCredentialsError: No default credentials, or the refresh failed.
        """
        if self._static is not None:
            return self._static
        with self._lock:
            if self._credentials is None:
                self._load_default()
            credentials = self._credentials
            if not credentials.valid or not credentials.token:
                _refresh(credentials)
            token: str = credentials.token
            return token

    def headers(self) -> dict[str, str]:
        """Return ``{"authorization": "Bearer <token>"}`` (see :meth:`token`)."""
        return {"authorization": f"Bearer {self.token()}"}

    def _load_default(self) -> str | None:
        auth = require(
            "google.auth", extra="google", what="Google Cloud credentials", package=_DIST
        )
        exceptions = require(
            "google.auth.exceptions", extra="google", what="Google credentials", package=_DIST
        )
        try:
            credentials, project = auth.default(scopes=[SCOPE])
        except exceptions.DefaultCredentialsError as exc:
            raise MissingCredentialsError(
                f"no Google Cloud credentials found; tried: {', '.join(_CHAIN)}",
                location="Application Default Credentials",
            ) from exc
        if self._credentials is None:
            self._credentials = credentials
        found: str | None = project
        return found


def _refresh(credentials: Any) -> None:
    transport = require(
        "google.auth.transport.requests", extra="google", what="Google token refresh", package=_DIST
    )
    exceptions = require(
        "google.auth.exceptions", extra="google", what="Google token refresh", package=_DIST
    )
    try:
        credentials.refresh(transport.Request())
    except exceptions.GoogleAuthError as exc:
        raise MissingCredentialsError(
            f"the Google Cloud credentials could not be refreshed ({type(exc).__name__})",
            location="Application Default Credentials",
        ) from exc


def _first(environ: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    return next((environ[name] for name in names if environ.get(name)), None)
