"""Named normalizations of recorded Bedrock Converse bodies (class (b) of the corpus).

As :mod:`tests.corpus_tests.normalize`: each is a function of an order-preserving parse
(:class:`~tests.corpus_tests.normalize.Obj` trees) saying what llmcore's Converse encoder does
differently and why (``llmcore/providers/bedrock_converse/encode.py``).
"""

from __future__ import annotations

import json
from typing import Any

from tests.corpus_tests.normalize import Obj, messages, walk


def _is_point(value: Any) -> bool:
    return isinstance(value, Obj) and [k for k, _ in value] == ["cachePoint"]


def strip_cache_points(body: Obj) -> Obj:
    """Delete every ``{"cachePoint": …}`` block (system, tools, message content)."""
    return walk(body, lambda v: [x for x in v if not _is_point(x)] if type(v) is list else v)


def empty_top_members(body: Obj) -> Obj:
    """Drop an empty ``system`` array and an empty ``inferenceConfig`` object."""
    drop = [k for k, v in body if k in ("system", "inferenceConfig") and v in ([], Obj())]
    return body.without(*drop)


def _result(value: Any, fn: Any) -> Any:
    if isinstance(value, Obj) and [k for k, _ in value] == ["toolResult"]:
        return Obj([("toolResult", fn(value.get("toolResult")))])
    return value


def status_success(body: Obj) -> Obj:
    """Drop ``"status": "success"`` from tool results (only ``error`` is sent)."""

    def fix(result: Obj) -> Obj:
        return result.without("status") if result.get("status") == "success" else result

    return walk(body, lambda v: _result(v, fix))


def _plain(value: Any) -> Any:
    if isinstance(value, Obj):
        return {k: _plain(v) for k, v in value}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def result_text(body: Obj) -> Obj:
    """Tool result content as one text block: ``json`` parts as compact JSON, texts joined."""

    def fix(result: Obj) -> Obj:
        content = result.get("content")
        if not isinstance(content, list):
            return result
        texts = []
        for part in content:
            if isinstance(part, Obj) and part.has("json"):
                value = _plain(part.get("json"))
                texts.append(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
            elif isinstance(part, Obj):
                texts.append(part.get("text", ""))
        joined = "".join(texts)
        return result.replaced("content", [Obj([("text", joined)])] if joined else [])

    return walk(body, lambda v: _result(v, fix))


def drop_reasoning(body: Obj) -> Obj:
    """Drop ``reasoningContent`` blocks (provider-only data, M4)."""

    def keep(block: Any) -> bool:
        return not (isinstance(block, Obj) and block.has("reasoningContent"))

    def fix(items: list[Any]) -> list[Any]:
        return [
            m.replaced("content", [b for b in m.get("content", []) if keep(b)])
            if isinstance(m, Obj)
            else m
            for m in items
        ]

    return messages(body, "messages", fix)


def drop_empty_text(body: Obj) -> Obj:
    """Drop ``{"text": ""}`` blocks from message content (never sent: the API refuses them)."""

    def fix(items: list[Any]) -> list[Any]:
        return [
            m.replaced("content", [b for b in m.get("content", []) if b != Obj([("text", "")])])
            if isinstance(m, Obj)
            else m
            for m in items
        ]

    return messages(body, "messages", fix)
