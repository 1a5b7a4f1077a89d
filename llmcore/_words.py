"""Counted nouns in messages: ``1 token``, ``2 tokens``, ``1,024 bytes`` — one rule everywhere.

It leaves out everything else about wording (each message is written where it is raised).
"""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str, many: str | None = None) -> str:
    """Return ``count`` (with thousands separators) and ``noun``, plural unless ``count`` is 1.

    Args:
        count: How many.
        noun: The singular (``token``, ``body byte``).
        many: The plural when it is not ``noun + "s"`` (``entries``).
    """
    word = noun if count == 1 else (many if many is not None else noun + "s")
    return f"{count:,} {word}"
