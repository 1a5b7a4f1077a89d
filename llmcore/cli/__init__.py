"""The ``llmcore`` command line (SPEC R2).

:func:`main` is the ``llmcore`` console script. It needs the ``cli`` extra (typer, rich,
prompt_toolkit): without it, it prints one line naming the extra and exits 2 instead of a
traceback. The typer application is :data:`app` (defined in :mod:`llmcore.cli._app`, loaded
on first access so that this package imports nothing heavy).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from llmcore.cli._extras import missing_extra

if TYPE_CHECKING:
    from llmcore.cli._app import app

__all__ = ["app", "main"]

EXIT_MISSING_EXTRA = 2
"""Exit status when the ``cli`` extra is not installed."""


def main() -> None:
    """Run the ``llmcore`` command; one line on stderr, exit 2, without the ``cli`` extra.

    ``llmcore --version`` alone is answered before typer is imported, with or without the
    extra.
    """
    if sys.argv[1:] == ["--version"]:  # answered without the application (and its extra)
        from llmcore import __version__

        print(f"llmcore {__version__}")
        return
    missing = missing_extra("cli")
    if missing is not None:
        print(f"llmcore: the command line {missing}", file=sys.stderr)
        sys.exit(EXIT_MISSING_EXTRA)
    from llmcore.cli._app import app

    app()


def __getattr__(name: str) -> Any:
    """Load :data:`app` on first access.

    Raises:
        AttributeError: ``name`` is not ``app``.
    """
    if name == "app":
        from llmcore.cli._app import app

        return app
    raise AttributeError(f"module 'llmcore.cli' has no attribute {name!r}")
