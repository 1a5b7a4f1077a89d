"""OpenAI Responses API: request bodies and the import of recorded bodies (SPEC P1, P2, P4, P7).

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

Import (:meth:`OpenAIResponsesProvider.import_body`) is the inverse; its rules are in
:class:`_Importer`.

Response side (JSON and event stream):

* ``message`` items' ``output_text`` (and ``refusal``) parts become text; ``function_call``
  items become tool calls with ``id`` = ``call_id`` and ``arguments`` = the UTF-8 bytes of the
  decoded ``arguments`` string (M2; ``custom_tool_call`` ``input`` likewise). The item ``id``
  (``msg_``, ``fc_``) and ``status`` never enter the history (M4).
* When the response holds a ``reasoning`` item, ``ParsedResponse.carry`` is every output item
  exactly as received (each item's bytes in the body, or in its ``response.output_item.done``
  event); the runner sends them in place of that assistant message's items for the rest of the
  turn and drops them when it ends. Cache cost: the next turn's input differs from the carried
  request at that message, so the cached prefix ends there and the tail is read again uncached
  once per turn.
* Other items (``web_search_call``, ``file_search_call``, ``code_interpreter_call``, MCP, …)
  are left out and named in the notes; each ``web_search_call`` counts one web search.
* Usage (PROVIDER-RULES §2.2): ``input`` = ``input_tokens`` − ``cached_tokens`` −
  ``cache_write_tokens``; ``cache_read`` = ``cached_tokens``; ``cache_write`` =
  ``cache_write_tokens``; ``output`` = ``output_tokens``.
* Stop (:func:`map_status`): ``completed`` → ``tool_use`` with function calls, else
  ``end_turn``; ``incomplete`` → ``max_tokens`` / ``refusal``; ``failed`` raises
  :class:`~llmcore.errors.APIStatusError`; ``queued`` / ``in_progress`` → ``other``.
* Streams must end with ``response.completed`` / ``response.incomplete``; an ``error`` event or
  ``response.failed`` raises :class:`~llmcore.errors.APIStatusError`; an unknown event type
  raises :class:`~llmcore.errors.ResponseParseError`.

Source: https://platform.openai.com/docs/api-reference/responses/create and the openai
package's ``types/responses`` TypedDicts.
"""

from __future__ import annotations

import base64
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, assert_never

from llmcore import jsonbytes
from llmcore.errors import APIStatusError, InvalidRequestError, ResponseParseError
from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult, clean_text
from llmcore.providers import _import_common as imp
from llmcore.providers import _parse_common as pc
from llmcore.providers._jsonspan import find_span
from llmcore.providers._sse import SSEEvent
from llmcore.providers.base import (
    Carry,
    EncodeCache,
    Endpoint,
    ImportResult,
    ParsedResponse,
    ResponseMethods,
    ResponseSide,
    StopReason,
    arguments_json,
    check_request,
    encode_messages,
    rewrite_id,
)
from llmcore.request import Params, Request, ToolChoiceName
from llmcore.usage import Usage

__all__ = [
    "ENDPOINT",
    "PROVIDER",
    "SYSTEM_SEPARATOR",
    "OpenAIResponsesProvider",
    "ResponsesStreamParser",
    "error_from_body",
    "map_status",
    "parse_response_body",
    "parse_usage",
]

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


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _user_part(part: MessageContent) -> dict[str, Any] | None:
    match part:
        case Text(text=text):
            return {"type": "input_text", "text": text} if text else None
        case Image(data=data, mime_type=mime):
            url = f"data:{mime};base64,{_b64(data)}"
            return {"type": "input_image", "image_url": url, "detail": "auto"}
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
        "output": part.content.decode("utf-8", "replace"),
    }


def _items(message: Message) -> list[dict[str, Any]]:
    if message.role == "user":
        parts = [p for p in (_user_part(part) for part in message.content) if p is not None]
        return [{"type": "message", "role": "user", "content": parts}]
    if message.role == "assistant":
        items = (_assistant_item(part) for part in message.content)
        return [item for item in items if item is not None]
    return [_result_item(part) for part in message.content]


def _encode_message(index: int, message: Message, option: Hashable) -> bytes:
    if isinstance(option, tuple) and option:
        return ",".join(str(text) for text in option).encode("utf-8")
    return b",".join(jsonbytes.dumps(item) for item in _items(message))


def _message_options(request: Request, carry: Carry | None) -> list[Hashable]:
    options: list[Hashable] = [None] * len(request.messages)
    for index, texts in (carry or {}).items():
        if 0 <= index < len(options) and texts:
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


class OpenAIResponsesProvider(ResponseMethods):
    """The OpenAI Responses provider (``openai-responses``)."""

    name: Final = "openai-responses"

    def build_body(
        self, request: Request, *, cache: EncodeCache | None = None, carry: Carry | None = None
    ) -> bytes:
        """Return the Responses API body bytes for ``request`` (key order in the module doc).

        ``carry`` holds the running turn's raw output items by message index (M4); they are
        sent in place of that message's own items.

        Raises:
            InvalidRequestError: Unpaired tool calls/results, stop sequences, an unknown tool
                choice, or a ``params.extra`` key that collides with a key this body writes.
            EncodingError: A value cannot be written as JSON.
        """
        check_request(request)
        _check_params(request.params)
        body = _head(request)
        options = _message_options(request, carry)
        texts = encode_messages(request.messages, options, _encode_message, cache)
        body["input"] = jsonbytes.RawArray(texts)
        _tail(request, body)
        return jsonbytes.dumps(body)

    def import_body(self, body: Any, *, location: str = "$") -> ImportResult:
        """Return the neutral request a recorded Responses body stands for.

        See :class:`_Importer` for what is dropped (with a note) and what is refused.

        Raises:
            RequestFileError: The body is malformed (the error names the JSON path).
            UnsupportedContentError: Server state (``previous_response_id``, ``conversation``,
                ``prompt``), files, URL images, hosted-tool items and tools, and other content
                outside the four cases.
        """
        return _Importer().run(body, location)


_NO_STOP: Final = "\x00stop"
"""A key no body holds: Responses has no stop field, so every recorded key stays in extra."""
_REFUSED_TOP: Final = ("previous_response_id", "conversation", "prompt")
"""Server-side state (stored responses, conversations, prompt templates) a stateless replay
cannot stand for."""
_MESSAGE_KEYS: Final = frozenset({"type", "role", "content", "id", "status", "phase"})
_CALL_KEYS: Final = frozenset({"type", "call_id", "name", "arguments", "id", "status"})
_OUTPUT_KEYS: Final = frozenset({"type", "call_id", "output", "id", "status"})
_TOOL_KEYS: Final = frozenset({"type", "name", "description", "parameters", "strict"})
_SYSTEM_ROLES: Final = ("system", "developer")


class _Importer(imp.Importer):
    """Reads a recorded Responses body back into a neutral request (SPEC R2 ``import``).

    * ``input`` is a string (one user text) or an item list. Easy messages (no ``type``) and
      ``message`` items with string or part-array content are read alike. Consecutive assistant
      items (text messages and ``function_call``) form one assistant message; consecutive
      ``function_call_output`` items one tool message; each user item one user message.
    * System and developer messages before the first other item join the system prompt, after
      ``instructions`` (rebuilt into ``instructions``: normalization "leading system messages
      moved to instructions"); one later in the conversation is refused, since llmcore's
      history has no system role (M1).
    * Dropped with a note (M4 and llmcore's fixed wire forms): ``reasoning`` items; the
      provider's ``id`` / ``status`` / ``phase`` on replayed items; ``annotations`` of assistant
      text; an image ``detail`` other than ``auto``; ``store: true`` (llmcore always sends
      ``false``); empty texts.
    * Refused with :class:`~llmcore.errors.UnsupportedContentError` naming the feature:
      ``previous_response_id``, ``conversation``, ``prompt``; ``input_file`` parts, images by
      URL or ``file_id``, refusal parts; items other than messages, ``function_call``,
      ``function_call_output`` and ``reasoning`` (``web_search_call``, ``file_search_call``,
      ``computer_call``, ``item_reference``, ``tool_search_call``, ``additional_tools``, MCP and
      code-interpreter items, …); fields llmcore cannot carry (``namespace`` on a call, a
      non-string ``output``); tools other than plain ``function`` tools (hosted tools,
      ``defer_loading``, namespaces); ``instructions`` as an item list.
    * Unmodeled top-level fields (``include``, ``reasoning``, ``text``, ``user``, ``stream:
      false``, …) go to ``params.extra`` in body order; a ``tool_choice`` with no neutral form
      (``allowed_tools``, hosted tools) goes there too.
    """

    def __init__(self) -> None:
        super().__init__()
        self.skip = 0
        self.pending: list[MessageContent] = []
        self.pending_role = ""
        self.out: list[Message] = []

    def run(self, body: Any, at: str) -> ImportResult:
        """Refuse server-state fields first, then read ``body``."""
        if isinstance(body, dict):
            for key in _REFUSED_TOP:
                if body.get(key) is not None:
                    raise imp.unsupported(key, f"{at}.{key}")
        return super().run(body, at)

    def system(self, body: dict[str, Any], at: str) -> tuple[str, ...]:
        """Return ``instructions`` and the leading system/developer messages' texts."""
        out: list[str] = []
        instructions = body.get("instructions")
        if isinstance(instructions, list):
            raise imp.unsupported("instructions as an item list", f"{at}.instructions")
        if instructions is not None and not isinstance(instructions, str):
            raise imp.bad("expected a string", f"{at}.instructions")
        if instructions:
            out.append(instructions)
        items = body.get("input")
        for index, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict) or item.get("type", "message") != "message":
                break
            if item.get("role") not in _SYSTEM_ROLES:
                break
            where = f"{at}.input[{index}]"
            self.check_keys(item, _MESSAGE_KEYS, "message", where)
            out.append(self.plain_text(item.get("content"), f"{where}.content"))
            self.skip = index + 1
        return tuple(text for text in out if text)

    def plain_text(self, content: Any, at: str) -> str:
        """Return string content, or the joined texts of a text-part array."""
        if isinstance(content, str):
            return content
        return imp.join_text_blocks(content, at)

    def messages(self, body: dict[str, Any], at: str) -> list[Message]:
        """Return the history read from ``input``."""
        if "input" not in body:
            raise imp.bad("missing key 'input' (is this a Responses body?)", f"{at}.input")
        items = body.get("input")
        if isinstance(items, str):
            return [Message.user(items)] if items else []
        if not isinstance(items, list):
            raise imp.bad("expected a string or an array", f"{at}.input")
        for index in range(self.skip, len(items)):
            self.item(items[index], f"{at}.input[{index}]")
        self.flush("")
        return self.out

    def flush(self, role: str) -> None:
        """Close the pending assistant or tool message unless ``role`` continues it."""
        if role == self.pending_role:
            return
        if self.pending:
            at = f"input (a {self.pending_role} turn)"
            self.out.append(imp.make_message(self.pending_role, tuple(self.pending), at))
        elif self.pending_role:
            self.note(f"dropped an {self.pending_role} turn holding only empty text")
        self.pending, self.pending_role = [], role

    def item(self, item: Any, at: str) -> None:
        """Read one ``input`` item into the pending messages."""
        obj = imp.need_obj(item, at)
        kind = obj.get("type", "message")
        if kind == "message":
            self.message(obj, at)
        elif kind == "function_call":
            self.flush("assistant")
            self.pending.append(self.call(obj, at))
        elif kind == "function_call_output":
            self.flush("tool")
            self.pending.append(self.output(obj, at))
        elif kind == "reasoning":
            self.note(f"{at}: dropped a reasoning item (provider-only data, M4)")
        else:
            raise imp.unsupported(f"{kind} item", at)

    def check_keys(self, obj: dict[str, Any], allowed: frozenset[str], kind: str, at: str) -> None:
        """Refuse fields llmcore cannot carry; note the provider-only ones dropped."""
        unknown = [key for key in obj if key not in allowed]
        if unknown:
            raise imp.unsupported(f"{kind} field {unknown[0]!r}", f"{at}.{unknown[0]}")
        dropped = [key for key in ("id", "status", "phase") if key in obj]
        if dropped:
            self.note(f"{at}: dropped {', '.join(dropped)} (provider-only data, M4)")

    def message(self, obj: dict[str, Any], at: str) -> None:
        """Read a message item (easy or typed)."""
        self.check_keys(obj, _MESSAGE_KEYS, "message", at)
        role = imp.need_str(obj, "role", at)
        if role == "assistant":
            self.flush("assistant")
            self.pending.extend(self.assistant_texts(obj.get("content"), f"{at}.content"))
            return
        if role in _SYSTEM_ROLES:
            raise imp.unsupported(f"{role} message inside the conversation", f"{at}.role")
        if role != "user":
            raise imp.bad(f"unknown role {role!r}", f"{at}.role")
        self.flush("")
        parts = self.user_parts(obj.get("content"), f"{at}.content")
        if any(not isinstance(p, Text) or p.text for p in parts):
            self.out.append(imp.make_message("user", tuple(parts), at))
        else:
            self.note(f"{at}: dropped a user message holding only empty text")

    def assistant_texts(self, content: Any, at: str) -> list[Text]:
        """Return an assistant message's texts (empty ones dropped)."""
        if content == "":
            self.note(f"{at}: dropped an empty assistant text")
        if isinstance(content, str):
            return [Text(text=content)] if content else []
        if not isinstance(content, list):
            raise imp.bad("expected a string or an array", at)
        texts: list[Text] = []
        for index, part in enumerate(content):
            where = f"{at}[{index}]"
            obj = imp.need_obj(part, where)
            if obj.get("type") not in ("output_text", "input_text"):
                raise imp.unsupported(f"{obj.get('type')} part", where)
            if obj.get("annotations"):
                self.note(f"{where}: dropped annotations (citations are not kept, M4)")
            text = imp.need_str(obj, "text", where)
            if text:
                texts.append(Text(text=text))
        return texts

    def user_parts(self, content: Any, at: str) -> list[MessageContent]:
        """Return a user message's parts."""
        if isinstance(content, str):
            return [Text(text=content)]
        if not isinstance(content, list):
            raise imp.bad("expected a string or an array", at)
        parts: list[MessageContent] = []
        for index, part in enumerate(content):
            where = f"{at}[{index}]"
            obj = imp.need_obj(part, where)
            kind = obj.get("type")
            if kind == "input_text":
                parts.append(Text(text=imp.need_str(obj, "text", where)))
            elif kind == "input_image":
                parts.append(self.image(obj, where))
            else:
                raise imp.unsupported(f"{kind} part", where)
        return parts

    def image(self, obj: dict[str, Any], at: str) -> Image:
        """Read an ``input_image`` part with a base64 ``data:`` URL."""
        if obj.get("file_id") is not None:
            raise imp.unsupported("input_image by file_id", f"{at}.file_id")
        url = imp.need_str(obj, "image_url", at)
        head, sep, data = url.partition(",")
        if not (head.startswith("data:") and head.endswith(";base64") and sep):
            raise imp.unsupported("input_image by URL", f"{at}.image_url")
        if obj.get("detail", "auto") != "auto":
            self.note(f"{at}: image detail {obj.get('detail')!r} sent as 'auto'")
        raw = imp.b64decode(data, f"{at}.image_url")
        return self.make_image(raw, head[len("data:") : -len(";base64")], at)

    def call(self, obj: dict[str, Any], at: str) -> ToolCall:
        """Read a ``function_call`` item; ``arguments`` keep the string's UTF-8 bytes."""
        self.check_keys(obj, _CALL_KEYS, "function_call", at)
        call_id, name = imp.need_str(obj, "call_id", at), imp.need_str(obj, "name", at)
        self.call_names[call_id] = name
        arguments = imp.text_bytes(imp.need_str(obj, "arguments", at))
        return ToolCall(id=call_id, name=name, arguments=arguments)

    def output(self, obj: dict[str, Any], at: str) -> ToolResult:
        """Read a ``function_call_output`` item (string ``output`` only)."""
        self.check_keys(obj, _OUTPUT_KEYS, "function_call_output", at)
        call_id = imp.need_str(obj, "call_id", at)
        if not isinstance(obj.get("output"), str):
            raise imp.unsupported("function_call_output with content parts", f"{at}.output")
        return ToolResult(
            call_id=call_id,
            tool_name=self.call_names.get(call_id, ""),
            content=imp.text_bytes(obj["output"]),
        )

    def tools(self, body: dict[str, Any], at: str) -> tuple[imp.Tool, ...]:
        """Return the plain function tools; anything else is refused."""
        raw = body.get("tools")
        if raw is None:
            return ()
        if not isinstance(raw, list):
            raise imp.bad("expected an array", f"{at}.tools")
        tools = []
        for index, item in enumerate(raw):
            where = f"{at}.tools[{index}]"
            tool = imp.need_obj(item, where)
            if tool.get("type") != "function":
                raise imp.unsupported(f"{tool.get('type')} tool", where)
            unknown = [key for key in tool if key not in _TOOL_KEYS]
            if unknown:
                raise imp.unsupported(f"tool field {unknown[0]!r}", f"{where}.{unknown[0]}")
            name, description = tool.get("name"), tool.get("description")
            schema, strict = tool.get("parameters"), tool.get("strict")
            tools.append(imp.make_tool(name, description, schema, where, strict))
        return tuple(tools)

    def params(self, body: dict[str, Any], at: str) -> Params:
        """Return the parameters; unmodeled fields go to ``extra`` in body order."""
        store = body.get("store")
        if store is not None and not isinstance(store, bool):
            raise imp.bad("expected a boolean", f"{at}.store")
        if store is True:
            self.note(f"{at}.store: store: true sent as false (llmcore replays statelessly)")
        choice = body.get("tool_choice")
        tool_choice = _import_choice(choice)
        extra = imp.extra_fields(body, _MODELED, at)
        if choice is not None and tool_choice is None:
            extra.append(("tool_choice", imp.json_text(choice, f"{at}.tool_choice")))
        return imp.make_params(
            body,
            at,
            max_tokens_key="max_output_tokens",
            stop_key=_NO_STOP,
            tool_choice=tool_choice,
            cache=("breakpoints", "5m"),
            extra=extra,
        )


def _import_choice(choice: Any) -> imp.ToolChoice | None:
    if choice in ("auto", "none"):
        return choice  # type: ignore[no-any-return]
    if choice == "required":
        return "any"
    if isinstance(choice, dict) and set(choice) == {"type", "name"}:
        if choice["type"] == "function" and isinstance(choice["name"], str):
            return ToolChoiceName(name=choice["name"])
    return None


# --- Response side: JSON and event-stream decoding, usage, stop reason, errors -----------------
# (https://platform.openai.com/docs/api-reference/responses/object,
# https://platform.openai.com/docs/api-reference/responses-streaming)

ENDPOINT: Final = Endpoint(
    base_url="https://api.openai.com",
    path="/v1/responses",
    api_key_env="OPENAI_API_KEY",
    auth="bearer",
)
"""The Responses endpoint."""

_NAME: Final = "openai-responses"


@dataclass(slots=True)
class _Output:
    """What the output items of one response give."""

    content: list[Text | ToolCall] = field(default_factory=list)
    raw_items: list[str] = field(default_factory=list)
    reasoning: bool = False
    notes: list[str] = field(default_factory=list)
    searches: int = 0


def _need_str(item: dict[str, Any], key: str, at: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise ResponseParseError(f"{at}.{key} must be a string", provider=_NAME)
    return value


def _message_item(item: dict[str, Any], at: str, out: _Output) -> None:
    parts = item.get("content") or []
    if not isinstance(parts, list):
        raise ResponseParseError(f"{at}.content must be an array", provider=_NAME)
    for index, part in enumerate(parts):
        where = f"{at}.content[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("output_text", "refusal"):
            text = _need_str(part, "text" if kind == "output_text" else "refusal", where)
            out.content.extend([Text(text=text)] if text else [])
        else:
            out.notes.append(f"{where}: left out a {kind!r} part")


def _output_item(item: Any, raw: str, at: str, out: _Output) -> None:
    """Add one output item: text, a tool call, a carried reasoning item, or a note."""
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        raise ResponseParseError(f"{at} must be an object with a type", provider=_NAME)
    kind = item["type"]
    out.raw_items.append(raw)
    if kind == "message":
        _message_item(item, at, out)
    elif kind in ("function_call", "custom_tool_call"):
        raw_args = _need_str(item, "arguments" if kind == "function_call" else "input", at)
        call_id, name = _need_str(item, "call_id", at), _need_str(item, "name", at)
        arguments = clean_text(raw_args).encode("utf-8")
        out.content.append(ToolCall(id=call_id, name=name, arguments=arguments))
    elif kind == "reasoning":
        out.reasoning = True
    else:
        out.searches += kind == "web_search_call"
        out.notes.append(f"{at}: left out a {kind} item (provider-only, M4)")


def parse_response_body(body: bytes) -> ParsedResponse:
    """Parse a non-streamed Responses body (status 200).

    Raises:
        ResponseParseError: Not JSON, no ``output`` array, or malformed items.
        APIStatusError: A ``failed`` response, or an error object.
    """
    obj = pc.load_object(body, _NAME, "response body")
    if "output" not in obj and isinstance(obj.get("error"), dict):
        raise _error_event(obj, obj)
    out = _Output()
    for index, item in enumerate(pc.need_list(obj, "output", _NAME, "$")):
        begin, end = find_span(body, ("output", index))
        _output_item(item, body[begin:end].decode("utf-8"), f"$.output[{index}]", out)
    return _finish(obj, out)


def _finish(obj: dict[str, Any], out: _Output) -> ParsedResponse:
    status = obj.get("status")
    if status == "failed":
        raise _error_event(obj.get("error") or {}, obj)
    details = obj.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    raw_stop = reason if status == "incomplete" and isinstance(reason, str) else status
    has_calls = any(isinstance(p, ToolCall) for p in out.content)
    usage = obj.get("usage")
    return ParsedResponse(
        content=tuple(out.content),
        carry=tuple(out.raw_items) if out.reasoning else (),
        stop_reason=map_status(status if isinstance(status, str) else None, reason, has_calls),
        raw_stop_reason=raw_stop if isinstance(raw_stop, str) else None,
        usage=parse_usage(usage if isinstance(usage, dict) else {}, out.searches),
        model=obj.get("model") if isinstance(obj.get("model"), str) else None,
        response_id=obj.get("id") if isinstance(obj.get("id"), str) else None,
        notes=tuple(out.notes),
    )


_TERMINAL: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})
_STARTS: Final = frozenset({"response.created", "response.in_progress", "response.queued"})
_IGNORED: Final = (
    "response.output_item.added",
    "response.content_part.",
    "response.output_text.",
    "response.refusal.",
    "response.function_call_arguments.",
    "response.custom_tool_call_input.",
    "response.reasoning_summary_part.",
    "response.reasoning_summary_text.",
    "response.reasoning_text.",
    "response.web_search_call.",
    "response.file_search_call.",
    "response.code_interpreter_call",
    "response.image_generation_call.",
    "response.mcp_",
    "response.audio.",
)


class ResponsesStreamParser:
    """Builds a :class:`ParsedResponse` from Responses stream events.

    Items come from ``response.output_item.done`` (each complete; a carried reasoning item is
    the exact text of ``item`` in the event's data), status and usage from the terminal
    ``response.completed`` / ``response.incomplete`` event (``response.failed`` and ``error``
    raise). Delta events are checked for type and otherwise skipped: the done item holds the
    same text and arguments.
    """

    def __init__(self) -> None:
        self._items: dict[int, tuple[Any, str]] = {}
        self._final: dict[str, Any] | None = None
        self._final_raw = b""

    def feed(self, event: SSEEvent) -> None:
        """Take the next event.

        Raises:
            ResponseParseError: Invalid JSON, an unknown event type, or events after the end.
            APIStatusError: An ``error`` event or ``response.failed``.
        """
        data = pc.load_object(event.data, _NAME, f"event {event.event!r}")
        kind = data.get("type")
        if kind == "error":
            raise _error_event(data, data)
        if self._final is not None:
            raise ResponseParseError(f"event {kind!r} after the response ended", provider=_NAME)
        if kind in _TERMINAL:
            self._final = pc.need_obj(data, "response", _NAME, str(kind))
            self._final_raw = event.data.encode("utf-8")
        elif kind == "response.output_item.done":
            index = pc.need_int(data, "output_index", _NAME, kind)
            raw = event.data.encode("utf-8")
            begin, end = find_span(raw, ("item",))
            self._items[index] = (data.get("item"), raw[begin:end].decode("utf-8"))
        elif kind not in _STARTS and not str(kind).startswith(_IGNORED):
            raise ResponseParseError(f"unknown stream event type {kind!r}", provider=_NAME)

    def finish(self) -> ParsedResponse:
        """Return the response.

        Raises:
            ResponseParseError: The stream ended before its terminal event (truncated).
            APIStatusError: The response failed.
        """
        if self._final is None:
            raise ResponseParseError(
                "event stream ended before response.completed (truncated)", provider=_NAME
            )
        pairs = [self._items[i] for i in sorted(self._items)]
        if not pairs:
            output = self._final.get("output") or []
            for index, item in enumerate(output if isinstance(output, list) else []):
                begin, end = find_span(self._final_raw, ("response", "output", index))
                pairs.append((item, self._final_raw[begin:end].decode("utf-8")))
        out = _Output()
        for index, (item, raw) in enumerate(pairs):
            _output_item(item, raw, f"output[{index}]", out)
        return _finish(self._final, out)


def parse_usage(usage: dict[str, Any], web_searches: int = 0) -> Usage:
    """Normalize a Responses ``usage`` object (PROVIDER-RULES §2.2).

    ``input_tokens`` includes ``input_tokens_details.cached_tokens`` and, where reported,
    ``cache_write_tokens``; both are taken out so ``input`` is uncached input.
    ``web_searches`` is the number of ``web_search_call`` items (Responses usage has no count).

    Raises:
        ResponseParseError: A count is not a non-negative integer.
    """
    details = usage.get("input_tokens_details")
    details = details if isinstance(details, dict) else None
    total = pc.opt_int(usage, "input_tokens", _NAME, "usage")
    read = pc.opt_int(details, "cached_tokens", _NAME, "usage.input_tokens_details")
    write = pc.opt_int(details, "cache_write_tokens", _NAME, "usage.input_tokens_details")
    return Usage(
        input=max(0, total - read - write),
        output=pc.opt_int(usage, "output_tokens", _NAME, "usage"),
        cache_read=read,
        cache_write=write,
        web_search_requests=web_searches,
    )


def map_status(status: str | None, reason: str | None, has_calls: bool) -> StopReason:
    """Map a response ``status`` (and ``incomplete_details.reason``) to a :data:`StopReason`.

    ``completed`` → ``tool_use`` when it has function calls, else ``end_turn``;
    ``incomplete`` → ``max_tokens`` (``max_output_tokens``) or ``refusal``
    (``content_filter``); anything else (``queued``, ``in_progress``, ``cancelled``) → ``other``.
    """
    if status == "completed":
        return "tool_use" if has_calls else "end_turn"
    if status == "incomplete":
        return {"max_output_tokens": "max_tokens", "content_filter": "refusal"}.get(
            reason or "", "other"
        )  # type: ignore[return-value]
    return "other"


_CODE_STATUS: Final = {
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "invalid_prompt": 400,
    "invalid_request_error": 400,
}


def _error_event(error: dict[str, Any], whole: dict[str, Any]) -> APIStatusError:
    """Return the error an ``error`` event, an error object or a failed response stands for."""
    inner = error.get("error") if isinstance(error.get("error"), dict) else error
    assert isinstance(inner, dict)
    code = inner.get("code") if isinstance(inner.get("code"), str) else inner.get("type")
    message = inner.get("message")
    return pc.api_error(
        provider=_NAME,
        status=_CODE_STATUS.get(code if isinstance(code, str) else "", 500),
        body=jsonbytes.dumps(whole),
        headers={},
        error_type=code if isinstance(code, str) else None,
        message=f"error in a 200 response: {message if isinstance(message, str) else '?'}",
        request_id=None,
    )


def error_from_body(status: int, body: bytes, headers: Mapping[str, str]) -> APIStatusError:
    """Return the typed error for an HTTP error status (the Chat error shape; never raises)."""
    try:
        obj: Mapping[str, Any] = pc.load_object(body, _NAME, "error body")
    except ResponseParseError:
        obj = {}
    error = obj.get("error")
    error = error if isinstance(error, dict) else {}
    kind = error.get("type") if isinstance(error.get("type"), str) else error.get("code")
    message = error.get("message")
    return pc.api_error(
        provider=_NAME,
        status=status,
        body=body,
        headers=headers,
        error_type=kind if isinstance(kind, str) else None,
        message=message if isinstance(message, str) else None,
        request_id=pc.header(headers, "x-request-id"),
    )


PROVIDER: Final = OpenAIResponsesProvider(
    ResponseSide(
        endpoint=ENDPOINT,
        parse=parse_response_body,
        stream=ResponsesStreamParser,
        error=error_from_body,
    )
)
"""The registered instance."""
