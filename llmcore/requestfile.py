"""Request files: the neutral request as JSON (SPEC R1).

A request file is one JSON object::

    {"model": str,
     "system": str | [{"type": "text", "text": str}],
     "tools": [{"name": str, "description": str, "inputSchema": {...}, "strict": bool}],
     "messages": [A3 messages; an "image" block carries "data" (base64) and "mimeType"],
     "params": {"maxTokens": int, "temperature": num, "topP": num, "stopSequences": [str],
                "toolChoice": "auto" | "none" | "any" | {"name": str},
                "cacheTtl": "5m" | "1h", "cacheMode": "breakpoints" | "automatic" | "off",
                "stream": bool, "extra": {provider-specific top-level fields, in order}}}

Only ``model`` is required; a parameter is either given with its type or left out (``null`` is
refused). The file must be a regular file of UTF-8 JSON (no byte order mark) nesting at most
:data:`~llmcore.jsonbytes.MAX_DEPTH` (256) levels; numbers must be finite, and no object may
repeat a key (``json.loads`` would silently keep the last value). Every error names the file and
the JSON path. :func:`dump_request` writes the same form (``llmcore import``), keys in the order
above, indented by two spaces.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from llmcore import blocks, jsonbytes
from llmcore.errors import InvalidRequestError, LLMCoreError, RequestFileError
from llmcore.request import Params, Request, Tool, ToolChoice, ToolChoiceName

__all__ = [
    "dump_request",
    "load_request_file",
    "parse_json_bytes",
    "parse_request",
    "parse_request_value",
    "read_json_file",
    "read_regular_bytes",
    "request_json",
]

_TOP: Final = frozenset({"model", "system", "tools", "messages", "params"})
_PARAMS: Final = frozenset(
    {
        "maxTokens",
        "temperature",
        "topP",
        "stopSequences",
        "toolChoice",
        "cacheTtl",
        "cacheMode",
        "stream",
        "extra",
    }
)


def read_json_file(path: Path | str) -> Any:
    """Read and parse the JSON file at ``path``.

    The file must be a regular file (a FIFO or a directory is refused before it is opened, so
    nothing blocks), hold strict UTF-8 JSON with finite numbers and no repeated key in an
    object, and nest at most :data:`~llmcore.jsonbytes.MAX_DEPTH` levels.

    Raises:
        RequestFileError: The file is missing, not a regular file or unreadable, is not valid
            JSON, repeats a key (location ``<file>: $.messages[0].role``, message
            ``duplicate key "role"``), or nests too deeply; the location is the file name (and
            the JSON path).
    """
    if not isinstance(path, str | Path):
        raise RequestFileError(f"expected a path, not {type(path).__name__}")
    path = Path(path)
    return parse_json_bytes(_read_regular(path), str(path))


def read_regular_bytes(path: Path | str) -> bytes:
    """Return the bytes of the regular file at ``path`` (what :func:`read_json_file` parses).

    Raises:
        RequestFileError: The file is missing, not a regular file (refused before it is
            opened, so a FIFO never blocks) or unreadable; the location is the file name.
    """
    return _read_regular(Path(path))


def parse_json_bytes(raw: bytes, name: str) -> Any:
    """Parse ``raw`` with the checks of :func:`read_json_file`, naming it ``name`` in errors.

    Args:
        raw: The whole file's bytes (standard input's, for ``-`` on the command line).
        name: The location errors start with (a file name, or ``<stdin>``).

    Raises:
        RequestFileError: As :func:`read_json_file`, but never for reading.
    """
    try:
        value = jsonbytes.loads(raw, finite=True, unique_keys=True)
    except jsonbytes.DuplicateKeyError as exc:
        raise RequestFileError(exc.reason, location=f"{name}: {exc.key_path}") from None
    except ValueError as exc:
        raise RequestFileError(f"not valid JSON ({exc})", location=name) from None
    except RecursionError:
        raise RequestFileError(
            f"nests more than {jsonbytes.MAX_DEPTH} levels deep", location=name
        ) from None
    where = jsonbytes.too_deep(value)
    if where is not None:
        raise RequestFileError(
            f"nests more than {jsonbytes.MAX_DEPTH} levels deep", location=f"{name}: {where}"
        )
    return value


def _read_regular(path: Path) -> bytes:
    """The bytes of request file ``path`` (:func:`llmcore.safeio.read_regular`, symlinks followed).

    A FIFO, device, socket or folder is refused without being read, and a file over
    :data:`~llmcore.safeio.MAX_FILE` (64 MiB) before any byte is read.
    """
    from llmcore.safeio import MAX_FILE, read_regular

    try:
        return read_regular(path, limit=MAX_FILE, follow_symlinks=True)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise RequestFileError(f"cannot read the file ({reason})", location=str(path)) from None
    except ValueError as exc:  # a NUL byte in the path
        raise RequestFileError(f"cannot read the file ({exc})", location=repr(str(path))) from None


def load_request_file(path: Path | str) -> Request:
    """Read and parse the request file at ``path``.

    Raises:
        RequestFileError: The file is missing, unreadable, not JSON, or not a valid request;
            the location starts with the file name.
    """
    return parse_request_value(read_json_file(path), str(path))


def parse_request_value(value: Any, name: str) -> Request:
    """Return the request a parsed request file holds, naming it ``name`` in errors.

    Raises:
        RequestFileError: The value is not a valid request; the location starts with ``name``.
    """
    try:
        return parse_request(value)
    except LLMCoreError as exc:
        where = f"{name}: {exc.location}" if exc.location else name
        raise RequestFileError(exc.message, location=where) from exc


def _fail(message: str, at: str) -> RequestFileError:
    return RequestFileError(message, location=at)


def parse_request(value: Any, at: str = "$") -> Request:
    """Return the :class:`Request` a parsed request-file value describes.

    Raises:
        RequestFileError: naming the JSON path of the first problem.
    """
    if not isinstance(value, dict):
        raise _fail("a request file must be a JSON object", at)
    unknown = sorted(set(value) - _TOP)
    if unknown:
        raise _fail(f"unknown key {unknown[0]!r}", f"{at}.{unknown[0]}")
    model = value.get("model")
    if not isinstance(model, str) or not model:
        raise _fail("needs a non-empty string", f"{at}.model")
    messages = value.get("messages", [])
    if not isinstance(messages, list):
        raise _fail("expected an array of messages", f"{at}.messages")
    system = _system(value.get("system"), f"{at}.system")
    tools = _tools(value.get("tools", []), f"{at}.tools")
    decoded = tuple(blocks.decode_message(m, f"{at}.messages[{i}]") for i, m in enumerate(messages))
    params = _params(value.get("params", {}), f"{at}.params")
    try:
        return Request(model=model, system=system, tools=tools, messages=decoded, params=params)
    except InvalidRequestError as exc:
        raise _fail(exc.message, f"{at}.{exc.location}" if exc.location else at) from None


def _system(value: Any, at: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise _fail("expected a string or an array of text blocks", at)
    out = []
    for index, block in enumerate(value):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise _fail("expected a text block", f"{at}[{index}]")
        text = block.get("text")
        if not isinstance(text, str):
            raise _fail("expected a string", f"{at}[{index}].text")
        out.append(text)
    return tuple(out)


_TOOL_KEYS = {"input_schema": "inputSchema"}
"""The request file's key for each :class:`Tool` argument whose name differs."""


def _tools(value: Any, at: str) -> tuple[Tool, ...]:
    if not isinstance(value, list):
        raise _fail("expected an array of tools", at)
    tools = []
    for index, tool in enumerate(value):
        where = f"{at}[{index}]"
        if not isinstance(tool, dict):
            raise _fail("a tool must be an object", where)
        unknown = sorted(set(tool) - {"name", "description", "inputSchema", "strict"})
        if unknown:
            raise _fail(f"unknown key {unknown[0]!r}", f"{where}.{unknown[0]}")
        name, description = tool.get("name"), tool.get("description", "")
        schema = tool.get("inputSchema", {"type": "object"})
        if not isinstance(name, str) or not name:
            raise _fail("needs a non-empty string", f"{where}.name")
        if not isinstance(description, str):
            raise _fail("expected a string", f"{where}.description")
        if not isinstance(schema, dict):
            raise _fail("expected a JSON Schema object", f"{where}.inputSchema")
        strict = tool.get("strict")
        if strict is not None and not isinstance(strict, bool):
            raise _fail("expected true or false", f"{where}.strict")
        try:
            tools.append(Tool.from_schema(name, description, schema, strict=strict))
        except LLMCoreError as exc:
            place = _TOOL_KEYS.get(exc.location or "input_schema", exc.location)
            raise _fail(exc.message, f"{where}.{place}") from None
    return tuple(tools)


def _tool_choice(value: Any, at: str) -> ToolChoice | None:
    if value is None or value in ("auto", "none", "any"):
        return value  # type: ignore[no-any-return]
    if isinstance(value, dict) and set(value) == {"name"} and isinstance(value["name"], str):
        return ToolChoiceName(name=value["name"])
    raise _fail(f'toolChoice must be "auto", "none", "any" or {{"name": str}}, not {value!r}', at)


def _check_types(params: dict[str, Any], at: str) -> None:
    checks: dict[str, tuple[type | tuple[type, ...], str]] = {
        "maxTokens": (int, "an integer"),
        "temperature": ((int, float), "a number"),
        "topP": ((int, float), "a number"),
        "stopSequences": (list, "an array of strings"),
        "cacheTtl": (str, '"5m" or "1h"'),
        "cacheMode": (str, '"breakpoints", "automatic" or "off"'),
        "stream": (bool, "true or false"),
        "extra": (dict, "an object"),
    }
    for key, (kind, words) in checks.items():
        if key not in params:
            continue
        value = params[key]
        wrong_bool = isinstance(value, bool) and kind is not bool
        if value is None or wrong_bool or not isinstance(value, kind):
            found = "null (leave the key out instead)" if value is None else repr(value)
            raise _fail(f"{key} must be {words}, not {found}", f"{at}.{key}")
    if "toolChoice" in params and params["toolChoice"] is None:
        raise _fail("toolChoice must not be null (leave the key out instead)", f"{at}.toolChoice")
    stops = params.get("stopSequences")
    if stops is not None and not (
        isinstance(stops, list) and all(isinstance(s, str) for s in stops)
    ):
        raise _fail("expected an array of strings", f"{at}.stopSequences")


def _params(value: Any, at: str) -> Params:
    if not isinstance(value, dict):
        raise _fail("expected an object", at)
    unknown = sorted(set(value) - _PARAMS)
    if unknown:
        raise _fail(f"unknown parameter {unknown[0]!r}", f"{at}.{unknown[0]}")
    _check_types(value, at)
    stops = value.get("stopSequences")
    extra = value.get("extra", {})
    choice = _tool_choice(value.get("toolChoice"), f"{at}.toolChoice")
    try:
        return Params(
            max_tokens=value.get("maxTokens"),
            temperature=value.get("temperature"),
            top_p=value.get("topP"),
            stop_sequences=None if stops is None else tuple(stops),
            tool_choice=choice,
            cache_ttl=value.get("cacheTtl", "5m"),
            cache_mode=value.get("cacheMode", "breakpoints"),
            stream=value.get("stream", False),
            extra=tuple((k, _extra_text(v, f"{at}.extra.{k}")) for k, v in extra.items()),
        )
    except InvalidRequestError as exc:
        # Params names its field relative to the request (params.maxTokens): re-root it.
        loc = exc.location or "params"
        raise _fail(exc.message, f"{at[: -len('.params')]}.{loc}") from None


def _extra_text(value: Any, at: str) -> str:
    try:
        return jsonbytes.dumps_text(value)
    except LLMCoreError as exc:
        raise _fail(exc.message, at) from None


def _params_json(params: Params) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if params.max_tokens is not None:
        out["maxTokens"] = params.max_tokens
    if params.temperature is not None:
        out["temperature"] = params.temperature
    if params.top_p is not None:
        out["topP"] = params.top_p
    if params.stop_sequences is not None:
        out["stopSequences"] = list(params.stop_sequences)
    choice = params.tool_choice
    if choice is not None:
        out["toolChoice"] = {"name": choice.name} if isinstance(choice, ToolChoiceName) else choice
    if params.cache_ttl != "5m":
        out["cacheTtl"] = params.cache_ttl
    if params.cache_mode != "breakpoints":
        out["cacheMode"] = params.cache_mode
    if params.stream:
        out["stream"] = True
    if params.extra:
        out["extra"] = {key: jsonbytes.Raw(text) for key, text in params.extra}
    return out


def request_json(request: Request) -> dict[str, Any]:
    """Return the request-file form of ``request`` as a dict (keys in the documented order)."""
    out: dict[str, Any] = {"model": request.model}
    if request.system:
        out["system"] = [{"type": "text", "text": s} for s in request.system]
    if request.tools:
        out["tools"] = [_tool_json(t) for t in request.tools]
    out["messages"] = [blocks.encode_message(m) for m in request.messages]
    params = _params_json(request.params)
    if params:
        out["params"] = params
    return out


def _tool_json(tool: Tool) -> dict[str, Any]:
    out: dict[str, Any] = {"name": tool.name, "description": tool.description}
    out["inputSchema"] = jsonbytes.Raw(tool.input_schema)
    if tool.strict is not None:
        out["strict"] = tool.strict
    return out


def dump_request(request: Request) -> bytes:
    """Return ``request`` as request-file bytes (UTF-8 JSON, two-space indent, final newline).

    Parameters at their defaults are left out; ``extra`` values are written as stored.
    """
    return _indent(request_json(request)) + b"\n"


def _indent(value: Any) -> bytes:
    # Raw values are compact; parsing once (order kept) lets the whole file indent uniformly.
    # The file is for people; bodies stay byte-exact elsewhere.
    return jsonbytes.dumps(jsonbytes.loads(jsonbytes.dumps(value)), indent=2)
