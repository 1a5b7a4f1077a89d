"""Helpers shared by the command modules: one-line errors and exit codes (SPEC R2)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

import typer

from llmcore.errors import LLMCoreError

__all__ = ["EXIT_USAGE", "fail", "one_line_errors"]

EXIT_USAGE = 2
"""Exit code for bad input: a missing file, invalid JSON, an unsupported feature."""

P = ParamSpec("P")
R = TypeVar("R")


def fail(message: str) -> typer.Exit:
    """Print ``llmcore: message`` on stderr and return the exit to raise (code 2)."""
    print(f"llmcore: {message}", file=sys.stderr)
    return typer.Exit(EXIT_USAGE)


def one_line_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn any :class:`~llmcore.errors.LLMCoreError` the command raises into one line, exit 2."""

    @wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except LLMCoreError as exc:
            raise fail(str(exc)) from None

    return wrapper
