"""``llmcore audit PATH…``: the stability auditor on recorded bodies (SPEC V1, R2).

Prints one row per request (conversation, verdict, first breaking byte and its JSON path, the
cacheable bytes and tokens lost, the theoretical maximum cacheable tokens) and the totals, or the
report as JSON with ``--json``. Exit 0 when P4 holds everywhere (allowed kinds included), 1 when
a break is found and for nothing else, 2 on bad input or any other error (one line on stderr: a
file or folder that cannot be read, a report that cannot be written, and, should one slip
through, an unexpected exception, named as an internal error), 130 when interrupted (Ctrl+C).
A run that audited no request exits 2 with one line saying so, never "stable" — except with
``--empty-ok`` (per-file hooks: a cassette of only non-model traffic), which lists what was
skipped and exits 0 unless ``--strict``; with
``--strict``, any skipped input (a websocket or protobuf cassette, a non-model interaction, a
YAML file that is not a cassette) exits 2 after the report, with one line naming the first.
A ``--provider`` that contradicts a body's shape is a warning line on stderr per file; the
bodies are audited as asked.
A PATH of ``-`` is standard input: JSONL (one body per line), or a YAML cassette when it starts
with ``interactions:`` or ``---``; errors name it ``<stdin>``. ``--group file|prefix|key``
overrides how requests are grouped; ``--exemptions FILE`` marks intended breaks (with their
reasons) that then do not fail the run. Token figures from the bodies are estimates and are
labelled so; where a cassette recorded the responses, their reported usage (input, cache read,
cache write) and the recorded hit rate are shown beside the theoretical maximum. ``--jobs N``
audits in N worker processes (default: every core, for 8 MiB of input or more), partitioned by
file and conversation key, with the report of one process (:mod:`llmcore.audit.jobs`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TextIO

import typer

from llmcore._words import plural
from llmcore.audit import GROUPINGS, PROVIDERS
from llmcore.errors import LLMCoreError

from ._audit_report import layout

if TYPE_CHECKING:
    from llmcore.audit import AuditReport

__all__ = [
    "EXIT_BREAK",
    "EXIT_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_STABLE",
    "audit",
    "audit_command",
    "register",
]

EXIT_STABLE = 0
"""Every request keeps P4 (allowed changes included)."""
EXIT_BREAK = 1
"""At least one request breaks P4."""
EXIT_INPUT = 2
"""An input is missing or malformed, the provider name is unknown, or the audit failed."""
EXIT_INTERRUPTED = 130
"""Interrupted (SIGINT, Ctrl+C): the shell's code, never mistaken for a break."""


def audit_command(
    paths: Sequence[Path | str],
    provider: str | None,
    as_json: bool,
    *,
    strict: bool = False,
    group: str | None = None,
    exemptions: Path | None = None,
    allow_empty: bool = False,
    jobs: int | None = 1,
    engine: str | None = None,
    scheduler: str | None = None,
    columns: Sequence[str] = (),
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Audit ``paths`` and print the table (or JSON); return the exit code.

    Args:
        paths: Cassettes, HAR files, JSONL files, corpus cases, or folders of them, in order.
        provider: Provider for every body, or ``None`` to read each body's shape.
        as_json: Print :meth:`AuditReport.to_json` instead of the table.
        strict: Any skipped input makes the run exit :data:`EXIT_INPUT` (after the report).
        group: ``file``, ``prefix`` or ``key`` to override the grouping, or ``None``.
        exemptions: An exemptions file (:mod:`llmcore.audit.exemptions`), or ``None``.
        allow_empty: A run that audits no request lists what it skipped on ``out`` and exits
            :data:`EXIT_STABLE` (unless ``strict``), for hooks run on one cassette at a time.
        jobs: Worker processes (:func:`llmcore.audit.jobs.audit_jobs`; the same report);
            ``None``: every core for inputs of 8 MiB or more; ``1``: this process.
        engine: ``"dask"`` audits on a Dask cluster (:func:`llmcore.audit.engine.audit_dask`;
            paths may be fsspec URLs), or ``None``.
        scheduler: The Dask scheduler's address; ``None`` starts a local cluster.
        columns: ``FIELD=COLUMN`` Parquet column names (:class:`~llmcore.audit.engine.Columns`).
        out: Where the report goes (default stdout).
        err: Where a bad-input line goes (default stderr).

    Returns:
        :data:`EXIT_STABLE`, :data:`EXIT_BREAK` (only ever for a break), :data:`EXIT_INPUT` for
        any error, for a run that audited no request (nothing printed on ``out``) and, with
        ``strict``, for any skipped input (one line on ``err`` each time), or
        :data:`EXIT_INTERRUPTED`.
    """
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    from llmcore.audit.exemptions import apply_exemptions, load_exemptions, unmatched_exemptions

    try:
        exempt = load_exemptions(exemptions) if exemptions is not None else ()
        on = (engine, scheduler, columns)
        report = apply_exemptions(_audit(paths, provider, group, jobs, on), exempt)
        for i in unmatched_exemptions(report, exempt):
            print(
                f"llmcore: warning: {exemptions}: entries[{i}]: file {exempt[i].file!r} matched"
                " no audited request",
                file=err,
            )
        for warning in report.warnings:
            print(f"llmcore: warning: {warning}", file=err)
        message = _outcome(report, as_json, out, strict, allow_empty)
        if message is None:
            return EXIT_STABLE
    except LLMCoreError as exc:
        message = str(exc)
    except OSError as exc:  # a folder that cannot be listed, a closed stdout
        message = _os_error(exc)
    except KeyboardInterrupt:
        print("llmcore: interrupted", file=err)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug: one line, and never the exit code of a break
        message = f"internal error (please report it): {type(exc).__name__}: {exc}"
    else:
        if not message:
            return EXIT_STABLE if report.stable else EXIT_BREAK
    print("llmcore: " + " ".join(message.split()), file=err)
    return EXIT_INPUT


def _audit(
    paths: Sequence[Path | str],
    provider: str | None,
    group: str | None,
    jobs: int | None,
    cluster: tuple[str | None, str | None, Sequence[str]],
) -> AuditReport:
    """The report: from this process (``jobs`` 1), worker processes or a cluster (the same)."""
    engine, scheduler, columns = cluster
    if engine is not None or scheduler is not None:
        return _on_cluster(paths, provider, group, engine, scheduler, columns)
    local = [Path(p) for p in paths]
    if jobs == 1:
        from llmcore.audit import audit_paths

        return audit_paths(local, provider, _read_stdin, group=group)
    from llmcore.audit.jobs import audit_jobs

    return audit_jobs(local, provider, _read_stdin, group=group, jobs=jobs)


def _on_cluster(
    paths: Sequence[Path | str],
    provider: str | None,
    group: str | None,
    engine: str | None,
    scheduler: str | None,
    columns: Sequence[str],
) -> AuditReport:
    """The report from a Dask cluster (``--engine dask``, ``--scheduler``)."""
    from llmcore.audit import AuditInputError

    if engine not in (None, "dask"):
        raise AuditInputError(f"unknown engine {engine!r} (expected: dask)", location="--engine")
    from llmcore.audit.engine import Columns, audit_dask

    names: dict[str, str] = {}
    for one in columns:
        name, sep, column = one.partition("=")
        if not sep or name not in Columns.__dataclass_fields__ or not column:
            raise AuditInputError(
                f"expected FIELD=COLUMN with FIELD one of {', '.join(Columns.__dataclass_fields__)}"
                f", not {one!r}",
                location="--column",
            )
        names[name] = column
    return audit_dask(
        [str(p) for p in paths],
        scheduler=scheduler,
        provider=provider,
        group=group,
        columns=Columns(**names),
    )


def _outcome(
    report: AuditReport, as_json: bool, out: TextIO, strict: bool, allow_empty: bool
) -> str | None:
    """Print the report; return why the run fails (``""``: it does not; ``None``: exit 0)."""
    if not report.requests:
        if allow_empty and not strict:
            _print_skipped(report, out)
            return None
        return _nothing_audited(report)
    _print(report, as_json, out)
    return _strict_failure(report) if strict else ""


def _print_skipped(report: AuditReport, out: TextIO) -> None:
    """``--empty-ok`` with nothing audited: one line, then each input skipped."""
    print(
        f"llmcore audit: no model request ({plural(len(report.skipped), 'input')} skipped)",
        file=out,
    )
    for skipped in report.skipped:
        print(f"  skipped: {skipped}", file=out)


def _nothing_audited(report: AuditReport) -> str:
    if not report.skipped:
        return "no request audited: the inputs hold no request bodies"
    return (
        f"no request audited: {plural(len(report.skipped), 'input')} skipped"
        f" (first: {report.skipped[0]})"
    )


def _strict_failure(report: AuditReport) -> str:
    if not report.skipped:
        return ""
    return f"--strict: {plural(len(report.skipped), 'input')} skipped (first: {report.skipped[0]})"


def _read_stdin() -> bytes:
    from llmcore.audit import AuditInputError
    from llmcore.audit.inputs import STDIN_NAME

    if sys.stdin is None:  # started with standard input closed (`<&-`)
        raise AuditInputError("cannot read: standard input is closed", location=STDIN_NAME)
    try:
        return sys.stdin.buffer.read()
    except OSError as exc:
        raise AuditInputError(f"cannot read: {exc.strerror}", location=STDIN_NAME) from None


def _print(report: AuditReport, as_json: bool, out: TextIO) -> None:
    """Write the report to ``out``.

    Raises:
        OSError: The write failed (a closed pipe, a full disk); when ``out`` is the process's
            stdout, it now points at ``/dev/null`` so the interpreter's last flush stays quiet.
    """
    try:
        if as_json:
            out.write(report.to_json().decode("utf-8") + "\n")
        else:
            layout(report, out)
        out.flush()
    except OSError as exc:
        _detach(out)
        raise OSError(exc.errno, exc.strerror) from None  # no file name: the output failed


def _detach(out: TextIO) -> None:
    """Point stdout's file descriptor at ``/dev/null`` (the ``signal`` docs' recipe).

    Only when ``out`` is ``sys.stdout``: a caller's own file is left alone.
    """
    if out is not sys.stdout:
        return
    try:
        fd = out.fileno()
    except (OSError, ValueError):  # a StringIO or a test's capture: nothing to flush at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _os_error(exc: OSError) -> str:
    reason = exc.strerror or type(exc).__name__
    if exc.filename is not None:
        return f"{exc.filename}: cannot read ({reason})"
    return f"cannot write the report ({reason})"


def audit(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH",
            help=(
                "Cassettes (.yaml), HAR files, JSONL, corpus cases (.json), or folders; - reads"
                " stdin as"
                " JSONL (one body per line), or as a cassette if it starts with 'interactions:'"
                " or '---'."
            ),
        ),
    ],
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider",
            "-p",
            metavar="PROVIDER",
            help=f"One of: {', '.join(PROVIDERS)}; else by shape.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", metavar="", help="Print the report as JSON.")
    ] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            metavar="",
            help="Exit 2 when any input was skipped (websocket or protobuf cassettes, other YAML).",
        ),
    ] = False,
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            metavar="RULE",
            help=(
                f"Override the grouping: {', '.join(GROUPINGS)} (default: a conversation key"
                " when the traffic carries one, else within each cassette file, else by"
                " longest shared run)."
            ),
        ),
    ] = None,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--empty-ok",
            metavar="",
            help=(
                "Exit 0 when no request was audited (files of only non-model traffic, listed);"
                " for per-file hooks. --strict still exits 2."
            ),
        ),
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            "--jobs",
            "-j",
            metavar="N",
            min=1,
            help=(
                "Worker processes (default: every core, for inputs of 8 MiB or more); the"
                " report is the same as with --jobs 1 (this process)."
            ),
        ),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            metavar="ENGINE",
            help=(
                "dask: audit .jsonl, .jsonl.gz and .parquet files (local or fsspec URLs) on a"
                " Dask cluster (needs the 'scale' extra)."
            ),
        ),
    ] = None,
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            metavar="ADDRESS",
            help="The Dask scheduler (tcp://host:8786); default: a local cluster.",
        ),
    ] = None,
    columns: Annotated[
        list[str] | None,
        typer.Option(
            "--column",
            metavar="F=NAME",
            help=(
                "FIELD=NAME: the Parquet column of body, conversation, usage, time or status"
                " (--engine dask)."
            ),
        ),
    ] = None,
    exemptions: Annotated[
        Path | None,
        typer.Option(
            "--exemptions",
            metavar="FILE",
            help=(
                "YAML or JSON list of {file, request?, reason}: breaks it covers are reported"
                " as exempted and do not fail the run."
            ),
        ),
    ] = None,
) -> None:
    """Check the prefix invariant (P4) over recorded request bodies, in order."""
    raise typer.Exit(
        audit_command(
            paths,
            provider,
            as_json,
            group=group,
            exemptions=exemptions,
            strict=strict,
            allow_empty=allow_empty,
            jobs=jobs,
            engine=engine,
            scheduler=scheduler,
            columns=columns or (),
        )
    )


def register(app: typer.Typer) -> None:
    """Add ``audit`` to ``app``."""
    app.command("audit")(audit)
