"""``llmcore body`` and ``llmcore import``: request files to body bytes and back (SPEC R1, R2).

Errors are one line on stderr, exit 2: a build error's request-relative location
(``messages[1]``, ``params.extra.model``) is reported under the file as ``<file>: $.messages[1]``,
and a failed write to stdout (a full disk, a closed pipe) is reported, not raised. A file named
``-`` is standard input, read whole and checked as a file, named ``<stdin>`` in errors. A
request (or recorded body) without messages is refused for the providers whose API refuses it
(:mod:`llmcore.providers._required`), naming ``$.messages`` (a Gemini body's ``$.contents``).

A ``--provider`` that contradicts the body's shape (the recorded body for ``import``; for
``body``, the bytes built, whose shape ``params.extra`` can change) is one warning line on
stderr naming the file and both shapes; the command still does what was asked
(:func:`llmcore.audit.wire_conflict`).
"""

from __future__ import annotations

import re
import sys
import urllib.parse
from pathlib import Path
from typing import Annotated, Any

import typer

from llmcore import jsonbytes
from llmcore.cli._body_run import STDIN as _STDIN
from llmcore.cli._body_run import is_stdin as _is_stdin
from llmcore.cli._body_run import read_stdin as _read_stdin
from llmcore.cli._body_run import run_body
from llmcore.cli._body_run import warn_shape as _warn_shape
from llmcore.cli._body_run import write_stdout as _write_stdout
from llmcore.cli._common import fail, one_line_errors
from llmcore.errors import EncodingError, RequestFileError
from llmcore.providers import PROVIDER_NAMES, get_provider

__all__ = ["register"]

_IMPORTABLE = ("anthropic", "openai-chat", "openai-responses", "gemini", "bedrock-converse")
_CONVERSE_URI = re.compile(r"/model/([^/?]+)/converse(?:-stream)?(?:\?|$)")
"""A Converse URL's model id (percent-encoded), as a corpus case's ``meta.uri`` holds it."""
_MODEL_IN_URL = ("gemini",)
"""Providers whose recorded bodies name no model (it is in the request's URL)."""

ProviderOption = Annotated[
    str,
    typer.Option(
        "--provider", "-p", metavar="PROVIDER", help=f"One of: {', '.join(PROVIDER_NAMES)}."
    ),
]
ImportProviderOption = Annotated[
    str,
    typer.Option(
        "--provider",
        "-p",
        metavar="PROVIDER",
        help="One of: anthropic, openai-chat, openai-responses, gemini, bedrock-converse.",
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="MODEL",
        help="The model of a gemini or bedrock-converse body (its URL names it; a corpus"
        " case's meta.uri does too).",
    ),
]


@one_line_errors
def body(
    request: Annotated[
        Path,
        typer.Argument(metavar="FILE", help="A request file (docs/guides/bodies.md); - for stdin."),
    ],
    provider: ProviderOption,
) -> None:
    """Write exactly the body bytes PROVIDER would be sent (no trailing newline)."""
    run_body(str(request), provider)


def _recorded_body(path: Path, name: str) -> tuple[Any, bytes | None, str | None]:
    """Return the recorded body, the bytes it was parsed from (``None`` when unknown) and its URI.

    The URI is a corpus case's ``meta.uri`` (where Gemini and Converse bodies keep their
    model), else ``None``. The bytes let import keep each Anthropic ``tool_use`` and
    Converse ``toolUse`` ``input`` exactly (SPEC M2): a plain body's are the file's, a corpus
    case's ``request_raw`` its text's, and a case's ``request`` object the span of that object
    in the file.
    """
    from llmcore.providers._jsonspan import find_span
    from llmcore.requestfile import parse_json_bytes, read_regular_bytes

    data = _read_stdin() if _is_stdin(path) else read_regular_bytes(path)
    value = parse_json_bytes(data, name)
    if isinstance(value, dict) and "request" in value and "model" not in value:
        meta = value.get("meta")
        uri = meta.get("uri") if isinstance(meta, dict) else None
        uri = uri if isinstance(uri, str) else None
        raw = value.get("request_raw")
        if isinstance(raw, str):
            request = _request_raw(raw, f"{name}: $.request_raw")
            return request, raw.encode("utf-8", "replace"), uri
        begin, end = find_span(data, ("request",))
        return value["request"], data[begin:end], uri
    return value, data, None


def _with_model(value: Any, model: str | None, uri: str | None, name: str) -> Any:
    """Return a URL-model body with its ``model`` member: ``--model``, else the case's URI's."""
    if not isinstance(value, dict) or "model" in value:
        return value
    if model is None and uri is not None and "/models/" in uri:
        model = uri.split("/models/", 1)[1].split(":", 1)[0]
    if model is None:
        raise fail(f"{name}: a gemini body names no model (it is in the URL): pass --model")
    return {"model": model, **value}


def _request_raw(raw: str, at: str) -> Any:
    """Parse a corpus case's ``request_raw`` text with the request file's limits."""
    deep = f"nests more than {jsonbytes.MAX_DEPTH} levels deep"
    try:
        value = jsonbytes.loads(raw, finite=True, unique_keys=True)
    except jsonbytes.DuplicateKeyError as exc:
        message = f"{exc.reason} at {exc.key_path} of the request_raw text"
        raise RequestFileError(message, location=at) from None
    except ValueError as exc:
        raise RequestFileError(f"request_raw is not valid JSON ({exc})", location=at) from None
    except RecursionError:
        raise RequestFileError(deep, location=at) from None
    if jsonbytes.too_deep(value) is not None:
        raise RequestFileError(deep, location=at)
    return value


@one_line_errors
def import_(
    recorded: Annotated[
        Path, typer.Argument(metavar="BODY", help="A body or corpus case file; - for stdin.")
    ],
    provider: ImportProviderOption,
    model: ModelOption = None,
) -> None:
    """Turn a recorded PROVIDER body (or corpus case) into a request file on stdout."""
    if provider not in _IMPORTABLE:
        raise fail(f"import supports {', '.join(_IMPORTABLE)}, not {provider!r}")
    name = _STDIN if _is_stdin(recorded) else str(recorded)
    value, raw, uri = _recorded_body(recorded, name)
    if provider == "bedrock-converse" and isinstance(value, dict):
        found = _CONVERSE_URI.search(uri) if uri else None
        chosen = model or (urllib.parse.unquote(found.group(1)) if found else None)
        if chosen:
            value = {**value, "modelId": chosen}
    elif provider in _MODEL_IN_URL:
        value = _with_model(value, model, uri, name)
    elif model is not None:
        raise fail(
            "--model goes with --provider gemini or bedrock-converse (other bodies name theirs)"
        )
    if isinstance(value, dict):
        try:
            _warn_shape(jsonbytes.dumps(value), provider, name, "imported")
        except EncodingError:  # a value the importer refuses by name below
            pass
    result = get_provider(provider).import_body(value, location=f"{name}: $", raw=raw)
    from llmcore.providers._required import HISTORY_KEYS, empty_history

    refused = empty_history(provider, result.request)
    if refused is not None:
        key = HISTORY_KEYS[provider]
        raise RequestFileError(f"no {key}: {refused}", location=f"{name}: $.{key}")
    for note in result.notes:
        print(f"llmcore: note: {note}", file=sys.stderr)
    from llmcore.requestfile import dump_request

    _write_stdout(dump_request(result.request))


def register(app: typer.Typer) -> None:
    """Add ``body`` and ``import`` to ``app``."""
    app.command("body")(body)
    app.command("import")(import_)
