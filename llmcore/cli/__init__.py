"""The ``llmcore`` command line (SPEC R2).

:func:`main` is the ``llmcore`` console script. It needs the ``cli`` extra (typer, rich,
prompt_toolkit): without it, it prints one line naming the extra and exits 2 instead of a
traceback. The typer application is :data:`app` (defined in :mod:`llmcore.cli._app`, loaded
on first access so that this package imports nothing heavy).
"""

from __future__ import annotations

import errno
import sys
from typing import TYPE_CHECKING, Any

from llmcore.cli._extras import missing_extra
from llmcore.cli._stdout import silence_stdout, stdout_error

if TYPE_CHECKING:
    from llmcore.cli._app import app

__all__ = ["app", "main"]

EXIT_MISSING_EXTRA = 2
"""Exit status when the ``cli`` extra is not installed."""


def main() -> None:
    """Run the ``llmcore`` command; one line on stderr, exit 2, without the ``cli`` extra.

    ``llmcore --version`` alone is answered before typer is imported, with or without the
    extra, and so is the plain ``llmcore body FILE -p PROVIDER``
    (:func:`llmcore.cli._body_run.fast_body`; the same bytes and the same error lines), and
    the root help, ``llmcore --help`` and bare ``llmcore``, on a console whose width and
    colours are known (:func:`llmcore.cli._root_help.fast_help`; the same page, byte for byte).
    """
    if sys.argv[1:] == ["--version"]:  # answered without the application (and its extra)
        _print_version()
        return
    missing = missing_extra("cli")
    if missing is not None:
        print(f"llmcore: the command line {missing}", file=sys.stderr)
        sys.exit(EXIT_MISSING_EXTRA)
    if sys.argv[1:] in ([], ["--help"]):  # the root help draws without typer (_root_help)
        from llmcore.cli._root_help import fast_help

        code = fast_help(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    if sys.argv[1:2] == ["body"]:  # the plain form starts without typer (_body_run)
        from llmcore.cli._body_run import fast_body

        code = fast_body(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    from llmcore.cli._app import app

    app()


def _print_version() -> None:
    """Print ``llmcore <version>``; an output that cannot be written is one line, exit 2."""
    from llmcore import __version__

    try:
        sys.stdout.write(f"llmcore {__version__}\n")
        sys.stdout.flush()
    except OSError as exc:
        silence_stdout()
        if exc.errno == errno.EPIPE:  # a closed pipe: nothing to say
            sys.exit(1)
        print(f"llmcore: {stdout_error(exc)}", file=sys.stderr)
        sys.exit(EXIT_MISSING_EXTRA)


def __getattr__(name: str) -> Any:
    """Load :data:`app` on first access.

    Raises:
        AttributeError: ``name`` is not ``app``.
    """
    if name == "app":
        from llmcore.cli._app import app

        return app
    raise AttributeError(f"module 'llmcore.cli' has no attribute {name!r}")
