"""The exception tree of llmcore.

Every exception llmcore raises on purpose derives from :class:`LLMCoreError`. Caller mistakes
(bad input, bad requests, bad files) stay apart from provider failures (HTTP errors, broken
streams)::

    LLMCoreError
    ├── UserError                  the caller gave something llmcore cannot use
    │   ├── InvalidMessageError    a message or content case breaks M1/M2
    │   ├── InvalidRequestError    a request cannot be built (pairing, unknown tool choice, …)
    │   ├── RequestFileError       a request file or recorded body is malformed (file, key, index)
    │   ├── UnsupportedContentError  content outside the four cases (documents, server tools, …)
    │   ├── FileRefusedError   a file is not a regular file, too large or hard-linked (also OSError)
    │   ├── UnknownProviderError   no provider is registered under that name
    │   ├── CloudSetupError        a cloud endpoint lacks its region, project or location
    │   │   └── MissingCredentialsError  no cloud credentials (AWS chain, Google ADC) were found
    │   └── ProviderRejectsError   strict mode: content providers refuse (llmcore.checks)
    ├── EncodingError              a value cannot be written as JSON (NaN, lone surrogate, …)
    ├── ArchiveError               the conversation archive cannot be read or written
    │   ├── ArchiveReadError       ``conversation.json`` is unreadable (names the JSON path)
    │   └── ArchiveWriteError      a save failed before its commit point; the old archive stands
    │       ├── ArchiveConflictError  another process saved the folder since it was opened
    │       └── ArchiveBusyError   another process held the folder's lock too long
    ├── SessionError               a terminal-agent session (SPEC S1–S6) cannot be used
    │   ├── SessionIdError         a session id does not match ``^[a-f0-9]{12}$`` (no path built)
    │   ├── SessionNotFoundError   no saved session has the id asked for (names the known ones)
    │   ├── SessionReadError       a session file is corrupt or of a newer schema (kept as it is)
    │   └── SessionWriteError      a session save failed; the file on disk is unchanged
    │       └── SessionConflictError  another process saved the same session since it was read
    └── ProviderError              the provider (or the way to it) failed
        ├── TransportError         no HTTP response: connect/read failure or timeout
        ├── APIStatusError         an HTTP error status with the provider's error body
        ├── ResponseParseError     a response or event stream could not be parsed
        └── BackendError           a CLI backend (Claude Code, Codex CLI) failed (SPEC B1)
            ├── BackendNotFoundError  its executable is missing
            ├── BackendExitError      it exited with a non-zero status (stderr tail kept)
            └── BackendStreamError    its event stream ended mid-turn

Errors that point into input carry a ``location`` string such as ``request.json: $.messages[3]``
so a command-line user sees the file, key path and index (STYLE.md "Errors").
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APIStatusError",
    "ArchiveBusyError",
    "ArchiveConflictError",
    "ArchiveError",
    "ArchiveReadError",
    "ArchiveWriteError",
    "BackendError",
    "BackendExitError",
    "BackendNotFoundError",
    "BackendStreamError",
    "CloudSetupError",
    "EncodingError",
    "FieldsNotSentWarning",
    "FileRefusedError",
    "InvalidMessageError",
    "InvalidRequestError",
    "LLMCoreError",
    "MissingCredentialsError",
    "MissingDependencyError",
    "ProviderError",
    "ProviderRejectsError",
    "ProviderRejectsWarning",
    "RequestFileError",
    "ResponseParseError",
    "SessionConflictError",
    "SessionError",
    "SessionIdError",
    "SessionNotFoundError",
    "SessionReadError",
    "SessionWriteError",
    "TransportError",
    "UnknownProviderError",
    "UnsupportedContentError",
    "UserError",
    "missing_extra_message",
]


class LLMCoreError(Exception):
    """Root of every error llmcore raises on purpose.

    Args:
        message: What is wrong, in one line.
        location: Where it is wrong (file, JSON path, index), or ``None``.
    """

    def __init__(self, message: str, *, location: str | None = None) -> None:
        self.message = message
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by state, so an error raised in a worker process arrives whole.

        Its type, message, location and other attributes survive (``llmcore audit --jobs``,
        a Dask worker).
        """
        return (_rebuilt, (type(self), self.args), dict(self.__dict__))


def _rebuilt(cls: type[LLMCoreError], args: tuple[Any, ...]) -> LLMCoreError:
    """An error of type ``cls`` with ``args`` whose ``__init__`` is not run (pickle sets state)."""
    error = cls.__new__(cls, *args)
    BaseException.__init__(error, *args)
    return error


class UserError(LLMCoreError):
    """The caller gave llmcore something it cannot use."""


def missing_extra_message(extra: str, module: str) -> str:
    """Return ``"needs the '<extra>' extra (<module> is not installed): pip install …"``.

    The one wording of a missing extra, for the library (:class:`MissingDependencyError`) and
    the command line; the caller puts what needs it in front.
    """
    return f"needs the {extra!r} extra ({module} is not installed): pip install 'llmcore[{extra}]'"


class MissingDependencyError(UserError, ImportError):
    """An optional dependency is not installed: the message names the extra to install.

    Also an :class:`ImportError`, so ``except ImportError`` around an optional import keeps
    working.
    """


class InvalidMessageError(UserError):
    """A message or content case breaks the message model (SPEC M1, M2)."""


class InvalidRequestError(UserError):
    """A request cannot be built: unpaired tool calls, bad parameters, colliding ``extra`` keys."""


class RequestFileError(UserError):
    """A request file or recorded body is malformed; ``location`` names the file, key and index."""


class UnsupportedContentError(UserError):
    """Content outside the four content cases (SPEC M2), e.g. documents or server tools.

    Attributes:
        feature: The short name of the refused feature (``"document"``, ``"server_tool"``, …).
    """

    def __init__(self, feature: str, message: str, *, location: str | None = None) -> None:
        self.feature = feature
        super().__init__(message, location=location)


class FileRefusedError(UserError, OSError):
    """A file was refused before its bytes were read or written (:mod:`llmcore.safeio`).

    It is not a regular file (a FIFO, a device, a socket, a folder), it is larger than the
    limit for its kind, or (where links matter) another hard link to it exists. ``location``
    is the path. It is also an :class:`OSError` (``errno``, ``strerror`` = the message,
    ``filename`` = the path), so code that handles an unreadable file handles it too.

    Args:
        message: What is wrong with the file, e.g. ``"is a FIFO (named pipe)"``.
        location: The path.
        code: The ``errno`` it stands for (``EINVAL``, ``EFBIG``, ``EMLINK``).
    """

    def __init__(self, message: str, *, location: str, code: int) -> None:
        super().__init__(message, location=location)
        self.errno = code
        self.strerror = message
        self.filename = location

    def __str__(self) -> str:
        """Return ``"<path>: <message>"`` (not :class:`OSError`'s ``[Errno N] …``)."""
        return f"{self.location}: {self.message}"


class UnknownProviderError(UserError):
    """No provider is registered under the given name."""


class CloudSetupError(UserError):
    """A cloud endpoint (Vertex AI, Bedrock, Azure) cannot be set up: no region, project, etc.

    ``location`` names the parameter or environment variables that were looked at.
    """


class MissingCredentialsError(CloudSetupError):
    """No cloud credentials were found; the message names the chain that was tried.

    Raised by :mod:`llmcore.cloud.aws` (the AWS credential chain) and
    :mod:`llmcore.cloud.google` (Application Default Credentials). Never carries a secret.
    """


class ProviderRejectsError(UserError):
    """Under :func:`llmcore.checks.strict`: content the providers refuse or rewrite.

    Image bytes with no known signature, a tool name outside ``^[a-zA-Z0-9_-]{1,64}$``,
    arguments that are not a JSON object, tool results that are not UTF-8, an unpaired tool call
    (:mod:`llmcore.checks`); ``location`` names the request path.
    """


class ProviderRejectsWarning(UserWarning):
    """The default for what :class:`ProviderRejectsError` reports under strict mode."""


class FieldsNotSentWarning(UserWarning):
    """Fields of a request that its body leaves out by the provider's rule (the request is sent).

    Gemini: a request naming a ``cachedContent`` (``params.extra``) sends no
    ``systemInstruction``, ``tools`` or ``toolConfig`` — the cache holds them and the API refuses
    them beside one (PROVIDER-RULES §4, https://ai.google.dev/api/caching). Said once per
    :class:`~llmcore.providers.base.EncodeCache` (one per conversation and provider, as a
    :class:`~llmcore.Runner` keeps), or on every build without a cache.
    """


class EncodingError(LLMCoreError):
    """A value cannot be written as JSON bytes (NaN, infinity, a lone surrogate, a foreign type)."""


class ArchiveError(LLMCoreError):
    """The conversation archive (SPEC A1–A12) cannot be read or written."""


class ArchiveReadError(ArchiveError):
    """``conversation.json`` cannot be read by this version; ``location`` is the JSON path."""


class ArchiveWriteError(ArchiveError):
    """A save failed before its commit point; the previous archive is left byte-identical."""


class ArchiveConflictError(ArchiveWriteError):
    """``conversation.json`` changed on disk since the conversation was opened (SPEC A9).

    Another process (or program) saved the folder in between; saving now would lose its
    update, so nothing was written. ``location`` is the folder. Reopen the archive to continue
    from what is on disk.
    """


class ArchiveBusyError(ArchiveWriteError):
    """Another process held the archive folder's lock longer than the store's lock timeout."""


class SessionError(LLMCoreError):
    """A terminal-agent session (SPEC S1–S6) cannot be read, written or found."""


class SessionIdError(SessionError):
    """A session id (from a pointer file or a caller) is not 12 lowercase hex digits (S6).

    Raised before any path is built from it; ``location`` is where the id came from.
    """


class SessionNotFoundError(SessionError):
    """No saved session of the project has the id asked for (``llmcore chat --session ID``).

    The message names the known ids, newest first; ``location`` is the sessions folder.
    """


class SessionReadError(SessionError):
    """A session file is corrupt or has a newer ``schema_version``; it is left as it is."""


class SessionWriteError(SessionError):
    """A session save failed before its rename; the file on disk is unchanged."""


class SessionConflictError(SessionWriteError):
    """Another process saved the same session file since this one read or wrote it.

    Nothing was written: the other process's save is kept. ``location`` is the file.
    """


class ProviderError(LLMCoreError):
    """The provider, or the way to it, failed.

    Attributes:
        provider: The provider's registry name (``"anthropic"``, ``"openai-chat"``, …).
        retryable: Whether sending the same request again may succeed.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        retryable: bool = False,
        location: str | None = None,
    ) -> None:
        self.provider = provider
        self.retryable = retryable
        super().__init__(message, location=location)


class TransportError(ProviderError):
    """No HTTP response arrived: connection refused, reset, or a timeout."""


class APIStatusError(ProviderError):
    """The provider answered with an HTTP error status.

    Attributes:
        status: The HTTP status code.
        error_type: The provider's error type (``"rate_limit_error"``, ``"overloaded_error"``, …).
        request_id: The provider's request id, when it sent one.
        body: The raw response body bytes.
        retry_after: Seconds the provider asked to wait (``retry-after``), when given.
    """

    RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int,
        error_type: str | None = None,
        request_id: str | None = None,
        body: bytes = b"",
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.error_type = error_type
        self.request_id = request_id
        self.body = body
        self.retry_after = retry_after
        retryable = status in self.RETRYABLE_STATUSES or status >= 500
        super().__init__(message, provider=provider, retryable=retryable)


class ResponseParseError(ProviderError):
    """A response body or event stream could not be parsed; nothing of it enters the history."""


class BackendError(ProviderError):
    """A CLI backend (Claude Code, Codex CLI) failed; ``provider`` is ``claude-code`` or ``codex``.

    The turn's panel items up to the failure, and one ``failure`` item, are recorded before this
    is raised (SPEC B1, C3).
    """


class BackendNotFoundError(BackendError):
    """The CLI's executable was not found (not installed, or a wrong path).

    Attributes:
        executable: The path or name that was tried.
    """

    def __init__(self, message: str, *, provider: str, executable: str) -> None:
        self.executable = executable
        super().__init__(message, provider=provider)


class BackendExitError(BackendError):
    """The CLI exited with a non-zero status.

    Attributes:
        status: The exit status (negative: killed by that signal).
        stderr_tail: The last part of its standard error (at most 2,000 characters).
    """

    def __init__(self, message: str, *, provider: str, status: int, stderr_tail: str) -> None:
        self.status = status
        self.stderr_tail = stderr_tail
        super().__init__(message, provider=provider)


class BackendStreamError(BackendError):
    """The CLI's event stream ended before the turn's final event (it exited with status 0)."""
