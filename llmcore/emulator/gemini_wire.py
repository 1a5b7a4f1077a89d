"""Gemini ``generateContent`` in the emulator: the service and its responses (SPEC V2).

:class:`GeminiService` answers ``generateContent`` / ``streamGenerateContent`` (AI Studio
``/v1beta/models/{model}:…`` and Vertex AI ``/v1/projects/{p}/locations/{l}/publishers/google/
models/{model}:…``) and the ``cachedContents`` calls; :mod:`llmcore.emulator.gemini_routes`
puts them on HTTP.

Responses (https://ai.google.dev/api/generate-content#v1beta.GenerateContentResponse): one
candidate whose ``content`` (role ``model``) holds the scripted reply's text part and one
``functionCall`` part per tool call (``id``, ``name``, ``args``), ``finishReason: "STOP"``;
``usageMetadata`` with ``promptTokenCount`` (cached tokens included), ``candidatesTokenCount``,
``totalTokenCount`` and, when the cache was read, ``cachedContentTokenCount``; then
``modelVersion`` and ``responseId``. A stream sends the text in pieces (one chunk each, with
usage so far), then the calls and ``finishReason`` in the last chunk, as ``data:`` events with no
terminator (``alt=sse``).
"""

from __future__ import annotations

import datetime
from dataclasses import replace
from typing import Any, Final

from llmcore import jsonbytes
from llmcore.emulator.clock import Clock
from llmcore.emulator.common import make_id, pieces
from llmcore.emulator.engine import Prepared, parse_body
from llmcore.emulator.errors import Rejection
from llmcore.emulator.gemini_cache import CachedContents, GeminiCache, GeminiPlan
from llmcore.emulator.gemini_validate import camel_get, validate_gemini
from llmcore.emulator.prefix import item_bytes
from llmcore.emulator.script import NO_TOOLS_TEXT, Reply, Script
from llmcore.emulator.store import MemoryBudget
from llmcore.emulator.tokencount import text_tokens as estimate_tokens

__all__ = ["GeminiService", "rfc3339"]

_FUNCTION_MODES: Final = ("ANY", "NONE")


def rfc3339(seconds: float) -> str:
    """Return a UTC time as the API writes it (``2026-12-02T05:00:00.000000Z``)."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _first_user_text(contents: list[Any]) -> str:
    for content in contents:
        if content.get("role", "user") == "user":
            texts = [p["text"] for p in content["parts"] if isinstance(p.get("text"), str)]
            if texts:
                return texts[0] if len(texts) == 1 else "\n".join(texts)
    return ""


def _obey(body: dict[str, Any], reply: Reply) -> Reply:
    """Apply ``toolConfig.functionCallingConfig.mode``: ``NONE`` drops calls, ``ANY`` forces."""
    config = camel_get(body.get("toolConfig") or {}, "functionCallingConfig") or {}
    mode = config.get("mode")
    if mode == "NONE" and reply.tool_calls:
        return Reply(text=reply.text or NO_TOOLS_TEXT)
    names = camel_get(config, "allowedFunctionNames")
    if mode == "ANY" and reply.tool_calls and isinstance(names, list) and names:
        allowed = [c for c in reply.tool_calls if c.name in names]
        if not allowed:
            allowed = [replace(reply.tool_calls[0], name=str(names[0]))]
        return replace(reply, tool_calls=tuple(allowed))
    return reply


class GeminiService:
    """The Gemini side of one emulator: implicit and explicit caches, and the answers."""

    def __init__(self, clock: Clock, script: Script, budget: MemoryBudget) -> None:
        self.clock = clock
        self.script = script
        self.implicit = GeminiCache(budget)
        self.caches = CachedContents()

    def reset(self) -> None:
        """Forget every implicit entry and explicit cache."""
        self.implicit.store.clear()
        self.caches.clear()

    def generate(self, raw: bytes, model: str, org: str, stream: bool) -> Prepared:
        """Answer one ``generateContent`` request.

        Raises:
            Rejection: The body breaks a rule (:mod:`~llmcore.emulator.gemini_validate`), or
                names an unknown or expired cache, or a cache of another model.
        """
        parsed, spans = parse_body(raw, "openai")
        body = validate_gemini(parsed)
        now = self.clock.now()
        explicit = None
        name = body.get("cachedContent")
        if isinstance(name, str):
            explicit = self.caches.get(name, org, now)
            if explicit.model.removeprefix("models/") != model.removeprefix("models/"):
                raise Rejection(
                    "Model used by GenerateContent request and CachedContent has to be the same.",
                    error_type="INVALID_ARGUMENT",
                )
        plan = self.implicit.plan(body, model, org, now, spans, explicit)
        contents = [*(explicit.contents if explicit else []), *body["contents"]]
        tools = bool(body.get("tools") or (explicit and explicit.head.get("tools")))
        index = sum(1 for c in contents if c.get("role") == "model")
        reply = self.script.reply_for(_first_user_text(contents), index, tools_offered=tools)
        reply = _obey(body, reply)
        seed = item_bytes(contents[0])
        ident = make_id("", seed, "gemini", index, length=20)

        def commit() -> None:
            self.implicit.commit(plan, self.clock.now())

        if stream:
            events = self._events(reply, plan, model, ident, seed, index)
            return Prepared(stream=True, body=b"", events=events, commit=commit)
        data = self._response(reply, plan, model, ident, seed, index, reply.text)
        return Prepared(stream=False, body=jsonbytes.dumps(data), commit=commit)

    def _calls(self, reply: Reply, seed: bytes, index: int) -> list[dict[str, Any]]:
        out = []
        for number, call in enumerate(reply.tool_calls):
            args: Any = (
                jsonbytes.Raw(call.arguments)
                if jsonbytes.is_json_object(call.arguments.encode())
                else {}
            )
            ident = make_id("", seed, "call", index, number, length=8)
            out.append({"functionCall": {"id": ident, "name": call.name, "args": args}})
        return out

    def _response(
        self,
        reply: Reply,
        plan: GeminiPlan,
        model: str,
        ident: str,
        seed: bytes,
        index: int,
        text: str,
        *,
        calls: bool = True,
        finished: bool = True,
        output: int | None = None,
    ) -> dict[str, Any]:
        parts: list[Any] = [{"text": text}] if text else []
        if calls:
            parts.extend(self._calls(reply, seed, index))
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}}
        if finished:
            candidate["finishReason"] = "STOP"
        candidate["index"] = 0
        produced = output if output is not None else _output_tokens(reply)
        usage: dict[str, Any] = {"promptTokenCount": plan.prompt_tokens}
        usage["candidatesTokenCount"] = produced
        usage["totalTokenCount"] = plan.prompt_tokens + produced
        if plan.cached_tokens:
            usage["cachedContentTokenCount"] = plan.cached_tokens
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": model.removeprefix("models/"),
            "responseId": ident,
        }

    def _events(
        self, reply: Reply, plan: GeminiPlan, model: str, ident: str, seed: bytes, index: int
    ) -> list[bytes]:
        chunks = pieces(reply.text) or [""]
        events, sent = [], 0
        for number, piece in enumerate(chunks):
            last = number == len(chunks) - 1
            sent += estimate_tokens(piece)
            data = self._response(
                reply,
                plan,
                model,
                ident,
                seed,
                index,
                piece,
                calls=last,
                finished=last,
                output=_output_tokens(reply) if last else sent,
            )
            events.append(b"data: " + jsonbytes.dumps(data) + b"\r\n\r\n")
        return events

    def cached_contents(self, method: str, name: str | None, raw: bytes, org: str) -> bytes:
        """Answer a ``cachedContents`` call: create (POST), get / list (GET), patch, delete.

        Raises:
            Rejection: Bad body, unknown cache, or a method the path does not take.
        """
        now = self.clock.now()
        if name is None and method == "POST":
            parsed, _ = parse_body(raw, "openai")
            return self._resource(self.caches.create(parsed, org, now))
        if name is None and method == "GET":
            listed = [c.resource(rfc3339) for c in self.caches.list(org, now)]
            return jsonbytes.dumps({"cachedContents": listed} if listed else {})
        if name is not None and method == "GET":
            return self._resource(self.caches.get(name, org, now))
        if name is not None and method == "PATCH":
            parsed, _ = parse_body(raw, "openai")
            return self._resource(self.caches.patch(name, org, parsed, now))
        if name is not None and method == "DELETE":
            self.caches.delete(name, org, now)
            return b"{}"
        raise Rejection("Method not allowed", status=405, error_type="INVALID_ARGUMENT")

    def _resource(self, cache: Any) -> bytes:
        return jsonbytes.dumps(cache.resource(rfc3339))


def _output_tokens(reply: Reply) -> int:
    calls = sum(estimate_tokens(c.name) + estimate_tokens(c.arguments) for c in reply.tool_calls)
    return max(1, estimate_tokens(reply.text) + calls)
