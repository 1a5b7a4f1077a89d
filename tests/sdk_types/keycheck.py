"""A strict recursive key check of request bodies against the official SDK request TypedDicts.

pydantic's ``TypeAdapter`` ignores unknown keys, so this walks the type hints itself
(``typing.get_type_hints(include_extras=True)``): TypedDicts (every key must be declared, every
required key present), ``Required`` / ``NotRequired`` / ``ReadOnly`` / ``Annotated``, unions (the
value must fit one member), ``Literal``, ``Iterable`` / ``Sequence`` / ``List``, ``Dict`` /
``Mapping``, and scalars. The few fields the APIs accept that the types lack are in
:data:`ALLOWED`, each with its source.
"""

from __future__ import annotations

import collections.abc
import functools
import re
import types
import typing
from typing import Any

import typing_extensions
from anthropic.types import message_create_params as anthropic_params
from openai.types.chat import completion_create_params as chat_params
from openai.types.responses import response_create_params as responses_params

_OPENROUTER = "https://openrouter.ai/docs/features/prompt-caching"
_ANTHROPIC_API = "https://platform.claude.com/docs/en/api/messages (not typed by anthropic==2.14.0)"

ALLOWED: dict[str, dict[str, str]] = {
    "anthropic": {
        "$.temperature": _ANTHROPIC_API,
        "$.top_p": _ANTHROPIC_API,
        "$.top_k": _ANTHROPIC_API,
        "$.context_management": "anthropic package types/beta/message_create_params.py "
        "(beta field, passed through params.extra by corpus anthropic/0084, 0085)",
    },
    "openai-chat": {},
    "openai-responses": {},
    "gemini": {
        "$.cachedContent": "https://ai.google.dev/api/generate-content (request body field)",
    },
    "bedrock-converse": {},
    "openrouter": {
        "$.cache_control": _OPENROUTER + " (automatic mode, top level)",
        "$.messages[].content[].cache_control": _OPENROUTER + " (breakpoint on a content part)",
        "$.provider": "https://openrouter.ai/docs/features/provider-routing (routing preferences)",
    },
}
"""Per provider: generic path (array indexes as ``[]``) → the source saying the API takes it."""

_REQUIRED_WRAPPERS = {
    typing.Required,
    typing.NotRequired,
    typing_extensions.Required,
    typing_extensions.NotRequired,
    typing_extensions.ReadOnly,
}
_SEQUENCES = {list, collections.abc.Iterable, collections.abc.Sequence, tuple}
_MAPPINGS = {dict, collections.abc.Mapping}


def body_type(provider: str, body: dict[str, Any]) -> Any:
    """The TypedDict a body must fit (the streaming variant when ``stream`` is true)."""
    streaming = body.get("stream") is True
    if provider == "anthropic":
        return (
            anthropic_params.MessageCreateParamsStreaming
            if streaming
            else anthropic_params.MessageCreateParamsNonStreaming
        )
    if provider in ("openai-chat", "openrouter"):
        return (
            chat_params.CompletionCreateParamsStreaming
            if streaming
            else chat_params.CompletionCreateParamsNonStreaming
        )
    return (
        responses_params.ResponseCreateParamsStreaming
        if streaming
        else responses_params.ResponseCreateParamsNonStreaming
    )


def _check_gemini(body: dict[str, Any]) -> list[str]:
    """Check a ``generateContent`` body against google-genai's pydantic types (extra="forbid")."""
    import pydantic
    from google.genai import types as genai

    fields: dict[str, Any] = {
        "contents": list[genai.Content],
        "systemInstruction": genai.Content,
        "tools": list[genai.Tool],
        "toolConfig": genai.ToolConfig,
        "generationConfig": genai.GenerationConfig,
        "safetySettings": list[genai.SafetySetting],
        "cachedContent": str,
        # Vertex AI request fields google-genai writes from its config (types.GenerateContentConfig
        # labels, model_armor_config); recorded accepted in corpus gemini/0013, 0014, 0044.
        "labels": dict[str, str],
        "modelArmorConfig": dict[str, Any],
    }
    errors = []
    for key, value in body.items():
        if key not in fields:
            errors.append(f"$.{key}: unknown key for GenerateContentRequest")
            continue
        try:
            pydantic.TypeAdapter(fields[key]).validate_python(value, strict=False)
        except pydantic.ValidationError as exc:
            errors.extend(f"$.{key}: {e['loc']} {e['msg']}" for e in exc.errors())
    return errors


def check_body(provider: str, body: dict[str, Any]) -> list[str]:
    """Return every problem found (empty when the body fits the SDK type)."""
    if provider == "gemini":
        return _check_gemini(body)
    errors: list[str] = []
    if provider == "bedrock-converse":
        _check_shape(body, _converse_request(), "$", errors)
        return errors
    _check(body, body_type(provider, body), "$", ALLOWED[provider], errors)
    return errors


@functools.cache
def _converse_request() -> Any:
    """botocore's ``ConverseRequest`` shape (the boto3 SDK's request type), less ``modelId``.

    ``modelId`` is a URI member (``/model/{modelId}/converse``), never in the body.
    """
    import botocore.session

    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    return model.operation_model("Converse").input_shape


_SCALARS: dict[str, tuple[Any, str]] = {
    "integer": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "long": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "float": (lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number"),
    "double": (lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a number"),
    "boolean": (lambda v: isinstance(v, bool), "a boolean"),
    "blob": (lambda v: isinstance(v, str), "a base64 string (a blob on the JSON wire)"),
    "map": (lambda v: isinstance(v, dict), "an object"),
}


def _check_shape(value: Any, shape: Any, path: str, errors: list[str]) -> None:
    kind = shape.type_name
    if getattr(shape, "is_document_type", False):
        return  # a document (toolUse.input, inputSchema.json) holds any JSON value
    if kind == "structure":
        _check_structure(value, shape, path, errors)
    elif kind == "list":
        if not isinstance(value, list):
            errors.append(f"{path}: expected an array for {shape.name}")
            return
        for index, item in enumerate(value):
            _check_shape(item, shape.member, f"{path}[{index}]", errors)
    elif kind == "string":
        if not isinstance(value, str) or (shape.enum and value not in shape.enum):
            errors.append(f"{path}: {value!r} is not a {shape.name} string")
    elif kind in _SCALARS:
        fits, noun = _SCALARS[kind]
        if not fits(value):
            errors.append(f"{path}: {value!r} is not {noun}")


def _check_structure(value: Any, shape: Any, path: str, errors: list[str]) -> None:
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object for {shape.name}")
        return
    members = shape.members
    for key, item in value.items():
        if key not in members or (path == "$" and key == "modelId"):
            errors.append(f"{path}.{key}: not a member of {shape.name}")
        else:
            _check_shape(item, members[key], f"{path}.{key}", errors)
    required = set(shape.required_members) - {"modelId"}
    missing = sorted(required - set(value))
    errors.extend(f"{path}.{key}: required by {shape.name}" for key in missing)
    if shape.metadata.get("union") and len(value) != 1:
        errors.append(f"{path}: a {shape.name} union has exactly one member, not {len(value)}")


_INDEX = re.compile(r"\[[^\]]*\]")


def _generic(path: str) -> str:
    """``$.messages[3].content[0]`` as ``$.messages[].content[]`` (the :data:`ALLOWED` form)."""
    if "[" not in path:
        return path
    return _INDEX.sub("[]", path)


def _unwrap(tp: Any) -> Any:
    while True:
        origin = typing.get_origin(tp)
        if origin in _REQUIRED_WRAPPERS or origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        else:
            return tp


def _check(value: Any, tp: Any, path: str, allowed: dict[str, str], errors: list[str]) -> None:
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if tp is Any or tp is object:
        return
    if origin in (typing.Union, types.UnionType):
        _check_union(value, typing.get_args(tp), path, allowed, errors)
    elif origin in (typing.Literal, typing_extensions.Literal):
        if value not in typing.get_args(tp):
            errors.append(f"{path}: {value!r} is not one of {typing.get_args(tp)}")
    elif typing_extensions.is_typeddict(tp):
        _check_typeddict(value, tp, path, allowed, errors)
    elif origin in _SEQUENCES or origin in _MAPPINGS or tp is dict:
        _check_container(value, tp, path, allowed, errors)
    else:
        _check_scalar(value, tp, path, errors)


def _check_container(
    value: Any, tp: Any, path: str, allowed: dict[str, str], errors: list[str]
) -> None:
    if typing.get_origin(tp) not in _SEQUENCES:
        if not isinstance(value, dict):
            errors.append(f"{path}: expected an object, found {type(value).__name__}")
        return
    if not isinstance(value, list):
        errors.append(f"{path}: expected an array, found {type(value).__name__}")
        return
    (item,) = typing.get_args(tp)[:1] or (Any,)
    for index, element in enumerate(value):
        _check(element, item, f"{path}[{index}]", allowed, errors)


def _check_scalar(value: Any, tp: Any, path: str, errors: list[str]) -> None:
    if tp is type(None):
        ok = value is None
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(tp, type):
        ok = isinstance(value, tp)
    else:
        errors.append(f"{path}: the checker does not know type {tp!r}")
        return
    if not ok:
        errors.append(f"{path}: {type(value).__name__} is not {getattr(tp, '__name__', tp)}")


def _check_union(
    value: Any, members: tuple[Any, ...], path: str, allowed: dict[str, str], errors: list[str]
) -> None:
    best: list[str] | None = None
    for member in members:
        attempt: list[str] = []
        _check(value, member, path, allowed, attempt)
        if not attempt:
            return
        if best is None or _rank(attempt, path) < _rank(best, path):
            best = attempt
    errors.extend(best or [f"{path}: fits no member of the union"])


def _rank(errors: list[str], path: str) -> tuple[bool, int]:
    # A member the value does not even resemble (the error is at the value itself) ranks last.
    return any(e.startswith(f"{path}:") for e in errors), len(errors)


def _check_typeddict(
    value: Any, tp: Any, path: str, allowed: dict[str, str], errors: list[str]
) -> None:
    if not isinstance(value, dict):
        errors.append(f"{path}: expected an object ({tp.__name__}), found {type(value).__name__}")
        return
    hints = _hints(tp)
    for key, item in value.items():
        where = f"{path}.{key}"
        if key in hints:
            _check(item, hints[key], where, allowed, errors)
        elif _generic(where) not in allowed:
            errors.append(f"{where}: unknown key for {tp.__name__}")
    for key in getattr(tp, "__required_keys__", ()):
        if key not in value:
            errors.append(f"{path}: missing required key {key!r} of {tp.__name__}")


@functools.cache
def _hints(tp: Any) -> dict[str, Any]:
    """A TypedDict's resolved type hints, computed once per type (resolving them dominates)."""
    return typing.get_type_hints(tp, include_extras=True)
