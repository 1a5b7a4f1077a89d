"""Reading request bodies for the auditor from files (SPEC V1, R2 ``llmcore audit``).

Inputs, by file name:

* ``*.yaml`` / ``*.yml`` — VCR cassettes as vcrpy / pytest-recording write them:
  ``interactions: [{request: {body, uri, method, …}, response: …, recorded_at?}]``. A body is
  taken as the exact string (or ``{string: …}``, or ``!!binary`` bytes). A body stored as a
  YAML mapping (pydantic-ai's ``parsed_body``, or ``body`` itself under a custom serializer) is
  written back as JSON in its stored key order and marked ``key_order_recorded=False``: the
  order sent is lost (pydantic-ai sorts keys), so key-order changes cannot be seen and byte
  offsets point into the rewritten JSON. The request URI is kept (it decides the wire shape,
  :func:`llmcore.audit._shape.shape_from_uri`). Interactions that are not POSTs to a model
  endpoint (Anthropic ``/messages``, ``/chat/completions``, ``/responses``, Gemini
  ``:generateContent`` / ``:streamGenerateContent``, Bedrock ``/converse``,
  ``/converse-stream`` and Anthropic ``/invoke`` bodies), carry a protobuf body
  (``application/grpc``, ``application/x-protobuf``) or have no body are skipped with the
  reason. Cassettes of another kind — websocket cassettes (``interactions`` of ``kind`` /
  ``direction`` messages) and protobuf cassettes (``!!binary`` payloads, no ``request``) —
  are skipped whole, as is, in a folder, a YAML file that is not a cassette (a config file).
  ``recorded_at`` (on the interaction or its request; ISO 8601 or a YAML timestamp)
  becomes the input's time; a number must be finite seconds within the years 1 to 9999. A value
  YAML reads but Python cannot hold (an integer of over 4,300 digits, a 13th month) is refused
  naming the interaction's line and the value's path (``c.yaml:7: interactions[1].recorded_at``).
* ``*.jsonl`` — one request body per non-blank line, bytes exactly as written, or an envelope
  ``{"conversation": KEY, "body": …, "status": 200, "usage": {…}, "time": …}``
  (:data:`ENVELOPE_KEYS`); a line with ``body`` and any other key is refused as ambiguous.

A cassette's inputs carry their file as their grouping scope, and the recorded response's ``id``
and reported usage (:func:`llmcore.audit.usage.read_response`).
* ``*.har`` — an HTTP Archive, read like a cassette (:mod:`llmcore.audit.har`): one file one
  scope, its entries in order, with the recorded responses' usage.
* ``*.json`` — a corpus case (``request_raw`` preferred, else ``request`` written by
  :func:`llmcore.jsonbytes.dumps` in its stored key order) or one plain request body.
* a folder — every such file below it, in name order (relative POSIX paths, sorted); files that
  are not inputs (READMEs, ``manifest.json``, YAML that is not a cassette) are skipped and
  listed as ``path: reason``.
* ``-`` (when the caller passes ``stdin``) — standard input, named ``<stdin>``: a cassette if it
  starts with ``interactions:`` or ``---`` (after blank and ``#`` lines), else JSONL.

Leaves out: auditing (:func:`llmcore.audit.audit_bodies`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.audit._cassette import _cassette, _cassette_doc
from llmcore.audit._envelope import ENVELOPE_KEYS, _jsonl, envelope_key
from llmcore.audit._values import _utf8
from llmcore.audit.har import as_cassette
from llmcore.audit.report import AuditInput, AuditInputError
from llmcore.errors import EncodingError

__all__ = [
    "ENVELOPE_KEYS",
    "STDIN_NAME",
    "envelope_key",
    "input_files",
    "read_found",
    "read_inputs",
    "read_path",
    "read_stdin",
]

STDIN_NAME: Final = "<stdin>"
"""How standard input (``-``) is named in sources and errors."""

_SUFFIXES: Final = frozenset({".yaml", ".yml", ".jsonl", ".json", ".har"})


def read_inputs(
    paths: Sequence[Path], stdin: Callable[[], bytes] | None = None
) -> tuple[list[AuditInput], list[str]]:
    """Read every body from ``paths`` in order.

    Args:
        paths: Files and folders.
        stdin: Returns standard input's bytes; when given, a path ``-`` is read from it (see
            :func:`read_stdin`). Without it, ``-`` is a file name like any other.

    Returns:
        The inputs, and the files or interactions passed over (with the reason). A file found
        in a folder that cannot be read or is malformed is passed over (``file:line: reason``),
        and its inputs are :attr:`~AuditInput.skippable`.

    Raises:
        AuditInputError: A path is missing, a file named in ``paths`` is unreadable or
            malformed (names the file and line or index).
    """
    inputs: list[AuditInput] = []
    skipped: list[str] = []
    for path, named in input_files(paths, stdin is not None):
        if named is None:
            assert stdin is not None
            inputs.extend(read_stdin(stdin(), skipped))
        elif named:
            inputs.extend(read_path(path, skipped, strict=True))
        else:
            inputs.extend(read_found(path, skipped))
    return inputs, skipped


def input_files(paths: Sequence[Path], stdin: bool) -> Iterator[tuple[Path, bool | None]]:
    """Each input file of ``paths`` in reading order: ``(path, named)``, checked when reached.

    ``named`` is ``True`` for a file named in ``paths``, ``False`` for one found in a folder
    (only the input suffixes, by relative POSIX path), ``None`` for ``-`` when ``stdin``.

    Raises:
        AuditInputError: (when that path is reached) It is missing, or neither a regular file
            nor a folder.
    """
    for path in paths:
        if stdin and str(path) == "-":
            yield path, None
        elif path.is_dir():
            for file in _folder_files(path):
                yield file, False
        elif path.is_file():
            yield path, True
        elif path.exists():
            raise AuditInputError("not a regular file or folder", location=str(path))
        else:
            raise AuditInputError("no such file or folder", location=str(path))


def _folder_files(folder: Path) -> list[Path]:
    """The files under ``folder`` with an input suffix, by relative POSIX path.

    As ``folder.rglob("*")`` filtered by ``is_file()``: a symbolic link to a file is listed,
    one to a folder is not followed, an unreadable folder is left out; but listed with
    :func:`os.walk` (``os.scandir``), which tells folders from files without a ``stat`` of
    each entry: a README, a license or code is never looked at.
    """
    found: list[tuple[str, str]] = []
    root = os.fspath(folder)
    for top, _, names in os.walk(root):
        rel = os.path.relpath(top, root).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        for name in names:
            if os.path.splitext(name)[1].lower() in _SUFFIXES:  # not a README, a license, code
                path = os.path.join(top, name)
                if os.path.isfile(path):
                    found.append((prefix + name, path))
    found.sort()
    return [Path(path) for _, path in found]


def read_found(file: Path, skipped: list[str]) -> list[AuditInput]:
    """Read a file found in a folder: one bad file is listed in ``skipped``, never the end.

    Its inputs are :attr:`~AuditInput.skippable`.
    """
    try:
        found = read_path(file, skipped, strict=False)
    except AuditInputError as exc:
        skipped.append(f"{exc.location or file}: {exc.message}")
        return []
    return [one if one.skippable else replace(one, skippable=True) for one in found]


def read_path(path: Path, skipped: list[str], *, strict: bool = True) -> list[AuditInput]:
    """Read the bodies of one file, chosen by its suffix.

    Args:
        path: The file.
        skipped: Receives what was passed over.
        strict: Whether a ``.json`` file that is neither a case nor a body, or a YAML file that
            is not a cassette, is an error (a file named on the command line) or skipped (a
            file found in a folder).

    Raises:
        AuditInputError: The file cannot be read or is malformed.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AuditInputError(f"cannot read: {exc.strerror}", location=str(path)) from exc
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return _cassette(path, data, skipped, strict)
    if suffix == ".jsonl":
        return _jsonl(path, data)
    if suffix == ".json":
        return _json(path, data, skipped, strict)
    if suffix == ".har":
        return _har(path, data, skipped, strict)
    raise AuditInputError(
        "unknown input type (expected .yaml/.yml cassette, .har, .jsonl or .json)",
        location=str(path),
    )


def read_stdin(data: bytes, skipped: list[str]) -> list[AuditInput]:
    """Read standard input's bytes as a cassette or as JSONL.

    A cassette if they start with ``interactions:`` or ``---`` (after any blank or ``#`` comment
    lines, which JSONL cannot hold), else JSONL (one body per line); sources are
    ``<stdin>:LINE``.

    Raises:
        AuditInputError: The cassette or a line is malformed (names ``<stdin>`` and the line).
    """
    first = next((x for x in data.splitlines() if x.strip() and not x.startswith(b"#")), b"")
    if first.startswith((b"interactions:", b"---")):
        return _cassette(Path(STDIN_NAME), data, skipped)
    return _jsonl(Path(STDIN_NAME), data)


def _json(path: Path, data: bytes, skipped: list[str], strict: bool) -> list[AuditInput]:
    try:
        value = jsonbytes.loads(data)
    except ValueError as exc:
        raise AuditInputError(f"not valid JSON ({exc})", location=str(path)) from None
    except RecursionError:
        raise AuditInputError(
            "the JSON is nested too deeply to read (Python's recursion limit)", location=str(path)
        ) from None
    if isinstance(value, dict) and "interactions" in value:  # vcrpy's serializer="json"
        return _cassette_doc(path, value, [], skipped, strict)
    if isinstance(value, dict) and "request" in value:
        return [replace(_case(path, value), file=str(path))]
    if isinstance(value, dict) and ("messages" in value or "input" in value):
        return [AuditInput(body=data, source=str(path), file=str(path))]
    if strict:
        raise AuditInputError(
            "neither a corpus case (no 'request') nor a request body (no 'messages' or 'input')",
            location=str(path),
        )
    skipped.append(f"{path}: neither a corpus case nor a request body")
    return []


def _har(path: Path, data: bytes, skipped: list[str], strict: bool) -> list[AuditInput]:
    """A HAR file, read as the cassette it stands for (:mod:`llmcore.audit.har`)."""
    try:
        value = jsonbytes.loads(data)
    except (ValueError, RecursionError) as exc:
        raise AuditInputError(f"not a valid HAR file ({exc})", location=str(path)) from None
    doc = as_cassette(value, str(path))
    if doc is None:
        raise AuditInputError("a HAR file needs a 'log.entries' list", location=str(path))
    start = len(skipped)
    found = _cassette_doc(path, doc, [], skipped, strict)
    skipped[start:] = [_entries(text) for text in skipped[start:]]
    return [
        replace(one, source=_entries(one.source), location=_entries(one.location or one.source))
        for one in found
    ]


def _entries(text: str) -> str:
    """A cassette location as a HAR file's: ``interactions[3]`` → ``log.entries[3]``."""
    return text.replace(": interactions[", ": log.entries[", 1)


def _case(path: Path, value: dict[str, Any]) -> AuditInput:
    raw = value.get("request_raw")
    if isinstance(raw, str):
        return AuditInput(body=_utf8(raw, f"{path}: request_raw"), source=str(path))
    request = value["request"]
    if not isinstance(request, dict):
        raise AuditInputError("'request' is not a JSON object", location=f"{path}: request")
    try:
        body = jsonbytes.dumps(request)
    except EncodingError as exc:  # a lone surrogate, or nested too deeply to write
        raise AuditInputError(
            f"cannot write 'request': {exc.message}", location=f"{path}: request"
        ) from None
    return AuditInput(body=body, source=str(path))
