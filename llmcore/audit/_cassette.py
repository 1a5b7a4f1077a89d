"""VCR cassettes for the auditor: YAML (or vcrpy's JSON) interactions to inputs (SPEC V1).

Read through :mod:`llmcore.audit.inputs` (its module text describes the format); HAR files
are read through :func:`_cassette_doc` too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import yaml

from llmcore import jsonbytes
from llmcore.audit import _vcr_yaml
from llmcore.audit._shape import BEDROCK_INVOKE, shape_from_uri
from llmcore.audit._values import _kind, _shown, _timestamp, _utf8
from llmcore.audit.report import AuditInput, AuditInputError
from llmcore.audit.usage import read_response
from llmcore.errors import EncodingError

_PROTOBUF_TYPES: Final = ("application/grpc", "application/x-protobuf", "application/protobuf")

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a core dependency with a fallback
    _orjson = None  # type: ignore[assignment]

_ORJSON_OWN: Final = (
    0
    if _orjson is None
    else _orjson.OPT_PASSTHROUGH_DATACLASS
    | _orjson.OPT_PASSTHROUGH_DATETIME
    | _orjson.OPT_PASSTHROUGH_SUBCLASS
)
"""Values orjson would write its own way (dates, subclasses) raise instead (no ``default``)."""
_FLOAT_TOKEN: Final = re.compile(rb"[:\[,]-?[0-9]+[.eE]")
"""A number with a fraction or an exponent where a value starts: how orjson writes a float."""


try:
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader


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


def _load_cassette(path: Path, data: bytes) -> tuple[Any, list[int], bool]:
    """Parse a cassette: the document, each interaction's line (1-based), whether float-free.

    The YAML that vcrpy writes is read by :func:`llmcore.audit._vcr_yaml.load_flagged` (the
    same document, faster; float-free only where it holds no float); anything else by PyYAML's
    safe loader (never said to be float-free).

    Raises:
        AuditInputError: Not valid YAML (names the line), an alias, a value Python cannot hold
            (names the interaction's line and the value's path), or nested too deeply.
    """
    fast = _vcr_yaml.load_flagged(data, skip_response_headers=True)  # headers: never read
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
    return doc, _interaction_lines(root), False


def _cassette(path: Path, data: bytes, skipped: list[str], strict: bool = True) -> list[AuditInput]:
    doc, lines, float_free = _load_cassette(path, data)
    return _cassette_doc(path, doc, lines, skipped, strict, float_free)


def _cassette_doc(
    path: Path,
    doc: Any,
    lines: list[int],
    skipped: list[str],
    strict: bool,
    float_free: bool = False,
) -> list[AuditInput]:
    """Read a parsed cassette (YAML, or vcrpy's JSON serializer: the same document).

    Not ``strict`` (a file found in a folder), the inputs are :attr:`AuditInput.skippable`.
    ``float_free``: the document is known to hold no float (its parsed bodies are then written
    by :func:`json_bytes_float_free`).
    """
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
            got = _interaction(interaction, where, float_free)
        except AuditInputError as exc:  # name the interaction's line as well as its index
            raise AuditInputError(
                exc.message, location=(exc.location or where).replace(str(path), at, 1)
            ) from None
        if isinstance(got, str):
            skipped.append(f"{where}: {got}")
        else:  # errors found while auditing the body name the line too
            location = where.replace(str(path), at, 1)
            recorded = _recorded(interaction, str(path), index, location)
            out.append(AuditInput(**got, **recorded, skippable=not strict))
    return out


def _recorded(interaction: dict[str, Any], file: str, index: int, location: str) -> dict[str, Any]:
    """The input's fields of the cassette's scope and location and the response's id and usage.

    They are :class:`AuditInput` keywords: also the recorded status and whether a response came.

    Never raises.

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
    return {
        "file": file,
        "position": index,
        "scope": file,
        "response_id": got.id,
        "usage": got.usage,
        "status": code if isinstance(code, int) and not isinstance(code, bool) else None,
        "answered": not ("response" in interaction and recorded is None),
        "location": location,
    }


def _interaction(interaction: Any, where: str, float_free: bool) -> dict[str, Any] | str:
    """Return the request's fields of the interaction's input, or why it is skipped.

    They are :class:`AuditInput` keywords; the input is built once, with :func:`_recorded`'s.
    """
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
    body, key_order_recorded = _request_body(request, where, float_free)
    if body is None:
        return "no request body"
    if shape == BEDROCK_INVOKE and b'"anthropic_version"' not in body:
        return f"a Bedrock InvokeModel body of a model other than Anthropic's ({uri})"
    stamp = interaction.get("recorded_at", request.get("recorded_at"))
    return {
        "body": body,
        "source": where,
        "timestamp": _timestamp(stamp, where),
        "uri": recorded_uri or None,
        "key_order_recorded": key_order_recorded,
    }


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


def _request_body(
    request: dict[str, Any], where: str, float_free: bool
) -> tuple[bytes | None, bool]:
    """The body, and whether its key order is the recorded one (``False``: a YAML mapping)."""
    body = request.get("body")
    if isinstance(body, dict) and "string" in body:
        body = body["string"]
    if isinstance(body, dict):  # a custom serializer stored the body parsed
        return _parsed_body(body, f"{where}.request.body", float_free), False
    parsed = body is None and isinstance(request.get("parsed_body"), dict)
    return _body(request, where, float_free), not parsed


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


def _body(request: dict[str, Any], where: str, float_free: bool) -> bytes | None:
    body = request.get("body")
    if isinstance(body, dict) and "string" in body:
        body = body["string"]
    if body is None and isinstance(request.get("parsed_body"), dict):
        return _parsed_body(request["parsed_body"], f"{where}.request.parsed_body", float_free)
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


def json_bytes(value: Any) -> bytes:
    """The bytes :func:`llmcore.jsonbytes.dumps` writes for ``value``, by orjson where equal.

    orjson escapes strings and writes objects, arrays, integers, booleans and ``null`` as
    :func:`llmcore.jsonbytes.dumps` does (see :func:`llmcore.jsonbytes.dumps_float_free`), and
    raises where it would write another way (an integer beyond 64 bits, a lone surrogate, a
    key that is not a string, bytes, a date, a subclass, deep nesting). Floats are its own:
    ``1e-05`` as ``0.00001``, NaN and infinities as ``null``. So its bytes are kept only when
    they hold no float token (:data:`_FLOAT_TOKEN`) and no ``null`` at all; anything else is
    written by :func:`llmcore.jsonbytes.dumps`, which also raises the errors.

    Raises:
        EncodingError: As :func:`llmcore.jsonbytes.dumps`.
    """
    written = _orjson_bytes(value)
    if written is not None and b"null" not in written and _FLOAT_TOKEN.search(written) is None:
        return written
    return jsonbytes.dumps(value)


def json_bytes_float_free(value: Any) -> bytes:
    """As :func:`json_bytes` for a ``value`` that holds no ``float``: orjson's bytes unchecked.

    Without floats, the bytes orjson writes are :func:`llmcore.jsonbytes.dumps`'s wherever it
    does not raise (see :func:`json_bytes`): its ``null`` is ``None``'s, its numbers integers.

    Raises:
        EncodingError: As :func:`llmcore.jsonbytes.dumps`.
    """
    written = _orjson_bytes(value)
    return jsonbytes.dumps(value) if written is None else written


def _orjson_bytes(value: Any) -> bytes | None:
    """The bytes orjson writes for ``value``; ``None`` where it raises or is not installed."""
    if _orjson is None:
        return None
    try:
        written: bytes = _orjson.dumps(value, option=_ORJSON_OWN)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None
    return written


def _parsed_body(value: dict[str, Any], where: str, float_free: bool) -> bytes:
    """Write pydantic-ai's ``parsed_body`` as JSON; YAML-only values are refused by name.

    ``float_free``: ``value`` is known to hold no float (:func:`json_bytes_float_free`).
    """
    try:
        return json_bytes_float_free(value) if float_free else json_bytes(value)
    except EncodingError as exc:  # a date, .inf, an integer key, !!binary, !!set, …
        raise AuditInputError(f"parsed_body is not JSON: {exc.message}", location=where) from None
