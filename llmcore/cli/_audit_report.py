"""The text report of ``llmcore audit``: a rich table on a terminal, the plain layout elsewhere.

:mod:`llmcore.cli.audit` prints it; the rows, the totals and the notes under them (rewritten
bodies, skipped inputs, the recorded hit rate, the ideal-breakpoint maximum) are written here.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, TextIO

from llmcore._words import plural

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from llmcore.audit import AuditReport, RequestRecord

__all__ = ["STYLE", "console", "layout"]

STYLE = {
    "new": "dim",
    "stable": "green",
    "break": "bold red",
    "thinking_dropped": "yellow",
    "reasoning_dropped": "yellow",
    "compaction": "cyan",
    "deferred_tools": "cyan",
    "retry": "green",
    "shorter_rerun": "green",
    "continuation": "green",
    "rejected": "magenta",
}
"""The rich style of each :class:`~llmcore.audit.Verdict`, by its name."""


_MIN_TEXT_WIDTH = {"source": 14, "first break": 10}
_COLUMNS = (
    ("#", "right"),
    ("source", "left"),
    ("conv", "right"),
    ("verdict", "left"),
    ("first break", "left"),
    ("lost B", "right"),
    ("lost tok", "right"),
    ("max cache", "right"),
    ("est. tok", "right"),
    ("recorded in/read/write", "right"),
    ("rec. hit", "right"),
)
_NARROW_LEFT_OUT = frozenset({"conv", "lost B", "max cache", "recorded in/read/write"})
"""Columns left out below :data:`_NARROW` terminal columns (``--json`` has everything)."""
_NARROW = 110


def _table(report: AuditReport, width: int) -> Table:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="llmcore audit: prefix invariant and cacheable prefix", show_lines=False)
    names = [c for c in _COLUMNS if width >= _NARROW or c[0] not in _NARROW_LEFT_OUT]
    for name, justify in names:
        text = name in _MIN_TEXT_WIDTH
        table.add_column(
            name,
            justify=justify,  # type: ignore[arg-type]
            overflow="fold" if text else "ellipsis",
            no_wrap=not text,
            min_width=_MIN_TEXT_WIDTH[name] if text else len(name),
            ratio=1 if text else None,
        )
    for r in report.requests:
        where = _where(r)
        u = r.usage
        verdict = f"[{STYLE[r.verdict]}]{r.verdict}[/]"
        if r.kind == "parameter":
            verdict += f" (parameter {escape(r.parameter or '')})"
        elif r.divergence is not None:
            verdict += f" ({r.divergence})"
        if r.exemption is not None:
            verdict = f"[yellow]{r.verdict} (exempted)[/]"
        cells = {
            "#": str(r.index),
            "source": escape(r.source),  # pytest ids hold brackets: test_x[anthropic].yaml
            "conv": str(r.conversation),
            "verdict": verdict,
            "first break": where,
            "lost B": "-" if r.uncacheable else f"{r.lost_bytes:,}",
            "lost tok": "-" if r.uncacheable else f"{r.lost_tokens:,}",
            "max cache": f"{r.max_cacheable_tokens:,}",
            "est. tok": f"{r.total_tokens:,}",
            "recorded in/read/write": (
                ""
                if u is None
                else f"{u.input_tokens:,}/{u.cache_read_tokens:,}/{u.cache_write_tokens:,}"
            ),
            "rec. hit": "" if u is None else f"{u.hit_rate:.0%}",
        }
        table.add_row(*(cells[name] for name, _ in names))
    return table


_SKIPS_SHOWN = 20
"""At most this many skipped inputs are listed under the table (``--json`` has them all)."""


def _where(r: RequestRecord) -> str:
    """Return the "first break" cell: byte offset and JSON path.

    The path alone when the body was rewritten from a parsed mapping (its offsets are not into
    the bytes sent).
    """
    if r.first_break_offset is None:
        return ""
    if not r.key_order_recorded:
        return f"{r.path} (key order not recorded: no byte offset)"
    return f"{r.first_break_offset} {r.path}"


def _input_notes(report: AuditReport) -> list[str]:
    """Lines on what was not audited as recorded: rewritten bodies, skipped inputs."""
    lines = []
    rewritten = sum(1 for r in report.requests if not r.key_order_recorded)
    if rewritten:
        lines.append(
            f"{plural(rewritten, 'request')} read from a parsed body (key order not recorded:"
            " key-order changes cannot be seen, offsets are into the rewritten JSON)"
        )
    if report.skipped:
        lines.append(f"skipped {plural(len(report.skipped), 'input')}:")
        lines.extend(f"  {line}" for line in report.skipped[:_SKIPS_SHOWN])
        if len(report.skipped) > _SKIPS_SHOWN:
            lines.append(f"  … and {len(report.skipped) - _SKIPS_SHOWN} more (see --json)")
    return lines


def _summary(report: AuditReport) -> list[str]:
    counts = ", ".join(f"{k} {v}" for k, v in report.counts().items() if v)
    lines = [
        f"{plural(len(report.requests), 'request')} in "
        f"{plural(report.conversations, 'conversation')}: {counts or '-'}",
        _lost_line(report),
        (
            f"theoretical maximum hit rate: {report.theoretical_hit_rate:.1%} "
            f"({report.max_cacheable_tokens:,} of {plural(report.total_tokens, 'token')}, "
            "estimated)"
        ),
        _recorded_line(report),
        *_maximum_notes(report),
    ]
    from llmcore.audit import Verdict

    for r in report.requests:
        if r.verdict is Verdict.BREAK and r.detail:
            where = f" in {r.divergence}" if r.divergence else ""
            if r.kind == "parameter":
                where = f" (parameter {r.parameter})"
            lines.append(f"request {r.index} ({r.source}): break{where}: {r.detail}")
            if r.uncacheable:
                lines.append(f"  {r.uncacheable}")
            if r.exemption is not None:
                lines.append(f"  exempted: {r.exemption}")
        elif r.verdict is Verdict.REJECTED:
            lines.append(f"request {r.index} ({r.source}): rejected: {r.detail}")
        lines.extend(f"request {r.index} ({r.source}): note: {note}" for note in r.notes)
    if report.exempted:
        lines.append(
            f"{plural(report.exempted, 'break')} exempted; "
            f"{plural(report.breaks - report.exempted, 'break')} not"
        )
    return lines + _input_notes(report)


def _lost_line(report: AuditReport) -> str:
    """What the breaks lost, or that nothing was cacheable before any of them."""
    from llmcore.audit import Verdict

    breaks = [r for r in report.requests if r.verdict is Verdict.BREAK]
    free = sum(1 for r in breaks if r.uncacheable)
    if breaks and free == len(breaks):
        return (
            "lost to breaks: none (no cache hit was possible: each prompt before a break is "
            "under its model's minimum cacheable prefix)"
        )
    line = (
        f"lost to breaks: {plural(report.lost_bytes, 'byte')}, "
        f"{plural(report.lost_tokens, 'token')} (estimated)"
    )
    if free:
        line += f"; {plural(free, 'break')} lost nothing (nothing was cacheable before it)"
    return line


def _maximum_notes(report: AuditReport) -> list[str]:
    """The ideal-breakpoint maximum where it differs, diagnoses, and unseen reads.

    Unseen: a recorded read above the maximum, labelled "not visible in the input".
    """
    lines = []
    ideal = sum(r.ideal_cacheable_tokens or 0 for r in report.requests)
    if ideal != report.max_cacheable_tokens and report.total_tokens:
        lines.append(
            f"with ideal breakpoints: {ideal / report.total_tokens:.1%} ({ideal:,} of "
            f"{plural(report.total_tokens, 'token')}, estimated)"
        )
    lines.extend(f"diagnosis: {line}" for line in report.diagnoses)
    for r in report.requests:
        if r.not_visible and r.usage and r.usage.cache_read_tokens > r.max_cacheable_tokens:
            lines.append(f"request {r.index} ({r.source}): {r.not_visible}")
    return lines


def _recorded_line(report: AuditReport) -> str:
    """The recorded hit rate, from the responses' reported usage, or why there is none."""
    usage = report.recorded_usage
    if usage is None:
        return "recorded hit rate: - (no recorded response reported usage)"
    return (
        f"recorded hit rate: {usage.hit_rate:.1%} ({usage.cache_read_tokens:,} of "
        f"{plural(usage.input_tokens, 'input token')} read from cache, "
        f"{usage.cache_write_tokens:,} written; {len(report.recorded)} of "
        f"{plural(len(report.requests), 'request')} recorded usage)"
    )


def layout(report: AuditReport, out: TextIO) -> None:
    """The table on a terminal (its width), else the plain layout of :mod:`llmcore.audit.plain`."""
    if not out.isatty():
        from llmcore.audit.plain import plain_lines

        out.write("".join(f"{line}\n" for line in plain_lines(report, _summary(report), _where)))
        return
    screen = console(out, None)
    screen.print(_table(report, screen.width))
    for line in _summary(report):
        screen.print(line, markup=False, soft_wrap=True)


def console(out: TextIO, width: int | None) -> Console:
    """A rich console on ``out`` whose broken pipe is an ``OSError`` (rich's own exits, code 1)."""
    from rich.console import Console

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    return PipeConsole(file=out, width=width, highlight=False)
