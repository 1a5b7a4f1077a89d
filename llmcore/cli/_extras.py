"""The optional dependencies (extras) the commands need, found without importing them."""

from __future__ import annotations

import importlib.util
from typing import Final

from llmcore.errors import missing_extra_message

__all__ = ["EXTRAS", "missing_extra"]

EXTRAS: Final[dict[str, tuple[str, ...]]] = {
    "cli": ("typer", "rich", "prompt_toolkit"),
    "emulator": ("starlette", "uvicorn", "httptools"),
    "bench": ("starlette", "uvicorn", "httptools", "matplotlib"),
    "scale": ("dask", "distributed", "pyarrow", "fsspec"),
}
"""Each extra of ``pyproject.toml`` and the top-level modules of it the commands import."""


def missing_extra(extra: str) -> str | None:
    """Return the one-line message for a missing extra, or ``None`` when it is installed.

    Args:
        extra: A key of :data:`EXTRAS` (``cli``, ``emulator``, ``bench``).

    Returns:
        ``"needs the '<extra>' extra (<module> is not installed): pip install 'llmcore[<extra>]'"``
        naming the first missing module, or ``None``. Nothing is imported to find out.
    """
    for module in EXTRAS[extra]:
        if importlib.util.find_spec(module) is None:
            return missing_extra_message(extra, module)
    return None
