"""``llmcore body``'s work without typer, shared by the command and its fast path (SPEC R2).

:func:`run_body` builds and writes the body; :func:`fast_body` is what
:func:`llmcore.cli.main` runs for the plain ``llmcore body FILE -p PROVIDER`` (the arguments in
any order, ``--provider=P`` too), so the command's most common form starts without typer, rich
or click. Anything else (``--help``, another option, a missing value) returns ``None`` and goes
to the typer application, whose messages are the reference. Both print an error as
``llmcore: <message>`` on stderr and exit 2, as :func:`llmcore.cli._common.one_line_errors`
does.

Imports nothing heavy at module level: only :mod:`llmcore.errors` and the standard library.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from llmcore.cli._stdout import silence_stdout, stdout_error
from llmcore.errors import (
    EncodingError,
    FieldsNotSentWarning,
    InvalidRequestError,
    LLMCoreError,
    RequestFileError,
)

if TYPE_CHECKING:
    from llmcore.request import Request

__all__ = [
    "STDIN",
    "CommandError",
    "fast_body",
    "is_stdin",
    "read_stdin",
    "run_body",
    "warn_shape",
    "write_stdout",
]

STDIN = "<stdin>"
"""How standard input (``-``) is named in errors."""

EXIT_USAGE = 2
"""The exit status of an error line (as :data:`llmcore.cli._common.EXIT_USAGE`)."""


class CommandError(Exception):
    """A command's failure that is not an :class:`~llmcore.errors.LLMCoreError` (one line).

    Args:
        message: The line, without the ``llmcore:`` prefix.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def run_body(request: str, provider: str) -> None:
    """Write exactly the body bytes ``provider`` would be sent for the request file ``request``.

    Args:
        request: The request file's path, or ``-`` for standard input.
        provider: The provider's name.

    Raises:
        LLMCoreError: The provider, the file or the build (the location under the file); a
            request without messages for a provider that refuses one
            (:mod:`llmcore.providers._required`).
        CommandError: Standard output cannot be written.
    """
    from llmcore.providers import get_provider
    from llmcore.requestfile import load_request_file, parse_json_bytes, parse_request_value

    chosen = get_provider(provider)
    if is_stdin(request):
        name = STDIN
        loaded = parse_request_value(parse_json_bytes(read_stdin(), name), name)
    else:
        name = request
        loaded = load_request_file(request)
    _say_rejected(loaded, name)
    from llmcore.providers._required import empty_history

    refused = empty_history(chosen.name, loaded)
    if refused is not None:
        raise RequestFileError(f"no messages: {refused}", location=f"{name}: $.messages")
    try:
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", FieldsNotSentWarning)
            built = chosen.build_body(loaded)
    except (InvalidRequestError, EncodingError) as exc:
        where = f"{name}: $.{exc.location}" if exc.location else f"{name}: $"
        raise type(exc)(exc.message, location=where) from None
    for warning in said:  # a field the body leaves out by the provider's rule, one line each
        if isinstance(warning.message, FieldsNotSentWarning):
            print(f"llmcore: warning: {name}: $.{warning.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    if loaded.params.extra:  # only params.extra can give a built body another shape
        warn_shape(built, provider, name, "built")
    write_stdout(built)


def fast_body(argv: Sequence[str]) -> int | None:
    """Run ``llmcore body`` for ``argv`` (after the program name) when it is the plain form.

    Returns:
        The exit status (0, or 2 after one line on stderr), or ``None`` when ``argv`` is not
        ``body`` with one ``FILE`` and one ``--provider``/``-p`` value (the typer application
        then runs it).
    """
    parsed = _plain_body_arguments(argv)
    if parsed is None:
        return None
    try:
        run_body(*parsed)
    except (LLMCoreError, CommandError) as exc:
        print(f"llmcore: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def _plain_body_arguments(argv: Sequence[str]) -> tuple[str, str] | None:
    """``(FILE, PROVIDER)`` of ``body FILE -p PROVIDER`` in any order, else ``None``."""
    if not argv or argv[0] != "body":  # typer's parser, not this one, names every usage error
        return None
    files: list[str] = []
    providers: list[str] = []
    rest = list(argv[1:])
    while rest:
        word = rest.pop(0)
        if word in ("-p", "--provider") and rest and not rest[0].startswith("-"):
            providers.append(rest.pop(0))
        elif word.startswith("--provider=") and len(word) > len("--provider="):
            providers.append(word.partition("=")[2])
        elif word == "-" or (word and not word.startswith("-")):
            files.append(str(Path(word)))  # as typer's Path argument names it
        else:
            return None  # --help, another option, "--": the application's parser decides
    if len(files) != 1 or len(providers) != 1:
        return None
    return files[0], providers[0]


def _say_rejected(request: Request, name: str) -> None:
    """Print what providers refuse in ``request``, one line each; in strict mode, fail.

    Raises:
        ProviderRejectsError: ``LLMCORE_STRICT`` is on (one line, exit 2), for the first.
    """
    from llmcore.checks import check_request, is_strict
    from llmcore.errors import ProviderRejectsError

    findings = check_request(request, pairing=False)  # build_body names an unpaired call
    if findings and is_strict():
        location, problem = findings[0]
        raise ProviderRejectsError(problem, location=f"{name}: $.{location}")
    for location, problem in findings:
        print(f"llmcore: warning: {name}: $.{location}: {problem}", file=sys.stderr)


def warn_shape(data: bytes, provider: str, name: str, done: str) -> None:
    """Print a warning when ``data`` is shaped for another provider than ``provider``."""
    from llmcore.audit import wire_conflict

    warning = wire_conflict(data, provider, name=name, done=done)
    if warning is not None:
        print(f"llmcore: warning: {warning}", file=sys.stderr)


def is_stdin(path: object) -> bool:
    """Whether a command's file argument is ``-`` (standard input)."""
    return str(path) == "-"


def read_stdin() -> bytes:
    """All of standard input's bytes (at most 64 MiB); a failed read is a one-line error.

    Raises:
        RequestFileError: Standard input is closed or cannot be read.
    """
    from llmcore.safeio import MAX_FILE, read_stream_at_most

    if sys.stdin is None:  # started with standard input closed (`<&-`)
        raise RequestFileError("cannot read (standard input is closed)", location=STDIN)
    try:
        return read_stream_at_most(sys.stdin.buffer.read, limit=MAX_FILE, name=STDIN)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RequestFileError(f"cannot read ({reason})", location=STDIN) from None


def write_stdout(data: bytes) -> None:
    """Write ``data`` to stdout and flush.

    Raises:
        CommandError: The write failed (standard output is silenced first).
    """
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    except OSError as exc:
        silence_stdout()
        raise CommandError(stdout_error(exc)) from None
