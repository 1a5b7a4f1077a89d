"""Gemini ``generateContent``: the request body encoder (SPEC P1, P2, P8).

Key order (pinned by golden files in ``tests/providers/golden/gemini/``; never changes once
released):

=====================  ================================================================
object                 keys, in order (absent keys are skipped, never sent as ``null``)
=====================  ================================================================
body                   ``contents, systemInstruction, tools, toolConfig,
                       generationConfig``, then ``params.extra`` in its own order
                       (``cachedContent`` among them)
content                ``role, parts``
systemInstruction      ``parts``
text part              ``text``
image part             ``inlineData``; inlineData ``mimeType, data``
function call part     ``functionCall``; functionCall ``id, name, args``
function response      ``functionResponse``; functionResponse ``id, name, response``
tools                  one object ``functionDeclarations``; each ``name, description,
                       parametersJsonSchema``
toolConfig             ``functionCallingConfig``; ``mode, allowedFunctionNames``
generationConfig       ``temperature, topP, maxOutputTokens, stopSequences``
=====================  ================================================================

Encoding rules:

* Roles: ``user`` → ``user``, ``assistant`` → ``model``, ``tool`` → ``user`` holding one
  ``functionResponse`` part per result (https://ai.google.dev/gemini-api/docs/function-calling).
  Every message is one ``contents`` item, so a new message never changes an earlier one (P4).
  Empty text parts are never sent, except one ``{"text": ""}`` for a message with nothing else
  (the API refuses a content without parts; recorded clients send that empty text part).
* The system prompt is ``systemInstruction`` with one text part per non-empty block.
* Tool-call arguments (P2) are the ``args`` object, spliced from the stored bytes
  (:func:`~llmcore.providers.base.arguments_json`, the rule every provider shares).
* Tool-call ids: ``functionCall.id`` and ``functionResponse.id`` are optional on this wire
  (https://ai.google.dev/api/caching#FunctionCall: "If populated, the client to execute the
  function_call and return the response with the matching id"). A stored id is sent in both; an
  id the parser made up for a call the model sent without one (:func:`synthetic_id`, the
  ``gemini-call-`` prefix) is not sent, and the API pairs the response with its call by name and
  order, as it documents for id-less calls. The history keeps every id as stored.
* A ``functionResponse`` names its function: the result's ``tool_name``, else the name of the
  call it answers in the history. ``response`` is the result's bytes when they are a JSON
  object and the result is no error (spliced verbatim, like arguments); otherwise
  ``{"output": <text>}``, or ``{"error": <text>}`` for an error result — the keys the API
  documents ("Use "output" key to specify function output and "error" key to specify error
  details"). An object whose only member is a string ``output`` or ``error`` is wrapped too,
  so import reads every result back as it was. Bytes that are not UTF-8 are decoded with U+FFFD
  replacements.
* Images are ``inlineData`` parts (base64), no ``fileData``.
* ``params``: ``maxTokens`` → ``maxOutputTokens``, ``temperature``, ``topP``,
  ``stopSequences`` in ``generationConfig`` (written only when one is set); ``toolChoice``
  ``auto``/``any``/``none`` → ``functionCallingConfig.mode`` ``AUTO``/``ANY``/``NONE``, a name →
  ``ANY`` with ``allowedFunctionNames``. ``stream`` is not a body field: it picks
  ``:streamGenerateContent?alt=sse`` (:mod:`.parse`). A tool's ``strict`` has no form here and
  is not sent.
* Caching (PROVIDER-RULES §4): Gemini caches implicitly, so ``cacheMode`` and ``cacheTtl`` send
  nothing. Explicit caching names a cache in ``params.extra`` (``cachedContent``, a
  ``cachedContents/…`` name made by :func:`llmcore.providers.gemini.cached_content_body`); a
  request that uses one sends no ``systemInstruction``, ``tools`` or ``toolConfig`` (the cache
  holds them; the API refuses them beside a cache) and its whole history in ``contents``; a
  request that holds any of them is warned so (:class:`~llmcore.errors.FieldsNotSentWarning`),
  once per encode cache (conversation).
* ``carry`` (M4): the raw parts of the running turn's model responses that held thought
  signatures or thoughts (:mod:`.parse`), sent in place of that message's own parts, unchanged,
  until the turn ends.

Writer: the C writer of ``_speedups`` (``gemini_pieces``) where it applies, else Python
(:func:`~llmcore.providers.history.history_array`), the same bytes either way (property tests in
``tests/providers/test_speedups.py``). A message with carried parts, a call or result whose id
is a made-up one, a result without ``tool_name`` (its name is looked up in the history) or whose
bytes may be a JSON object (the :func:`function_response` rule) is written by Python.

Source: https://ai.google.dev/api/generate-content, https://ai.google.dev/api/caching and
https://ai.google.dev/gemini-api/docs/caching.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable, Hashable
from typing import Any, Final, assert_never

from llmcore import jsonbytes
from llmcore.errors import FieldsNotSentWarning, InvalidRequestError
from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.providers import _import_common as imp
from llmcore.providers.base import (
    Carry,
    EncodeCache,
    NativePieces,
    arguments_json,
    base64_text,
    check_request,
    history_array,
    result_text,
    sampling_members,
)
from llmcore.request import Request, ToolChoiceName

SYNTHETIC_PREFIX: Final = "gemini-call-"
"""The prefix of the ids the parser gives calls the model sent without ``id``."""

_SYNTHETIC: Final = re.compile(re.escape(SYNTHETIC_PREFIX) + r"[0-9]+")
_MODES: Final = {"auto": "AUTO", "any": "ANY", "none": "NONE"}
_MODELED: Final = frozenset(
    {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
)
CACHE_HELD: Final = ("systemInstruction", "tools", "toolConfig")
"""The fields a request that names a ``cachedContent`` must not send (PROVIDER-RULES §4)."""


def synthetic_id(position: int) -> str:
    """Return the id given to the ``position``-th call of a response that sent no ``id``."""
    return f"{SYNTHETIC_PREFIX}{position}"


def wire_id(call_id: str) -> str | None:
    """Return the ``id`` sent for a stored tool-call id, or ``None`` for a made-up one."""
    return None if _SYNTHETIC.fullmatch(call_id) else call_id


def tool_args(arguments: bytes) -> jsonbytes.Raw:
    """Return the ``args`` value for stored argument bytes (:func:`base.arguments_json`)."""
    return jsonbytes.Raw(arguments_json(arguments))


def function_response(result: ToolResult, name: str) -> dict[str, Any]:
    """Return a ``functionResponse`` part's inner object (rules in the module doc)."""
    out: dict[str, Any] = {}
    call_id = wire_id(result.call_id)
    if call_id is not None:
        out["id"] = call_id
    out["name"] = name
    if not result.is_error and _own_object(result.content):
        out["response"] = jsonbytes.Raw(result.content.decode("utf-8"))
    else:
        out["response"] = {"error" if result.is_error else "output": result_text(result)}
    return out


def _own_object(content: bytes) -> bool:
    """Whether result bytes go out as the ``response`` object itself (module doc).

    A JSON object, except one whose only member is a string ``output`` or ``error``: read back,
    that would be the wrapped form of another result, so it is wrapped too.
    """
    head = content[:64].lstrip(b" \t\r\n") or content.lstrip(b" \t\r\n")
    if not head.startswith(b"{") or not jsonbytes.is_json_object(content):
        return False  # the first test is cheap (no copy of the result): most are plain text
    if b'"output"' not in content and b'"error"' not in content:
        return True
    value = jsonbytes.loads(content)
    keys = set(value)
    return not (keys in ({"output"}, {"error"}) and isinstance(next(iter(value.values())), str))


NameOf = Callable[[int, str], str]
"""Returns the name of the call ``call_id`` answered by message ``index`` (history lookup)."""


def _part(part: MessageContent, index: int, name_of: NameOf) -> dict[str, Any] | None:
    match part:
        case Text(text=text):
            return {"text": text} if text else None
        case Image(mime_type=mime):
            return {"inlineData": {"mimeType": mime, "data": base64_text(part)}}
        case ToolCall(id=call_id, name=name, arguments=arguments):
            call: dict[str, Any] = {}
            sent = wire_id(call_id)
            if sent is not None:
                call["id"] = sent
            call["name"] = name
            call["args"] = tool_args(arguments)
            return {"functionCall": call}
        case ToolResult():
            name = part.tool_name or name_of(index, part.call_id)
            return {"functionResponse": function_response(part, name)}
        case _:
            assert_never(part)


def content_values(
    index: int, message: Message, option: Hashable, name_of: NameOf
) -> list[dict[str, Any]]:
    """Return the one ``contents`` item of message ``index`` (carried parts replace its own)."""
    role = "model" if message.role == "assistant" else "user"
    if isinstance(option, tuple) and option:
        parts: list[Any] = [jsonbytes.Raw(text) for text in option]
    else:
        parts = [p for part in message.content if (p := _part(part, index, name_of)) is not None]
    return [{"role": role, "parts": parts or [{"text": ""}]}]


_NATIVE: Final = NativePieces(
    "gemini_pieces",
    (Text, Image, ToolCall, ToolResult, wire_id, arguments_json, sys.maxsize, False, None),
)
""":func:`content_values` written in C (:class:`~llmcore.providers.history.NativePieces`); a
message with carried parts, a made-up id, a result without ``tool_name`` or whose bytes may be
a JSON object is written by :func:`content_values`."""


def history_names(messages: tuple[Message, ...]) -> NameOf:
    """Return a lookup of call names in the assistant message a result's message answers.

    That is the nearest assistant message before it (only tool messages stand between,
    :func:`~llmcore.providers.base.validate_pairing`), so a lookup reads a few messages.
    """

    def name_of(index: int, call_id: str) -> str:
        for earlier in range(index - 1, -1, -1):
            message = messages[earlier]
            if message.role == "tool":
                continue
            for part in message.content:
                if isinstance(part, ToolCall) and part.id == call_id:
                    return part.name
            break
        return ""

    return name_of


def _tool_config(choice: object) -> dict[str, Any]:
    if isinstance(choice, ToolChoiceName):
        config: dict[str, Any] = {"mode": "ANY", "allowedFunctionNames": [choice.name]}
    elif isinstance(choice, str) and choice in _MODES:
        config = {"mode": _MODES[choice]}
    else:
        raise InvalidRequestError(f"unknown tool choice {choice!r}", location="params.toolChoice")
    return {"functionCallingConfig": config}


def _tools(request: Request) -> list[dict[str, Any]]:
    declarations: list[dict[str, Any]] = []
    for tool in request.tools:
        entry: dict[str, Any] = {"name": tool.name}
        if tool.description:
            entry["description"] = tool.description
        entry["parametersJsonSchema"] = jsonbytes.Raw(tool.input_schema)
        declarations.append(entry)
    return [{"functionDeclarations": declarations}] if declarations else []


_GENERATION: Final = (
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("max_tokens", "maxOutputTokens"),
    ("stop_sequences", "stopSequences"),
)
"""``generationConfig`` members in the order this writer sends them (Params attribute, key)."""


def _generation_config(request: Request) -> dict[str, Any]:
    return sampling_members(request, _GENERATION)


def cache_held(request: Request) -> dict[str, Any]:
    """Return ``systemInstruction``, ``tools`` and ``toolConfig`` as sent (the ones present).

    A request body holds them unless it names a cache; a ``cachedContents`` body holds them.
    """
    out: dict[str, Any] = {}
    system = [{"text": text} for text in request.system if text]
    if system:
        out["systemInstruction"] = {"parts": system}
    tools = _tools(request)
    if tools:
        out["tools"] = tools
    if request.params.tool_choice is not None:
        out["toolConfig"] = _tool_config(request.params.tool_choice)
    return out


def uses_cache(request: Request) -> bool:
    """Whether the request names an explicit cache (``params.extra`` ``cachedContent``)."""
    return any(key == "cachedContent" for key, _ in request.params.extra)


def _warn_not_sent(request: Request, cache: EncodeCache | None) -> None:
    """Warn that a request naming a cache leaves out its own system, tools and tool choice.

    Once per conversation (``cache``), or on every build without one; nothing when the request
    holds none of them (:class:`~llmcore.errors.FieldsNotSentWarning`).
    """
    held = cache_held(request)
    if not held or (cache is not None and not cache.first_time("gemini.cachedContent")):
        return
    fields = {"systemInstruction": "system prompt", "tools": "tools", "toolConfig": "tool choice"}
    said = [f"{fields[key]} ({key})" for key in held]
    names = "its " + (f"{', '.join(said[:-1])} and {said[-1]}" if len(said) > 1 else said[0])
    warnings.warn(
        f"params.extra.cachedContent: the request names a cache, so the body leaves out {names}"
        " (the cache holds them; Gemini refuses them beside a cachedContent)",
        FieldsNotSentWarning,
        stacklevel=4,
    )


def build_body(
    request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
) -> bytes:
    """Return the body bytes for ``request`` (the provider class documents it)."""
    check_request(request, cache)
    name_of = history_names(request.messages)
    options: dict[int, Hashable] = {
        i: tuple(texts)
        for i, texts in (carry or {}).items()
        if isinstance(i, int) and 0 <= i < len(request.messages) and texts
    }

    def values(index: int, message: Message, option: Hashable) -> list[dict[str, Any]]:
        return content_values(index, message, option, name_of)

    body: dict[str, Any] = {
        "contents": history_array(request.messages, options, values, cache, native=_NATIVE),
    }
    if not uses_cache(request):
        body.update(cache_held(request))
    else:
        _warn_not_sent(request, cache)
    config = _generation_config(request)
    if config:
        body["generationConfig"] = config
    imp.put_extra(body, request.params)
    return jsonbytes.dumps(body)


def model_path(model: str) -> str:
    """Return the model's resource name as the URL holds it (``models/`` prefix dropped)."""
    name = model.removeprefix("models/")
    if not name or any(c in name for c in '/?#:%\\"') or not name.isprintable():
        raise InvalidRequestError(
            f"model name {model!r} cannot stand in a Gemini URL", location="model"
        )
    return name
