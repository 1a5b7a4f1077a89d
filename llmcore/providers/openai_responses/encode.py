"""OpenAI Responses: the request body encoder (SPEC P1–P3).

Key order (pinned by golden files in ``tests/providers/golden/openai-responses/``; never changes
once released):

======================  ================================================================
object                  keys, in order (absent keys are skipped, never sent as ``null``)
======================  ================================================================
body                    ``model, instructions, input, tools, tool_choice,
                        max_output_tokens, temperature, top_p, stream, store``, then
                        ``params.extra`` in its own order
user message item       ``type, role, content`` (``type`` is ``message``, ``role`` ``user``)
input_text part         ``type, text``
input_image part        ``type, image_url, detail``
assistant message item  ``type, role, content`` (``content`` a string)
function_call item      ``type, call_id, name, arguments``
function_call_output    ``type, call_id, output``
reasoning item          carried: the provider's raw JSON text, unchanged (M4)
tool                    ``type, name, description, parameters, strict``
tool_choice             a string (``auto``, ``none``, ``required``) or ``type, name``
======================  ================================================================

Encoding rules:

* ``instructions`` is the system prompt: its non-empty blocks joined with
  :data:`SYSTEM_SEPARATOR` (a blank line); an all-empty system prompt omits the key.
* ``input`` replays the whole history every time (stateless, never ``previous_response_id``),
  so the body always sends ``"store": false``: nothing is kept server-side for a later request
  to point at. Reasoning models need ``"include": ["reasoning.encrypted_content"]`` in
  ``params.extra`` so the reasoning items carried within a turn can be replayed without server
  state (PROVIDER-RULES §2.4).
* A user message is one ``message`` item whose ``content`` is always a part array (the only
  parts that may carry a ``prompt_cache_breakpoint`` later, so their shape never changes):
  ``input_text`` per non-empty text (an omitted image sends its placeholder text, M3) and
  ``input_image`` per image as a ``data:`` URL with ``"detail": "auto"`` (the API default;
  the openai package's ``ResponseInputImageParam`` requires ``detail``).
* An assistant message becomes one item per content case, in order: each non-empty text is an
  ``EasyInputMessageParam`` with string content (``{"type":"message","role":"assistant",
  "content":"…"}``: fully typed without the provider's ``id``/``status``, which M4 keeps out of
  the history; sent by pydantic-ai and accepted by the API, e.g. corpus openai-responses/0039,
  0097); each tool call is a ``function_call`` item without the provider's ``fc_`` id.
* Tool-call arguments (P2): the stored bytes decoded as UTF-8 (U+FFFD for invalid bytes) and
  written as a JSON string, never parsed and re-dumped. Empty or all-whitespace bytes send
  ``"{}"``; text that is not a JSON object sends the JSON text of
  ``{"raw_arguments": "<the text>"}`` (the Anthropic module's rule, so switching providers
  shows the model the same thing).
* A ``tool`` message becomes one ``function_call_output`` item per result; ``output`` is the
  result bytes as UTF-8 (U+FFFD for invalid bytes), empty allowed. ``is_error`` has no wire
  form on Responses: the result content, which describes the failure (M2), is sent unchanged.
* Call ids longer than 64 characters are rewritten by
  :func:`~llmcore.providers.base.rewrite_id`, identically in ``function_call`` and
  ``function_call_output``; the history keeps the original ids.
* Tools are ``FunctionToolParam``: ``strict`` is required by the type and sent as the tool's
  ``strict`` flag, ``false`` when unset (strict mode needs every property required and
  ``additionalProperties: false``, which arbitrary schemas lack). An empty description is
  omitted.
* ``toolChoice``: ``auto``/``none`` as themselves, ``any`` as ``required``, a named tool as
  ``{"type":"function","name":…}``. ``maxTokens`` → ``max_output_tokens``, sent only when set
  (Responses does not require it). Stop sequences have no Responses form: a request with
  ``stopSequences`` is refused with :class:`~llmcore.errors.InvalidRequestError`.
* No explicit breakpoints in this version: OpenAI caches prefixes automatically [O-PC], so
  ``cacheMode`` and ``cacheTtl`` are ignored.
* ``carry`` (M4): message index → the raw JSON texts of *every* output item of the response
  that produced that assistant message, exactly as received (``reasoning`` items and the
  ``message`` / ``function_call`` items after them, with their ``id`` and ``status``); within
  the turn they are sent *instead of* the message's own items, since a reasoning item must be
  followed by the item it produced, ids included (PROVIDER-RULES §2.4; corpus case 0115 shows
  the 400 otherwise). When the turn ends the carry is dropped and the message is encoded from
  the history: P4's allowed kind "reasoning items dropped with the id/status of the items that
  followed them".

Source: https://platform.openai.com/docs/api-reference/responses/create and the openai
package's ``types/responses`` TypedDicts.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, Final, assert_never

from llmcore import jsonbytes
from llmcore.errors import InvalidRequestError
from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.providers import _import_common as imp
from llmcore.providers.base import (
    Carry,
    EncodeCache,
    NativePieces,
    arguments_json,
    check_request,
    data_url,
    history_array,
    result_text,
    rewrite_id,
)
from llmcore.request import Params, Request, ToolChoiceName

SYSTEM_SEPARATOR: Final = "\n\n"
"""Joins the system prompt's blocks into ``instructions``."""

_ID_MAX: Final = 64
_MODELED: Final = frozenset(
    {
        "model",
        "instructions",
        "input",
        "tools",
        "tool_choice",
        "max_output_tokens",
        "temperature",
        "top_p",
        "stream",
        "store",
    }
)


def wire_id(call_id: str) -> str:
    """Return the ``call_id`` sent for ``call_id`` (at most 64 characters)."""
    return rewrite_id(call_id, max_length=_ID_MAX)


def arguments_text(arguments: bytes) -> str:
    """Return the ``arguments`` string for stored argument bytes (the module's documented rule).

    Args:
        arguments: The stored tool-call argument bytes (any bytes).

    Returns:
        The bytes as UTF-8 text (U+FFFD for invalid bytes) when that text is a JSON object;
        ``{}`` for empty or all-whitespace bytes; else the JSON text of
        ``{"raw_arguments": <text>}``.
    """
    return arguments_json(arguments, replace_invalid_utf8=True)


def _user_part(part: MessageContent) -> dict[str, Any] | None:
    match part:
        case Text(text=text):
            return {"type": "input_text", "text": text} if text else None
        case Image():
            return {"type": "input_image", "image_url": data_url(part), "detail": "auto"}
        case ToolCall() | ToolResult():
            raise InvalidRequestError(f"a user message cannot hold a {part.type} case")
        case _:
            assert_never(part)


def _assistant_item(part: MessageContent) -> dict[str, Any] | None:
    match part:
        case Text(text=text):
            return {"type": "message", "role": "assistant", "content": text} if text else None
        case ToolCall(id=call_id, name=name, arguments=arguments):
            return {
                "type": "function_call",
                "call_id": wire_id(call_id),
                "name": name,
                "arguments": arguments_text(arguments),
            }
        case Image() | ToolResult():
            raise InvalidRequestError(f"an assistant message cannot hold a {part.type} case")
        case _:
            assert_never(part)


def _result_item(part: MessageContent) -> dict[str, Any]:
    if not isinstance(part, ToolResult):
        raise InvalidRequestError(f"a tool message cannot hold a {part.type} case")
    return {
        "type": "function_call_output",
        "call_id": wire_id(part.call_id),
        "output": result_text(part),
    }


def _items(message: Message) -> list[dict[str, Any]]:
    if message.role == "user":
        parts = [p for p in (_user_part(part) for part in message.content) if p is not None]
        return [{"type": "message", "role": "user", "content": parts}]
    if message.role == "assistant":
        items = (_assistant_item(part) for part in message.content)
        return [item for item in items if item is not None]
    return [_result_item(part) for part in message.content]


def _message_values(index: int, message: Message, option: Hashable) -> list[Any]:
    if isinstance(option, tuple) and option:
        carried = ",".join(str(text) for text in option)
        return [jsonbytes.Raw(carried)] if carried else []
    return _items(message)


_NATIVE: Final = NativePieces(
    "responses_pieces",
    (Text, Image, ToolCall, ToolResult, wire_id, arguments_text, _ID_MAX, False, None),
)
""":func:`_message_values` written in C (:class:`~llmcore.providers.history.NativePieces`); a
message with carried output items is written by Python."""


def _message_options(request: Request, carry: Carry | None) -> dict[int, Hashable]:
    options: dict[int, Hashable] = {}
    for index, texts in (carry or {}).items():
        if 0 <= index < len(request.messages) and texts:
            options[index] = tuple(texts)
    return options


def _tool_choice(choice: object) -> str | dict[str, str]:
    if isinstance(choice, ToolChoiceName):
        return {"type": "function", "name": choice.name}
    if choice in ("auto", "none"):
        return str(choice)
    if choice == "any":
        return "required"
    raise InvalidRequestError(f"unknown tool choice {choice!r}", location="params.toolChoice")


def _tools(request: Request) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for tool in request.tools:
        entry: dict[str, Any] = {"type": "function", "name": tool.name}
        if tool.description:
            entry["description"] = tool.description
        entry["parameters"] = jsonbytes.Raw(tool.input_schema)
        entry["strict"] = bool(tool.strict)
        tools.append(entry)
    return tools


def _head(request: Request) -> dict[str, Any]:
    body: dict[str, Any] = {"model": request.model}
    instructions = SYSTEM_SEPARATOR.join(s for s in request.system if s)
    if instructions:
        body["instructions"] = instructions
    return body


def _tail(request: Request, body: dict[str, Any]) -> None:
    params = request.params
    tools = _tools(request)
    if tools:
        body["tools"] = tools
    if params.tool_choice is not None:
        body["tool_choice"] = _tool_choice(params.tool_choice)
    if params.max_tokens is not None:
        body["max_output_tokens"] = params.max_tokens
    imp.put_sampling(body, params, stop_key="stop")
    if params.stream:
        body["stream"] = True
    body["store"] = False
    imp.put_extra(body, params)


def _check_params(params: Params) -> None:
    if params.stop_sequences is not None:
        raise InvalidRequestError(
            "the Responses API has no stop sequences; remove stopSequences for this provider",
            location="params.stopSequences",
        )


def build_body(
    request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
) -> bytes:
    """Return the body bytes for ``request`` (the provider class documents it)."""
    check_request(request, cache)
    _check_params(request.params)
    body = _head(request)
    options = _message_options(request, carry)
    body["input"] = history_array(request.messages, options, _message_values, cache, native=_NATIVE)
    _tail(request, body)
    return jsonbytes.dumps(body)
