"""pytest plugin: audit every VCR cassette a test used for prompt-cache breaks (SPEC V3).

Installed with llmcore as the ``pytest11`` entry point ``llmcore`` and off until turned on with
``pytest --llmcore-audit`` or the ini line ``llmcore_audit = true``. When on, it watches which
cassettes each test loads or saves through vcrpy (plain ``vcr.use_cassette`` as decorator or
context manager, and pytest-recording's ``@pytest.mark.vcr`` / ``vcr`` fixture, which use the
same ``vcr.cassette.Cassette``), audits each cassette file on its own with
:func:`llmcore.audit.audit_paths` (SPEC V1: its requests grouped within the file), and fails the
test on a break, naming the cassette, the request index, the first differing byte offset, its
JSON path and both snippets.

When the audit runs:

* after the test body, for every cassette that has nothing left to save (replay runs, and
  ``with vcr.use_cassette(...)`` blocks that have closed): a break fails the test itself;
* after teardown, for cassettes a fixture saves then (pytest-recording in a recording run): a
  break is reported as an error at teardown, since the file does not exist before.

Cassettes in vcrpy's YAML or JSON serializer (``.yaml``/``.yml``/``.json`` files) are audited;
files of other serializers are not, and are listed in the terminal summary.

A test whose body failed, was skipped or xfailed is not audited. A break in a test marked
``@pytest.mark.llmcore_cache_boundary(reason="...")`` (optionally ``request=N``: only request
``N`` of a cassette, 0-based) is listed in the terminal summary instead of failing the test; a
marker without a non-empty reason is an error of the test (checked whether or not the audit is
on, so a local run catches it).

Off, the plugin only adds its option, ini key and marker, and checks the marker's arguments on
tests that carry it; vcrpy and the auditor are imported only when the audit is on.

Leaves out: the exemptions file of ``llmcore audit`` and the audit itself (:mod:`llmcore.audit`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest

if TYPE_CHECKING:
    from llmcore.audit import RequestRecord

__all__ = ["MARKER", "OPTION", "CacheBoundary", "boundaries"]

OPTION: Final = "--llmcore-audit"
"""The command-line option that turns the audit on (ini key: ``llmcore_audit``)."""
MARKER: Final = "llmcore_cache_boundary"
"""The marker of a test whose cassettes hold an intended cache boundary."""

_INI: Final = "llmcore_audit"
_AUDITED: Final = "llmcore_audit_cassettes"
_EXEMPT: Final = "llmcore_cache_boundary"
_NOT_AUDITED: Final = "llmcore_audit_skipped"
_CASSETTE_SUFFIXES: Final = (".yaml", ".yml", ".json")
"""vcrpy's YAML serializer and its ``serializer="json"``; other serializers are listed."""
_HINT: Final = (
    f'if the boundary is intended, mark the test @pytest.mark.{MARKER}(reason="why"), '
    "optionally with request=N"
)
_BOUNDARIES = pytest.StashKey[tuple["CacheBoundary", ...]]()


@dataclass(frozen=True, slots=True)
class CacheBoundary:
    """One ``@pytest.mark.llmcore_cache_boundary`` of a test."""

    reason: str
    """Why the prefix is meant to change (required, non-empty)."""
    request: int | None = None
    """The request index (0-based, within each cassette) it exempts; ``None``: every request."""

    def exempts(self, index: int) -> bool:
        """Whether a break at request ``index`` of a cassette is exempt."""
        return self.request is None or self.request == index


def boundaries(item: pytest.Item) -> tuple[CacheBoundary, ...]:
    """Read the ``llmcore_cache_boundary`` markers of a test (closest first).

    Accepted forms: ``(reason="...")``, ``("...")``, each with an optional ``request=N``.

    Raises:
        pytest.UsageError: A marker has no non-empty reason, an unknown keyword, more than one
            positional argument, or a ``request`` that is not a non-negative integer (the
            message names the test).
    """
    out = []
    for mark in item.iter_markers(MARKER):
        where = f"{item.nodeid}: @pytest.mark.{MARKER}"
        unknown = sorted(set(mark.kwargs) - {"reason", "request"})
        if unknown:
            raise pytest.UsageError(f"{where}: unknown argument {unknown[0]!r}")
        if len(mark.args) > 1 or (mark.args and "reason" in mark.kwargs):
            raise pytest.UsageError(f"{where}: give one reason, as reason='...'")
        reason = mark.kwargs.get("reason", mark.args[0] if mark.args else None)
        if not isinstance(reason, str) or not reason.strip():
            raise pytest.UsageError(
                f"{where} needs a reason: say why the prompt-cache prefix is meant to change, "
                f'as @pytest.mark.{MARKER}(reason="...")'
            )
        request = mark.kwargs.get("request")
        if request is not None and (
            not isinstance(request, int) or isinstance(request, bool) or request < 0
        ):
            raise pytest.UsageError(
                f"{where}: request must be a request index (an integer ≥ 0), not {request!r}"
            )
        out.append(CacheBoundary(reason.strip(), request))
    return tuple(out)


_TEST = pytest.StashKey["_Test"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--llmcore-audit`` and the ini key ``llmcore_audit``."""
    group = parser.getgroup("llmcore", "llmcore prompt-cache audit of VCR cassettes")
    group.addoption(
        OPTION,
        action="store_true",
        dest="llmcore_audit",
        default=False,
        help="audit every VCR cassette each test used and fail the test on a prompt-cache "
        "break (first differing byte, its JSON path, both snippets)",
    )
    parser.addini(_INI, type="bool", default=False, help=f"turn on {OPTION} for every run")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker; when the audit is on, register the cassette watcher."""
    config.addinivalue_line(
        "markers",
        f"{MARKER}(reason, request=None): the test's cassettes hold an intended prompt-cache "
        f"boundary; {OPTION} reports a break there instead of failing (request=N: only "
        "request N of a cassette)",
    )
    if config.getoption("llmcore_audit") or config.getini(_INI):
        config.pluginmanager.register(_CassetteAudit(config), "llmcore-cassette-audit")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Check the test's ``llmcore_cache_boundary`` markers; a bad one errors the test."""
    try:
        item.stash[_BOUNDARIES] = boundaries(item)
        return
    except pytest.UsageError as exc:
        problem = str(exc)
    pytest.fail(problem, pytrace=False)  # outside the handler: no chained traceback


@dataclass(slots=True)
class _Used:
    """The cassette objects a test used, by file."""

    cassettes: list[Any] = field(default_factory=list)
    audited: bool = False

    def settled(self) -> bool:
        """Whether nothing is left to save to the file (no cassette holds unsaved requests)."""
        return not any(getattr(c, "dirty", False) for c in self.cassettes)


@dataclass(slots=True)
class _Test:
    """What one test did with cassettes."""

    used: dict[Path, _Used] = field(default_factory=dict)
    body_passed: bool = False

    def watch(self, cassette: Any) -> None:
        for path in _files(cassette):
            entry = self.used.setdefault(path, _Used())
            if not any(c is cassette for c in entry.cassettes):
                entry.cassettes.append(cassette)

    def take(self, *, settled_only: bool) -> list[Path]:
        """Return the files to audit now (each once), marking them audited."""
        out = []
        for path, entry in self.used.items():
            if not entry.audited and (entry.settled() or not settled_only):
                entry.audited = True
                out.append(path)
        return out


def _files(cassette: Any) -> list[Path]:
    """The files a cassette reads: its path, and pytest-recording's extra cassettes."""
    names = [getattr(cassette, "_path", None)]
    names += list(getattr(getattr(cassette, "_persister", None), "extra_paths", None) or ())
    return [Path(os.path.abspath(os.fspath(n))) for n in names if isinstance(n, str | os.PathLike)]


class _CassetteAudit:
    """The active plugin (registered only when the audit is on)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        try:
            self._cassette_class: Any = importlib.import_module("vcr.cassette").Cassette
        except ImportError:
            raise pytest.UsageError(f"{OPTION} needs vcrpy installed (pip install vcrpy)") from None
        missing = [m for m in ("_load", "_save") if not callable(getattr(self._cassette_class, m))]
        if missing:
            raise pytest.UsageError(
                f"{OPTION}: this vcrpy's Cassette has no {missing[0]}(); the audit needs "
                "vcrpy 4 or later"
            )
        self._audited = 0
        self._exempt: list[str] = []
        self._skipped: list[str] = []

    @contextmanager
    def _watching(self, test: _Test) -> Iterator[None]:
        """Wrap ``Cassette._load`` and ``_save`` so every cassette used is noted in ``test``."""

        def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
            def watched(cassette: Any, *args: Any, **kwargs: Any) -> Any:
                try:
                    return original(cassette, *args, **kwargs)
                finally:
                    test.watch(cassette)

            return watched

        with pytest.MonkeyPatch.context() as patch:
            for name in ("_load", "_save"):
                patch.setattr(self._cassette_class, name, wrap(getattr(self._cassette_class, name)))
            yield

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        test = _Test()
        item.stash[_TEST] = test
        with self._watching(test):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        yield  # raises when the body failed, was skipped or xfailed: nothing is audited then
        test = item.stash[_TEST]
        test.body_passed = True
        self._check(item, test.take(settled_only=True))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        yield
        test = item.stash.get(_TEST, None)
        if test is not None and test.body_passed:
            self._check(item, test.take(settled_only=False))

    def _check(self, item: pytest.Item, paths: list[Path]) -> None:
        """Audit each file; fail the test on breaks not exempt by its markers."""
        from llmcore.errors import LLMCoreError

        marks = item.stash.get(_BOUNDARIES, ())
        failures = []
        audited = 0
        for path in paths:
            shown = self._shown(path)
            if path.suffix.lower() not in _CASSETTE_SUFFIXES and path.is_file():
                item.user_properties.append(
                    (_NOT_AUDITED, f"{shown}: not a YAML or JSON cassette file")
                )
                continue
            try:
                records = _breaks(path)
            except FileNotFoundError:
                continue  # never saved (nothing recorded), or not a file cassette
            except LLMCoreError as exc:  # not a readable cassette: named, never a traceback
                failures.append(f"llmcore audit: cannot audit cassette {shown}: {exc}")
                continue
            audited += 1
            kept = []
            for record in records:
                reasons = [m.reason for m in marks if m.exempts(record.index)]
                if reasons:
                    line = f"{shown}: {_describe(record)}: {record.detail} (reason: {reasons[0]})"
                    item.user_properties.append((_EXEMPT, line))
                else:
                    kept.append(f"  {_describe(record)}\n    {record.detail}")
            if kept:
                failures.append(
                    f"llmcore audit: prompt-cache break in cassette {shown}\n" + "\n".join(kept)
                )
        if audited:
            item.user_properties.append((_AUDITED, audited))
        if failures:
            pytest.fail("\n".join([*failures, _HINT]), pytrace=False)

    def _shown(self, path: Path) -> str:
        root = self._config.rootpath
        return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":  # the last report of a test carries every property
            return
        for key, value in report.user_properties:
            if key == _AUDITED and isinstance(value, int):
                self._audited += value
            elif key == _EXEMPT:
                self._exempt.append(f"{report.nodeid}: {value}")
            elif key == _NOT_AUDITED:
                self._skipped.append(f"{report.nodeid}: {value}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from llmcore._words import plural

        terminalreporter.section("llmcore cassette audit")
        terminalreporter.write_line(
            f"{plural(self._audited, 'cassette file')} audited; "
            f"{plural(len(self._exempt), 'break')} exempt by @pytest.mark.{MARKER}"
        )
        for line in self._exempt:
            terminalreporter.write_line(f"  {line}")
        if self._skipped:
            terminalreporter.write_line(
                f"{plural(len(self._skipped), 'cassette file')} not audited:"
            )
            for line in self._skipped:
                terminalreporter.write_line(f"  {line}")


def _breaks(path: Path) -> list[RequestRecord]:
    """Audit one cassette file on its own; return its records whose verdict is ``break``.

    Raises:
        FileNotFoundError: The file does not exist.
        llmcore.audit.AuditInputError: The file is not a readable cassette.
    """
    if not path.is_file():
        raise FileNotFoundError(path)
    from llmcore.audit import Verdict, audit_paths

    report = audit_paths([path])
    return [r for r in report.requests if r.verdict is Verdict.BREAK]


def _describe(record: RequestRecord) -> str:
    """Where one break is: request index, offset and JSON path."""
    return (
        f"request {record.index} (compared with request {record.compared_with}): first "
        f"differing byte at offset {record.first_break_offset}, JSON path {record.path}"
    )
