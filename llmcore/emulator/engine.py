"""The emulator's request handling, free of HTTP: parse, validate, account, reply (SPEC V2).

:class:`Engine` holds the state one emulator shares across clients — the clock, the script,
both caches, stored Responses for ``previous_response_id`` — and turns a request body into a
:class:`Prepared` answer. The cache entries a request writes are committed by
:meth:`Prepared.commit`, which the server calls when the response starts (PROVIDER-RULES §1.2:
an entry is usable only after the first response that wrote it has begun).
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.agent import AGENT_SCRIPT
from llmcore.emulator.anthropic_cache import AnthropicCache
from llmcore.emulator.anthropic_validate import validate_anthropic
from llmcore.emulator.anthropic_wire import anthropic_turn, message_body, message_events
from llmcore.emulator.batches import BatchStore
from llmcore.emulator.chat_wire import chat_body, chat_events, chat_turn
from llmcore.emulator.clock import Clock, SystemClock
from llmcore.emulator.common import make_id
from llmcore.emulator.errors import Rejection, Shape
from llmcore.emulator.limits import ANTHROPIC_MAX_BODY
from llmcore.emulator.objects_api import ConversationStore
from llmcore.emulator.openai_cache import OpenAICache
from llmcore.emulator.openai_validate import validate_chat, validate_responses
from llmcore.emulator.params import obey
from llmcore.emulator.responses_wire import (
    output_items,
    response_events,
    response_object,
    responses_turn,
    responses_usage,
)
from llmcore.emulator.scan import Spans, scan_body
from llmcore.emulator.script import Script
from llmcore.emulator.store import DEFAULT_CACHE_BYTES, MemoryBudget, ResponseStore
from llmcore.emulator.thinking import check_thinking, thinking_on, thinking_text

__all__ = ["ANTHROPIC_MAX_BODY", "Engine", "Prepared", "parse_body"]

RESPONSE_ITEM_BYTES = 256
"""Estimated bytes of one stored Responses item besides twice its compact JSON length."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """An accepted request: its answer, and the cache writes to commit when it starts."""

    stream: bool
    """Whether to answer with server-sent events."""
    body: bytes
    """The JSON response body (non-streamed)."""
    events: list[bytes] = field(default_factory=list)
    """The SSE events (streamed)."""
    commit: Callable[[], None] = field(default=lambda: None)
    """Makes the request's cache entries visible; call when the response starts."""


_PARSE_ERROR: Final[dict[Shape, str]] = {
    "anthropic": "There was an error parsing the body",
    "openai": "We could not parse the JSON body of your request.",
}
"""Each API's message for a body it cannot parse (PROVIDER-RULES §1.10, §2.3)."""
_TOO_DEEP: Final[dict[Shape, str]] = {
    shape: f"{text} (the JSON is nested too deeply)" for shape, text in _PARSE_ERROR.items()
}

_LONE_ESCAPE: Final = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
"""A ``\\uD800``-``\\uDFFF`` escape that may be unpaired (a cheap filter; the walk confirms)."""
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _path(shape: Shape, path: tuple[str | int, ...]) -> str:
    """Write a JSON path as the API does (``messages.0.content`` / ``messages[0].content``)."""
    if shape == "anthropic":
        return ".".join(str(part) for part in path)
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def _lone_surrogate(value: Any) -> tuple[tuple[str | int, ...], str] | None:
    """Return the path and text of the first string (or key) holding a lone surrogate."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return path, node
        elif isinstance(node, dict):
            for key, item in reversed(node.items()):
                if _SURROGATE.search(key):
                    return (*path, key), key
                stack.append((item, (*path, key)))
        elif isinstance(node, list):
            stack.extend((item, (*path, i)) for i, item in reversed(list(enumerate(node))))
    return None


def parse_body(raw: bytes, shape: Shape) -> tuple[Any, Spans]:
    r"""Parse a request body; refuse what the real API cannot parse.

    A string holding an unpaired surrogate escape (``"\ud800"``) has no UTF-8 form: the
    body is refused with 400 ``invalid_request_error`` naming the JSON path, as the real APIs
    refuse text that is not valid Unicode.

    Raises:
        Rejection: Not UTF-8 JSON, nested deeper than the parser allows, or a lone surrogate.
    """
    try:
        parsed, spans = scan_body(raw)
    except ValueError as exc:
        raise Rejection(_PARSE_ERROR[shape]) from exc
    except RecursionError:
        raise Rejection(_TOO_DEEP[shape]) from None
    if _LONE_ESCAPE.search(raw):
        found = _lone_surrogate(parsed)
        if found is not None:
            path, text = found
            where = _path(shape, path) or "$"
            code = _SURROGATE.search(text)
            assert code is not None
            problem = f"lone surrogate \\u{ord(code.group()):04x} is not valid Unicode"
            if shape == "anthropic":
                raise Rejection(f"{_PARSE_ERROR[shape]}: {where}: {problem}")
            raise Rejection(f"Invalid '{where}': {problem}.", param=where)
    return parsed, spans


def _guarded(
    shape: Shape, handle: Callable[[bytes, str], Prepared], raw: bytes, org: str
) -> Prepared:
    """Run ``handle``; a body nested too deeply for the walkers becomes a 400, not a crash.

    Parsing accepts what :mod:`json` accepts (about 1,000 levels, Python's recursion limit);
    validating and measuring walk the parsed value recursively, so a body nested a few hundred
    levels deep can exhaust the stack there. Nothing is committed before the answer starts, so
    refusing here leaves the caches unchanged.

    Raises:
        Rejection: From ``handle``, or 400 ``invalid_request_error`` for the nesting.
    """
    try:
        return handle(raw, org)
    except RecursionError:
        raise Rejection(_TOO_DEEP[shape]) from None


class Engine:
    """State shared by every client of one emulator.

    Args:
        clock: The time source for cache expiry and ``created`` fields.
        script: The scripted model.
        cache_bytes: Memory budget in bytes (estimated) shared by both caches and the stored
            Responses; least recently used entries are evicted beyond it (a deviation from the
            real providers, see :mod:`llmcore.emulator.store`).

    Raises:
        ValueError: ``cache_bytes`` is not positive.
    """

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        script: Script | None = None,
        cache_bytes: int = DEFAULT_CACHE_BYTES,
    ) -> None:
        self.clock: Clock = clock or SystemClock()
        self.script: Script = script or AGENT_SCRIPT
        self.budget = MemoryBudget(cache_bytes)
        self.anthropic = AnthropicCache(self.budget)
        self.openai = OpenAICache(self.budget)
        self.stored_responses = ResponseStore(self.budget)
        """Responses by id (``previous_response_id``, ``GET /v1/responses/{id}``)."""
        self.conversations = ConversationStore(self.budget)
        """The Conversations API's conversations."""
        self.batches = BatchStore(self.budget)
        """Anthropic Message Batches."""
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.counts: dict[str, int] = {"requests": 0, "rejected": 0}

    def request_id(self) -> str:
        """Return a fresh ``req_…`` id (sequential, so runs are reproducible)."""
        with self._lock:
            number = next(self._ids)
            self.counts["requests"] += 1
        return f"req_emu_{number:020d}"

    def rejected(self) -> None:
        """Count a refused request."""
        with self._lock:
            self.counts["rejected"] += 1

    def reset(self) -> None:
        """Forget every cache entry, stored response, conversation and batch."""
        self.anthropic.store.clear()
        self.openai.store.clear()
        self.stored_responses.clear()
        self.conversations.clear()
        self.batches.clear()

    def anthropic_messages(
        self, raw: bytes, org: str, betas: frozenset[str] = frozenset()
    ) -> Prepared:
        """Answer ``POST /v1/messages``.

        Args:
            raw: The request body bytes.
            org: The organization (the API key sent); caches are per organization.
            betas: The ``anthropic-beta`` header's values; beta features the validator knows
                (:data:`~llmcore.emulator.anthropic_validate.BETA_SYSTEM_MESSAGES`) are
                accepted only when named here, as the real API does.

        Raises:
            Rejection: The request breaks a Messages API rule, or is nested too deeply.
        """

        def handle(raw: bytes, org: str) -> Prepared:
            return self._anthropic_messages(raw, org, betas)

        return _guarded("anthropic", handle, raw, org)

    def _anthropic_messages(self, raw: bytes, org: str, betas: frozenset[str]) -> Prepared:
        parsed, spans = parse_body(raw, "anthropic")
        body = validate_anthropic(parsed, betas)
        check_thinking(body, raw)
        plan = self.anthropic.plan(body, org, self.clock.now(), spans)
        turn = anthropic_turn(body)
        reply = self.script.reply_to("anthropic", body, turn.first_user_text, turn.index)
        reply = obey("anthropic", body, reply)
        if thinking_on(body):
            reply = replace(reply, thinking=thinking_text(turn.first_user_text))
        ident = make_id("msg_emu_", turn.seed, "message", turn.index)
        model = body["model"]

        def commit() -> None:
            self.anthropic.commit(plan, self.clock.now())

        if body.get("stream"):
            events = message_events(reply, turn, plan.usage, model, ident)
            return Prepared(stream=True, body=b"", events=events, commit=commit)
        data = message_body(reply, turn, plan.usage, model, ident)
        return Prepared(stream=False, body=data, commit=commit)

    def chat_completions(self, raw: bytes, org: str) -> Prepared:
        """Answer ``POST /v1/chat/completions``.

        Raises:
            Rejection: The request breaks a Chat Completions rule, or is nested too deeply.
        """
        return _guarded("openai", self._chat_completions, raw, org)

    def _chat_completions(self, raw: bytes, org: str) -> Prepared:
        parsed, spans = parse_body(raw, "openai")
        body = validate_chat(parsed)
        now = self.clock.now()
        plan = self.openai.plan("chat", body, [], org, now, spans)
        turn = chat_turn(body)
        reply = self.script.reply_to("chat", body, turn.first_user_text, turn.index)
        reply = obey("chat", body, reply)
        n = body.get("n") or 1
        ident = make_id("chatcmpl-emu", raw, "chat")

        def commit() -> None:
            self.openai.commit(plan, self.clock.now())

        if body.get("stream"):
            options = body.get("stream_options") or {}
            usage = bool(options.get("include_usage")) if isinstance(options, dict) else False
            events = chat_events(reply, turn, plan, body["model"], ident, int(now), usage, n)
            return Prepared(stream=True, body=b"", events=events, commit=commit)
        data = chat_body(reply, turn, plan, body["model"], ident, int(now), n)
        return Prepared(stream=False, body=jsonbytes.dumps(data), commit=commit)

    def history(self, body: Any) -> tuple[list[Any], int]:
        """Return the items a Responses body continues and their estimated bytes.

        They are the items stored under ``previous_response_id``, or the items of
        ``conversation`` (:mod:`llmcore.emulator.objects_api`); the two are mutually exclusive.

        Raises:
            Rejection: Both given; or an unknown response (400 ``previous_response_not_found``)
                or conversation (404).
        """
        if not isinstance(body, dict):
            return [], 0
        previous = body.get("previous_response_id")
        conversation = _conversation_id(body)
        if previous is not None and conversation is not None:
            raise Rejection(
                "Mutually exclusive parameters: Ensure you are only providing one of: "
                "'previous_response_id' or 'conversation'.",
                param=None,
                code="mutually_exclusive_parameters",
            )
        if conversation is not None:
            return self.conversations.items(conversation), 0
        if previous is None:
            return [], 0
        stored = self.stored_responses.get(str(previous))
        if stored is None:  # never stored, or evicted (store.py)
            raise Rejection(
                f"Previous response with id '{previous}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        return stored

    def responses(self, raw: bytes, org: str) -> Prepared:
        """Answer ``POST /v1/responses``.

        Raises:
            Rejection: The request breaks a Responses rule, is nested too deeply, or names an
                unknown ``previous_response_id`` or ``conversation``.
        """
        return _guarded("openai", self._responses_turn, raw, org)

    def _responses_turn(self, raw: bytes, org: str) -> Prepared:
        parsed, spans = parse_body(raw, "openai")
        history, history_bytes = self.history(parsed)
        body = validate_responses(parsed, history)
        now = self.clock.now()
        plan = self.openai.plan("responses", body, history, org, now, spans)
        turn = responses_turn(body, history)
        reply = self.script.reply_to("responses", body, turn.first_user_text, turn.index)
        reply = obey("responses", body, reply)
        ident = make_id("resp_emu_", raw, "response", length=32)
        output = output_items(reply, turn)
        usage = responses_usage(plan, reply.output_tokens)
        data = response_object(body, ident, int(now), output, usage)
        self._keep(body, ident, history, history_bytes, output, data)

        def commit() -> None:
            self.openai.commit(plan, self.clock.now())

        if body.get("stream"):
            events = response_events(body, ident, int(now), output, usage)
            return Prepared(stream=True, body=b"", events=events, commit=commit)
        return Prepared(stream=False, body=jsonbytes.dumps(data), commit=commit)

    def _keep(
        self,
        body: dict[str, Any],
        ident: str,
        history: list[Any],
        history_bytes: int,
        output: list[Any],
        data: dict[str, Any],
    ) -> None:
        """Store the response (``store`` not false) and extend its conversation, if any."""
        given = body.get("input", [])
        # a string input is stored as the item it was measured as (openai_items), so a
        # continuation by previous_response_id shares its prefix (it is a user message)
        inputs = [given] if isinstance(given, str) else list(given)
        conversation = _conversation_id(body)
        if conversation is not None:
            data["conversation"] = {"id": conversation}
            self.conversations.append(conversation, inputs + output)
        if body.get("store", True):
            new = inputs + output
            size = history_bytes + sum(
                RESPONSE_ITEM_BYTES + 2 * len(jsonbytes.dumps(item)) for item in new
            )
            self.stored_responses.put(ident, history + new, size, data, len(history) + len(inputs))


def _conversation_id(body: dict[str, Any]) -> str | None:
    """Return the id a Responses body's ``conversation`` names (a string or ``{"id": …}``)."""
    value = body.get("conversation")
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) else None
