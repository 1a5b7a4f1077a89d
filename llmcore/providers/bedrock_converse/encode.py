"""Amazon Bedrock Converse: the request body encoder (SPEC P1–P3, P8).

The body is what ``POST /model/{modelId}/converse`` (and ``/converse-stream``) takes; the model
id goes in the URL, never in the body, and streaming is the path, not a body field.

Key order (pinned by golden files in ``tests/providers/golden/``; never changes once released):

=====================  ================================================================
object                 keys, in order (absent keys are skipped, never sent as ``null``)
=====================  ================================================================
body                   ``messages, system, inferenceConfig, toolConfig``, then
                       ``params.extra`` in its own order (``additionalModelRequestFields``,
                       ``guardrailConfig``, … go there)
system block           ``text`` | ``cachePoint``
inferenceConfig        ``maxTokens, temperature, topP, stopSequences``
toolConfig             ``tools, toolChoice``
tool                   ``toolSpec`` | ``cachePoint``; toolSpec ``name, description,
                       inputSchema, strict``; inputSchema ``json``
toolChoice             ``auto`` | ``any`` (each ``{}``) | ``tool`` (``name``)
message                ``role, content``
text block             ``text``
image block            ``image``: ``format, source``; source ``bytes`` (base64)
toolUse block          ``toolUse``: ``toolUseId, name, input``
toolResult block       ``toolResult``: ``toolUseId, content, status``; content
                       ``[{"text": …}]``
cachePoint block       ``cachePoint``: ``type, ttl`` (``ttl`` only for ``1h``)
=====================  ================================================================

Encoding rules (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html):

* Roles alternate (Bedrock answers ``A conversation must alternate between user and assistant
  roles`` otherwise): ``tool`` messages are ``user`` messages of ``toolResult`` blocks, and a run
  of consecutive messages with the same wire role becomes one message whose ``content`` is
  theirs in order. The run's first message writes it; the others write nothing.
* Empty text blocks are never sent (the API refuses blank text); an all-empty system is
  omitted. Images: ``format`` is ``jpeg``, ``png``, ``gif`` or ``webp``.
* Tool-call arguments (P2): ``toolUse.input`` is a JSON object on this wire, so the stored
  bytes of an object are spliced in verbatim; anything else follows
  :func:`~llmcore.providers.base.arguments_json`. Tool results are one ``text`` block (none for
  empty bytes); ``status`` is sent only as ``"error"``.
* Tool-call ids outside ``[a-zA-Z0-9_.:-]+`` (1–64 characters, the service model's
  ``ToolUseId``) are rewritten by :func:`~llmcore.providers.base.rewrite_id`, identically in
  ``toolUse`` and ``toolResult``.
* ``toolChoice``: ``auto`` and ``any`` map to themselves, a named tool to ``tool``; ``none`` has
  no Converse form and is refused (:class:`~llmcore.errors.InvalidRequestError`).
* Cache points (P3; https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html,
  PROVIDER-RULES §5): a ``{"cachePoint": {"type": "default"}}`` block after the last tool (Claude
  models only; Nova caches no tools), after the last system block, and at the end of the newest
  message and of the message before the last assistant message — at most 4. Models other than
  Claude and Nova get none. ``cacheTtl`` ``1h`` adds ``"ttl": "1h"``. Mode ``automatic`` (no such
  Converse mode) places only the newest message's point; ``off`` places none.
"""

from __future__ import annotations

import operator
import re
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
    base64_text,
    breakpoint_messages,
    check_request,
    history_array,
    result_text,
    rewrite_id,
    sampling_members,
)
from llmcore.request import Request, ToolChoiceName

__all__ = [
    "IMAGE_FORMATS",
    "build_body",
    "cache_point",
    "caching_family",
    "tool_input",
    "wire_id",
]

_ID_PATTERN: Final = re.compile(r"[a-zA-Z0-9_.:-]+")
_ID_MAX: Final = 64
MODELED: Final = frozenset({"messages", "system", "inferenceConfig", "toolConfig"})
"""The top-level keys this encoder writes (``params.extra`` may not collide with them)."""

IMAGE_FORMATS: Final = {
    "image/jpeg": "jpeg",
    "image/png": "png",
    "image/gif": "gif",
    "image/webp": "webp",
}
"""Image ``format`` per mime type (``ImageFormat`` in the Converse API reference)."""

_ABSORBED: Final = "absorbed"
"""The option of a message written by the first message of its run (it writes nothing)."""


def wire_id(call_id: str) -> str:
    """Return the ``toolUseId`` sent for ``call_id`` (``[a-zA-Z0-9_.:-]+``, 1–64 characters)."""
    return rewrite_id(call_id, max_length=_ID_MAX, safe=_ID_PATTERN)


def cache_point(ttl: Hashable) -> dict[str, Any]:
    """Return the ``cachePoint`` block for a checkpoint of the given TTL (``5m`` or ``1h``)."""
    inner = {"type": "default", "ttl": "1h"} if ttl == "1h" else {"type": "default"}
    return {"cachePoint": inner}


def caching_family(model: str) -> str | None:
    """Return ``claude`` or ``nova`` for a model id that supports cache points, else ``None``.

    Matches the provider segment of Bedrock model and inference-profile ids
    (``anthropic.claude-…``, ``us.anthropic.claude-…``, ``amazon.nova-…``, ARNs ending in one).
    """
    lowered = model.lower()
    if "anthropic.claude" in lowered or lowered.startswith("claude"):
        return "claude"
    if "amazon.nova" in lowered or lowered.startswith("nova"):
        return "nova"
    return None


def tool_input(arguments: bytes) -> jsonbytes.Raw:
    """Return the ``toolUse.input`` value for stored argument bytes (:func:`arguments_json`)."""
    return jsonbytes.Raw(arguments_json(arguments))


def _block(part: MessageContent) -> dict[str, Any] | None:
    match part:
        case Text(text=text):
            return {"text": text} if text else None
        case Image(mime_type=mime):
            source = {"bytes": base64_text(part)}
            return {"image": {"format": IMAGE_FORMATS.get(mime, mime), "source": source}}
        case ToolCall(id=call_id, name=name, arguments=arguments):
            use = {"toolUseId": wire_id(call_id), "name": name, "input": tool_input(arguments)}
            return {"toolUse": use}
        case ToolResult(call_id=call_id, content=content, is_error=is_error):
            result: dict[str, Any] = {"toolUseId": wire_id(call_id)}
            result["content"] = [{"text": result_text(part)}] if content else []
            if is_error:
                result["status"] = "error"
            return {"toolResult": result}
        case _:
            assert_never(part)


def _wire_role(message: Message) -> str:
    return "user" if message.role == "tool" else message.role


def _message_values(index: int, message: Message, option: Hashable) -> list[dict[str, Any]]:
    if option == _ABSORBED:
        return []
    followers, ttl = option if isinstance(option, tuple) else ((), option)
    blocks: list[Any] = []
    for member in (message, *followers):
        blocks.extend(block for part in member.content if (block := _block(part)) is not None)
    if ttl is not None:
        blocks.append(cache_point(ttl))
    return [{"role": _wire_role(message), "content": blocks}]


_NATIVE: Final = NativePieces(
    "converse_pieces",
    (Text, Image, ToolCall, ToolResult, wire_id, arguments_json, _ID_MAX, True, None),
)
""":func:`_message_values` written in C (:class:`~llmcore.providers.history.NativePieces`); ids
outside ``[a-zA-Z0-9_-]+`` (a ``.`` or ``:`` included) go through :func:`wire_id`."""


_ROLE: Final = operator.attrgetter("role")
_SEP: Final = "\x00"
_PAIRS: Final = (f"user{_SEP}user", f"assistant{_SEP}assistant")
"""Two neighbouring messages of one wire role, in the roles joined by NUL (tool read as user)."""


def _followers(messages: tuple[Message, ...]) -> list[int]:
    """Return, in order, the indexes of messages whose wire role is the one before them.

    The roles are joined into one string and the pairs found by ``str.find`` (C loops), so a
    history costs one attribute read per message and no Python work per message otherwise.
    """
    text = _SEP.join(map(_ROLE, messages)).replace("tool", "user")
    found: list[int] = []
    for pair in _PAIRS:
        start, index, pos = 0, 0, text.find(pair)
        while pos != -1:
            index += text.count(_SEP, start, pos)
            found.append(index + 1)
            start, pos = pos, text.find(pair, pos + 1)
    return sorted(found)


def _message_options(request: Request) -> dict[int, Hashable]:
    """Return each message's option: the run it heads and its cache point, or absorbed.

    The runs come from :func:`_followers` (no Python work per message beyond reading roles).
    """
    messages = request.messages
    mode = request.params.cache_mode
    marked: list[int] = []
    if mode != "off" and caching_family(request.model) is not None:
        newest, previous = breakpoint_messages(messages)
        marked = [i for i in (newest, previous if mode == "breakpoints" else None) if i is not None]
    ttl: Hashable = request.params.cache_ttl
    options: dict[int, Hashable] = dict.fromkeys(marked, ttl)
    followers = _followers(messages)
    index = 0
    while index < len(followers):
        head = end = followers[index] - 1
        while index < len(followers) and followers[index] == end + 1:
            end, index = end + 1, index + 1
        options.update(dict.fromkeys(range(head + 1, end + 1), _ABSORBED))
        point = ttl if any(head <= i <= end for i in marked) else None
        options[head] = (messages[head + 1 : end + 1], point)
    return options


def _tool_choice(choice: object) -> dict[str, Any]:
    if isinstance(choice, ToolChoiceName):
        return {"tool": {"name": choice.name}}
    if choice in ("auto", "any"):
        return {str(choice): {}}
    if choice == "none":
        raise InvalidRequestError(
            "tool choice 'none' has no Converse form (toolChoice is auto, any or tool)",
            location="params.toolChoice",
        )
    raise InvalidRequestError(f"unknown tool choice {choice!r}", location="params.toolChoice")


def _marks(request: Request) -> tuple[bool, bool]:
    """Return whether the system and the tools carry a cache point."""
    if request.params.cache_mode != "breakpoints":
        return False, False
    family = caching_family(request.model)
    return family is not None, family == "claude"


def _system(request: Request, mark: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"text": s} for s in request.system if s]
    if blocks and mark:
        blocks.append(cache_point(request.params.cache_ttl))
    return blocks


def _tool_config(request: Request, mark: bool) -> dict[str, Any] | None:
    tools: list[dict[str, Any]] = []
    for tool in request.tools:
        spec: dict[str, Any] = {"name": tool.name}
        if tool.description:
            spec["description"] = tool.description
        spec["inputSchema"] = {"json": jsonbytes.Raw(tool.input_schema)}
        if tool.strict is not None:
            spec["strict"] = tool.strict
        tools.append({"toolSpec": spec})
    if not tools:
        if request.params.tool_choice is not None:
            _tool_choice(request.params.tool_choice)  # 'none' is refused either way
        return None
    if mark:
        tools.append(cache_point(request.params.cache_ttl))
    config: dict[str, Any] = {"tools": tools}
    if request.params.tool_choice is not None:
        config["toolChoice"] = _tool_choice(request.params.tool_choice)
    return config


_INFERENCE: Final = (
    ("max_tokens", "maxTokens"),
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("stop_sequences", "stopSequences"),
)
"""``inferenceConfig`` members in Converse's key order (Params attribute, wire key)."""


def _inference(request: Request) -> dict[str, Any]:
    return sampling_members(request, _INFERENCE)


def build_body(
    request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
) -> bytes:
    """Return the body bytes for ``request`` (the provider class documents it).

    The model is not in them: the transport puts it in the URL (``send(..., model=...)``).

    ``carry`` is accepted for the Protocol; Converse responses carry nothing the next request
    needs (reasoning content is dropped, M4), so it is ignored.
    """
    check_request(request, cache)
    system_mark, tools_mark = _marks(request)
    options = _message_options(request)
    body: dict[str, Any] = {
        "messages": history_array(request.messages, options, _message_values, cache, native=_NATIVE)
    }
    system = _system(request, system_mark)
    if system:
        body["system"] = system
    inference = _inference(request)
    if inference:
        body["inferenceConfig"] = inference
    tool_config = _tool_config(request, tools_mark)
    if tool_config is not None:
        body["toolConfig"] = tool_config
    imp.put_extra(body, request.params)
    return jsonbytes.dumps(body)
