"""The plain layout of ``llmcore audit`` when stdout is not a terminal (a file, a pipe).

The terminal gets a rich table sized to its width; a file or a pipe gets this layout instead,
every line at most :data:`WIDTH` columns, so it reads in an editor, a diff or a CI log
(``--json`` is for machines). One block per request, then the summary::

    #1 stable · conversation 1 · est. 3,210 tok · max cache 3,200 · lost 0 B, 0 tok
       source: tests/cassettes/test_chat.yaml
       first break: 305 $.messages[2].content[0].input
       recorded in/read/write: 10/3,200/0 · rec. hit 100%

The numbers are those of the table and of ``--json`` (``lost_bytes``, ``lost_tokens``,
``max_cacheable_tokens``, ``total_tokens``, ``recorded_usage``); a longer line is wrapped
at a space, or cut where it has none (a long path), with the rest indented.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable
from typing import Final

from llmcore.audit.report import AuditReport, RequestRecord

__all__ = ["WIDTH", "plain_lines"]

WIDTH: Final = 100
"""Most columns of any line of the plain layout."""
TITLE: Final = "llmcore audit: prefix invariant and cacheable prefix"
_INDENT: Final = "   "


class _PathWrapper(textwrap.TextWrapper):
    """A wrapper that may also break a long word after a ``/`` (paths stay readable)."""

    def _split(self, text: str) -> list[str]:
        return [piece for chunk in super()._split(text) for piece in _AFTER_SLASH.split(chunk)]


_AFTER_SLASH: Final = re.compile(r"(?<=/)(?=[^/])")


def fit(line: str, indent: str = "  ") -> list[str]:
    """Return ``line`` wrapped to :data:`WIDTH` columns, continuation lines under ``indent``.

    It breaks at spaces, else after a ``/``, else inside a word too long for a line.
    """
    if len(line) <= WIDTH:
        return [line]
    lead = line[: len(line) - len(line.lstrip(" "))]
    wrapper = _PathWrapper(
        WIDTH, subsequent_indent=lead + indent, break_long_words=True, break_on_hyphens=False
    )
    return wrapper.wrap(line) or [line[:WIDTH]]


def _verdict(r: RequestRecord) -> str:
    if r.exemption is not None:
        return f"{r.verdict} (exempted)"
    if r.kind == "parameter":
        return f"{r.verdict} (parameter {r.parameter or ''})"
    if r.divergence is not None:
        return f"{r.verdict} ({r.divergence})"
    return str(r.verdict)


def _lost(r: RequestRecord) -> str:
    return f"lost {r.lost_bytes:,} B, {r.lost_tokens:,} tok"


def _block(r: RequestRecord, where: Callable[[RequestRecord], str]) -> list[str]:
    head = (
        f"#{r.index} {_verdict(r)} · conversation {r.conversation} · "
        f"est. {r.total_tokens:,} tok · max cache {r.max_cacheable_tokens:,} · "
        + ("lost nothing (nothing cacheable)" if r.uncacheable else _lost(r))
    )
    lines = [head, f"{_INDENT}source: {r.source}"]
    if r.first_break_offset is not None:
        lines.append(f"{_INDENT}first break: {where(r)}")
    u = r.usage
    if u is not None:
        lines.append(
            f"{_INDENT}recorded in/read/write: {u.input_tokens:,}/{u.cache_read_tokens:,}/"
            f"{u.cache_write_tokens:,} · rec. hit {u.hit_rate:.0%}"
        )
    return lines


def plain_lines(
    report: AuditReport, summary: Iterable[str], where: Callable[[RequestRecord], str]
) -> list[str]:
    """Return the plain layout of ``report``: title, a block per request, then ``summary``.

    Args:
        report: The audit.
        summary: The summary lines the table is followed by (wrapped here).
        where: The "first break" text of a record (offset and JSON path).

    Returns:
        Lines without newlines, none longer than :data:`WIDTH` columns.
    """
    out = [TITLE, ""]
    for r in report.requests:
        for line in _block(r, where):
            out.extend(fit(line, "  " if line.startswith(_INDENT) else _INDENT))
    out.append("")
    for line in summary:
        out.extend(fit(line))
    return out
