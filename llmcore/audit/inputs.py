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

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from llmcore import jsonbytes
from llmcore.audit import _vcr_yaml
from llmcore.audit._shape import BEDROCK_INVOKE, shape_from_uri
from llmcore.audit.har import as_cassette
from llmcore.audit.live import record_uri
from llmcore.audit.report import AuditInput, AuditInputError
from llmcore.audit.usage import read_response, usage_of
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

_PROTOBUF_TYPES: Final = ("application/grpc", "application/x-protobuf", "application/protobuf")
_SUFFIXES: Final = frozenset({".yaml", ".yml", ".jsonl", ".json", ".har"})

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a core dependency with a fallback
    _orjson = None  # type: ignore[assignment]

try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


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
            files = sorted(
                (p for p in path.rglob("*") if p.is_file()),
                key=lambda p: p.relative_to(path).as_posix(),
            )
            for file in files:
                if file.suffix.lower() in _SUFFIXES:  # not a README, a license, code
                    yield file, False
        elif path.is_file():
            yield path, True
        elif path.exists():
            raise AuditInputError("not a regular file or folder", location=str(path))
        else:
            raise AuditInputError("no such file or folder", location=str(path))


def read_found(file: Path, skipped: list[str]) -> list[AuditInput]:
    """Read a file found in a folder: one bad file is listed in ``skipped``, never the end.

    Its inputs are :attr:`~AuditInput.skippable`.
    """
    try:
        found = read_path(file, skipped, strict=False)
    except AuditInputError as exc:
        skipped.append(f"{exc.location or file}: {exc.message}")
        return []
    return [replace(one, skippable=True) for one in found]


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


def _jsonl(path: Path, data: bytes) -> list[AuditInput]:
    out = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        line = line.removesuffix(b"\r")
        if line.strip():
            out.append(_jsonl_line(line, str(path), number))
    return out


ENVELOPE_KEYS: Final = frozenset(
    {"body", "conversation", "status", "usage", "time", "provider", "path", "response_id"}
)
"""A JSONL line that is an object with a ``"body"`` is an envelope, read by these fields:

* ``body`` (required): the request body as a JSON string (its exact bytes) or object (written
  back compactly, in its key order);
* ``conversation``: a string, the line's conversation key (:attr:`AuditInput.conversation_key`);
* ``status``: the HTTP status the server answered (an integer), or ``null`` for a request that
  got no response; a status ≥ 400 or ``null`` makes the request :attr:`Verdict.REJECTED`;
* ``usage``: the response's ``usage`` (or Gemini ``usageMetadata``) object in its provider's
  shape (:func:`llmcore.audit.usage.usage_of`);
* ``time``: when it was sent, ISO 8601 text or seconds since the epoch (enables TTLs);
* ``path`` and ``provider``: the request path and the provider name, which together decide the
  wire shape (:attr:`AuditInput.uri`), as the record of ``llmcore proxy --record`` and
  ``llmcore emulate --record`` writes them (:mod:`llmcore.audit.live`);
* ``response_id``: the answer's id, a string (OpenAI Responses' ``resp_…``): a later line whose
  body's ``previous_response_id`` names it continues this line's conversation, as for a
  cassette's recorded response id.

No request body of any shape has a top-level ``body``, so the line is never read as one; a
line with ``body`` and any other key is refused (ambiguous), naming ``file:line``."""


def envelope_key(line: bytes) -> str | None:
    """The ``conversation`` of a JSONL line that is an envelope, else ``None``, without the rest.

    The key :func:`read_path` gives the line's input (:attr:`AuditInput.conversation_key`) for
    every line it reads without error, found by one parse (orjson where it reads the line,
    else :func:`llmcore.jsonbytes.loads`); ``llmcore audit --jobs`` partitions a keyed log by
    it. Never raises: a line :func:`read_path` refuses gets ``None`` (its error comes from the
    worker that reads it).
    """
    if b'"body"' not in line:
        return None
    try:
        value = _fast_loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or "body" not in value:
        return None
    key = value.get("conversation")
    return key if isinstance(key, str) else None


def _fast_loads(line: bytes) -> Any:
    if _orjson is not None:
        try:
            return _orjson.loads(line)
        except _orjson.JSONDecodeError:
            pass  # a lone surrogate, a huge integer: the strict reader decides
    return jsonbytes.loads(line)


def _jsonl_line(line: bytes, file: str, number: int) -> AuditInput:
    """One JSONL line: a request body as written, or an envelope (:data:`ENVELOPE_KEYS`).

    Raises:
        AuditInputError: A line with ``body`` and a key that is not an envelope field, or an
            envelope field of the wrong type (names ``file:line``).
    """
    plain = AuditInput(body=line, source=f"{file}:{number}", file=file, position=number)
    if b'"body"' not in line:
        return plain
    try:
        value = jsonbytes.loads(line)
    except (ValueError, RecursionError):
        return plain  # the auditor names the bad JSON
    if not isinstance(value, dict) or "body" not in value:
        return plain
    where = f"{file}:{number}"
    other = [k for k in value if k not in ENVELOPE_KEYS]
    if other:
        raise AuditInputError(
            f"ambiguous line: 'body' beside {', '.join(repr(k) for k in other[:3])}: an "
            f"envelope holds only {', '.join(sorted(ENVELOPE_KEYS))}, and no request body has "
            "a top-level 'body'",
            location=where,
        )
    return _envelope(plain, value, where)


def _envelope(plain: AuditInput, value: dict[str, Any], where: str) -> AuditInput:
    """Read an envelope's fields (:data:`ENVELOPE_KEYS`) into the input."""
    body, key = value["body"], value.get("conversation")
    if key is not None and not isinstance(key, str):
        raise AuditInputError(
            f"envelope 'conversation' is {_kind(key)}, not a string", location=where
        )
    if isinstance(body, str):
        data = _utf8(body, f"{where}: body")
    elif isinstance(body, dict):
        try:
            data = jsonbytes.dumps(body)
        except EncodingError as exc:
            raise AuditInputError(f"cannot write 'body': {exc.message}", location=where) from None
    else:
        raise AuditInputError(
            f"envelope 'body' is {_kind(body)}, not a string or object", location=where
        )
    status = value.get("status", 0)
    if status is not None and (not isinstance(status, int) or isinstance(status, bool)):
        raise AuditInputError(
            f"envelope 'status' is {_kind(status)}, not an integer or null", location=where
        )
    usage = None
    if value.get("usage") is not None:  # null: the answer carried none
        usage = usage_of(value["usage"])
        if usage is None:
            raise AuditInputError(
                "envelope 'usage' is not a usage object of a known provider shape",
                location=where,
            )
    path, provider = value.get("path"), value.get("provider")
    if path is not None and not isinstance(path, str):
        raise AuditInputError(f"envelope 'path' is {_kind(path)}, not a string", location=where)
    provider = provider if isinstance(provider, str) else None
    response_id = value.get("response_id")
    if response_id is not None and not isinstance(response_id, str):
        raise AuditInputError(
            f"envelope 'response_id' is {_kind(response_id)}, not a string", location=where
        )
    return replace(
        plain,
        body=data,
        conversation_key=key,
        status=status or None,
        answered="status" not in value or status is not None,
        usage=usage,
        timestamp=_timestamp(value.get("time"), f"{where}: time"),
        uri=record_uri(provider, path) if path else None,
        response_id=response_id,
    )


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


def _yaml_error(path: Path, exc: yaml.YAMLError) -> AuditInputError:
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    problem = getattr(exc, "problem", None) or "malformed"
    return AuditInputError(f"not a valid YAML cassette: {problem}", location=where)


def _refuse_aliases(path: Path, data: bytes) -> None:
    """Refuse YAML aliases (``*name``), naming the line of the first one.

    vcrpy and pytest-recording never write them, and one alias can expand into billions of
    nodes ("billion laughs") or refer to itself (``&p {x: *p}``).
    """
    if b"&" not in data or b"*" not in data:  # an alias needs an anchor
        return
    for event in yaml.parse(data, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            raise AuditInputError(
                f"YAML aliases are not allowed in a cassette (*{event.anchor})",
                location=f"{path}:{mark.line + 1}" if (mark := event.start_mark) else str(path),
            )


def _interaction_lines(root: yaml.Node | None) -> list[int]:
    """Return the 1-based line where each item of the root's ``interactions`` starts."""
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if key.value == "interactions" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


class _BadValue(yaml.YAMLError):
    """Internal: a scalar YAML could parse but Python cannot hold (raised while constructing)."""

    def __init__(self, mark: yaml.Mark, problem: str) -> None:
        self.mark = mark
        self.problem = problem
        super().__init__(problem)


def _shown(value: Any) -> str:
    """``repr(value)``, cut after 20 characters when longer than 40; a long integer by size.

    An integer over 128 bits is shown as ``an integer of N digits``
    (:func:`~llmcore.jsonbytes.integer_size`): YAML hex, octal and binary integers have no
    length limit, and ``repr()`` refuses one of over 4,300 digits with a ``ValueError``.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return jsonbytes.integer_size(value)
    text = repr(value)
    if len(text) <= 40:
        return text
    return f"{text[:20]}… ({len(text):,} characters)"


def _value_problem(node: yaml.Node, exc: Exception) -> str:
    long = jsonbytes.long_integer(exc)
    if long is not None:
        return long
    tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
    text = _shown(node.value) if isinstance(node, yaml.ScalarNode) else "a node"
    if not isinstance(exc, ValueError | OverflowError):  # PyYAML's own slip, not a reason
        return f"cannot read {text} as {tag}: not a valid {tag} value"
    return f"cannot read {text} as {tag}: {' '.join(str(exc).split())}"


class _CassetteLoader(_Loader):  # type: ignore[misc]  # _Loader is CSafeLoader or SafeLoader
    """The safe loader; a value Python cannot hold is a :class:`_BadValue` at its node.

    PyYAML's constructors call ``int()``, ``datetime()`` and friends on the scalar text and let
    their errors out untyped: an integer of over 4,300 digits, ``2024-13-45`` as a date, an
    offset of ``-99:00``.
    """

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (yaml.YAMLError, RecursionError):
            raise
        except Exception as exc:  # any error of a value constructor; the node says where
            raise _BadValue(node.start_mark, _value_problem(node, exc)) from None


def _member_containing(node: yaml.Node, index: int) -> tuple[str, yaml.Node] | None:
    """The step and child of ``node`` whose text holds character ``index`` (keys excluded)."""
    if isinstance(node, yaml.MappingNode):
        children = [(f".{key.value}", value) for key, value in node.value]
    elif isinstance(node, yaml.SequenceNode):
        children = [(f"[{i}]", item) for i, item in enumerate(node.value)]
    else:
        return None
    found = None
    for step, child in children:
        if child.start_mark.index <= index <= child.end_mark.index:
            found = (step, child)  # the last match: a value ends where the next one starts
    return found


def _value_place(path: Path, root: yaml.Node, mark: yaml.Mark) -> str:
    """Return where a bad value is, as ``file:12: interactions[3].recorded_at``.

    The line is the interaction's, as for every interaction error; outside the interactions it
    is the value's own (``file:LINE: key.path``).
    """
    steps: list[str] = []
    line = mark.line + 1
    node: yaml.Node = root
    while (member := _member_containing(node, mark.index)) is not None:
        step, node = member
        if steps == [".interactions"]:
            line = node.start_mark.line + 1
        steps.append(step)
    where = "".join(steps).removeprefix(".")
    return f"{path}:{line}: {where}" if where else f"{path}:{line}"


def _load_cassette(path: Path, data: bytes) -> tuple[Any, list[int]]:
    """Parse a cassette; return the document and each interaction's line (1-based).

    The YAML that vcrpy writes is read by :func:`llmcore.audit._vcr_yaml.load` (the same
    document, faster); anything else by PyYAML's safe loader.

    Raises:
        AuditInputError: Not valid YAML (names the line), an alias, a value Python cannot hold
            (names the interaction's line and the value's path), or nested too deeply.
    """
    fast = _vcr_yaml.load(data)
    if fast is not None:
        return fast
    try:
        _refuse_aliases(path, data)
        loader = _CassetteLoader(data)
        try:
            root = loader.get_single_node()
            try:
                doc = loader.construct_document(root) if root is not None else None
            except _BadValue as exc:
                where = _value_place(path, root, exc.mark)
                raise AuditInputError(exc.problem, location=where) from None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None
    except RecursionError:
        raise AuditInputError("the YAML is nested too deeply to read", location=str(path)) from None
    return doc, _interaction_lines(root)


def _cassette(path: Path, data: bytes, skipped: list[str], strict: bool = True) -> list[AuditInput]:
    doc, lines = _load_cassette(path, data)
    return _cassette_doc(path, doc, lines, skipped, strict)


def _cassette_doc(
    path: Path, doc: Any, lines: list[int], skipped: list[str], strict: bool
) -> list[AuditInput]:
    """Read a parsed cassette (YAML, or vcrpy's JSON serializer: the same document)."""
    interactions = doc.get("interactions") if isinstance(doc, dict) else None
    if not isinstance(interactions, list):
        if strict:
            raise AuditInputError("a cassette needs an 'interactions' list", location=str(path))
        skipped.append(f"{path}: YAML but not a cassette (no 'interactions' list)")
        return []
    other = _other_cassette(interactions)
    if other is not None:
        skipped.append(f"{path}: {other}")
        return []
    out = []
    for index, interaction in enumerate(interactions):
        where = f"{path}: interactions[{index}]"
        at = f"{path}:{lines[index]}" if index < len(lines) else str(path)
        try:
            got = _interaction(interaction, where)
        except AuditInputError as exc:  # name the interaction's line as well as its index
            raise AuditInputError(
                exc.message, location=(exc.location or where).replace(str(path), at, 1)
            ) from None
        if isinstance(got, str):
            skipped.append(f"{where}: {got}")
        else:  # errors found while auditing the body name the line too
            got = _recorded(got, interaction, str(path), index)
            out.append(replace(got, location=where.replace(str(path), at, 1)))
    return out


def _recorded(inp: AuditInput, interaction: dict[str, Any], file: str, index: int) -> AuditInput:
    """Add the cassette's scope and the recorded response's id, usage and status (never raises).

    ``response: null`` records that no response came (:attr:`AuditInput.answered`); an
    interaction without ``response`` recorded none either way and is judged as usual.

    The response is ``interaction["response"]["body"]`` as vcrpy writes it, or the mapping
    pydantic-ai stores as ``parsed_body`` (see :func:`llmcore.audit.usage.read_response`); a
    missing or unreadable one adds nothing.
    """
    recorded = interaction.get("response")
    response = recorded if isinstance(recorded, dict) else {}
    body = response.get("body")
    got = read_response(response.get("parsed_body") if body is None else body)
    status = response.get("status")
    code = status.get("code") if isinstance(status, dict) else status
    return replace(
        inp,
        file=file,
        position=index,
        scope=file,
        response_id=got.id,
        usage=got.usage,
        status=code if isinstance(code, int) and not isinstance(code, bool) else None,
        answered=not ("response" in interaction and recorded is None),
    )


def _interaction(interaction: Any, where: str) -> AuditInput | str:
    """Return the interaction's input, or why it is skipped."""
    request = interaction.get("request") if isinstance(interaction, dict) else None
    if not isinstance(request, dict):
        raise AuditInputError("an interaction needs a 'request' mapping", location=where)
    method = _text(request, "method", "POST", where).upper()
    recorded_uri = _text(request, "uri", "", where)
    uri = recorded_uri.split("?", 1)[0].rstrip("/")
    protobuf = _protobuf_type(request)
    if protobuf is not None:
        return f"a protobuf body ({protobuf}), not a JSON request ({method} {uri})"
    shape = shape_from_uri(uri) if uri else None
    if method != "POST" or (uri and shape is None):
        return f"not a request to a model endpoint ({method} {uri})"
    body, key_order_recorded = _request_body(request, where)
    if body is None:
        return "no request body"
    if shape == BEDROCK_INVOKE and b'"anthropic_version"' not in body:
        return f"a Bedrock InvokeModel body of a model other than Anthropic's ({uri})"
    stamp = interaction.get("recorded_at", request.get("recorded_at"))
    return AuditInput(
        body=body,
        source=where,
        timestamp=_timestamp(stamp, where),
        uri=recorded_uri or None,
        key_order_recorded=key_order_recorded,
    )


def _other_cassette(interactions: list[Any]) -> str | None:
    """Why a cassette with no HTTP request at all is of another kind, or ``None``.

    A websocket cassette records ``{kind: message|close, direction, data}`` items (pydantic-ai's
    ``tests/realtime`` format); a protobuf cassette holds binary payloads (``!!binary``) in
    items such as ``{request_sample: {json, raw}}``, ``request_stream`` or
    ``collections_method`` (pydantic-ai's xAI gRPC cassettes). A cassette whose items hold any
    ``request`` mapping is an HTTP cassette, and its bad items stay errors.
    """
    items = [item for item in interactions if isinstance(item, dict)]
    if not items or any(isinstance(item.get("request"), dict) for item in items):
        return None
    if all("direction" in item or item.get("kind") in ("message", "close") for item in items):
        return "a websocket cassette (messages sent and received, no HTTP requests)"
    if any(_holds_bytes(item, 3) for item in items):
        return "a protobuf (gRPC) cassette (binary payloads, no HTTP requests)"
    return None


def _holds_bytes(value: Any, depth: int) -> bool:
    """Whether ``value`` holds a ``bytes`` value (YAML ``!!binary``) within ``depth`` levels."""
    if isinstance(value, bytes):
        return True
    if depth == 0:
        return False
    if isinstance(value, dict):
        return any(_holds_bytes(v, depth - 1) for v in value.values())
    if isinstance(value, list):
        return any(_holds_bytes(v, depth - 1) for v in value)
    return False


def _protobuf_type(request: dict[str, Any]) -> str | None:
    """The request's ``Content-Type`` when it is a protobuf one (gRPC), else ``None``."""
    headers = request.get("headers")
    if not isinstance(headers, dict):
        return None
    for name, value in headers.items():
        if not (isinstance(name, str) and name.lower() == "content-type"):
            continue
        for one in value if isinstance(value, list) else [value]:
            text = one.decode("latin-1") if isinstance(one, bytes) else one
            if isinstance(text, str) and text.lower().startswith(_PROTOBUF_TYPES):
                return text.split(";", 1)[0].strip()
    return None


def _request_body(request: dict[str, Any], where: str) -> tuple[bytes | None, bool]:
    """The body, and whether its key order is the recorded one (``False``: a YAML mapping)."""
    body = request.get("body")
    if isinstance(body, dict) and "string" in body:
        body = body["string"]
    if isinstance(body, dict):  # a custom serializer stored the body parsed
        return _parsed_body(body, f"{where}.request.body"), False
    parsed = body is None and isinstance(request.get("parsed_body"), dict)
    return _body(request, where), not parsed


def _kind(value: Any) -> str:
    """``an integer of 3 digits``, ``a list``, ``a float``…: what a value is, never its text."""
    if isinstance(value, int) and not isinstance(value, bool):
        return jsonbytes.integer_size(value)
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _text(request: dict[str, Any], key: str, default: str, where: str) -> str:
    """Return ``request[key]`` (``default`` when absent or null).

    Raises:
        AuditInputError: The value is not text (a number, a list…); a huge YAML integer is
            named by its size, never converted to text.
    """
    value = request.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise AuditInputError(
            f"request {key} is {_shown(value)}, not a string", location=f"{where}.request.{key}"
        )
    return value


def _body(request: dict[str, Any], where: str) -> bytes | None:
    body = request.get("body")
    if isinstance(body, dict) and "string" in body:
        body = body["string"]
    if body is None and isinstance(request.get("parsed_body"), dict):
        return _parsed_body(request["parsed_body"], f"{where}.request.parsed_body")
    if body is None or body in ("", b""):
        return None
    if isinstance(body, str):
        return _utf8(body, f"{where}.request.body")
    if isinstance(body, bytes):
        return body
    raise AuditInputError(
        f"request body is {_kind(body)}, not the string that was sent",
        location=f"{where}.request.body",
    )


def _parsed_body(value: dict[str, Any], where: str) -> bytes:
    """Write pydantic-ai's ``parsed_body`` as JSON; YAML-only values are refused by name."""
    try:
        return jsonbytes.dumps(value)
    except EncodingError as exc:  # a date, .inf, an integer key, !!binary, !!set, …
        raise AuditInputError(f"parsed_body is not JSON: {exc.message}", location=where) from None


def _utf8(text: str, where: str) -> bytes:
    r"""Encode a recorded body; a lone surrogate (from a ``\ud800`` escape) is refused."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise AuditInputError(
            f"lone surrogate \\u{ord(text[exc.start]):04x} at character {exc.start} is not "
            "valid Unicode, so the body cannot have been sent as UTF-8",
            location=where,
        ) from None


_EARLIEST: Final = datetime.min.replace(tzinfo=UTC).timestamp()
_LATEST: Final = datetime.max.replace(tzinfo=UTC, microsecond=0).timestamp()
"""Whole seconds: the float of ``datetime.max`` itself rounds up to the next second."""


def _timestamp(value: Any, where: str) -> float | None:
    """``recorded_at`` as seconds since the epoch: a number, ISO 8601 text or a YAML timestamp.

    Raises:
        AuditInputError: Not a time, or a number that is not finite or outside the years 1 to
            9999 (a time Python's ``datetime`` cannot hold; too large for a float included).
    """
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        # Compared before any float(): a 400-digit integer would overflow it; NaN fails both.
        if _EARLIEST <= value <= _LATEST:
            return float(value)
        raise AuditInputError(
            f"recorded_at {_shown(value)} is not a time in the years 1 to 9999 "
            "(seconds since 1970)",
            location=where,
        )
    when = value
    if isinstance(value, str):
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise AuditInputError(
                f"recorded_at {_shown(value)} is not an ISO 8601 time", location=where
            ) from None
    if not isinstance(when, datetime):
        raise AuditInputError(f"recorded_at {_shown(value)} is not a time", location=where)
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()
