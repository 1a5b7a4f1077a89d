"""Which provider's wire shape a request body (or its URI) has, and the ``--provider`` warnings.

The shapes are read from the providers' API references (see :mod:`llmcore.audit._shape`, which
re-exports every public name here): Anthropic Messages, OpenAI Chat Completions and Responses,
Gemini ``generateContent`` and Bedrock Converse; the request URI decides when there is one
(:func:`shape_from_uri`), else the body (:func:`body_shape`); a Converse body is never taken for
an Anthropic one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Final
from urllib.parse import unquote, urlsplit

from llmcore.audit._scan import ItemCache, ItemInfo, ScannedBody, scan_body
from llmcore.audit.report import AuditInputError
from llmcore.errors import UnknownProviderError

__all__ = [
    "BEDROCK_INVOKE",
    "PROVIDERS",
    "body_shape",
    "conflict_message",
    "detect_provider",
    "model_from_uri",
    "model_of",
    "note_conflict",
    "shape_conflict",
    "shape_from_uri",
    "wire_conflict",
    "wire_shape",
]


PROVIDERS: Final = (
    "anthropic",
    "openai-chat",
    "openai-responses",
    "openrouter",
    "gemini",
    "bedrock-converse",
)
"""Provider names the auditor understands (SPEC R2), one per wire shape."""

BEDROCK_INVOKE: Final = "bedrock-invoke"
"""What :func:`shape_from_uri` says for ``/model/<id>/invoke``: the body decides (Anthropic's
``anthropic_version`` bodies are audited as ``anthropic``; other models' bodies are skipped)."""

_GEMINI_PATH: Final = re.compile(r"/models/([^/:]+):(?:generateContent|streamGenerateContent)$")
_BEDROCK_PATH: Final = re.compile(
    r"/model/([^/]+)/(converse|converse-stream|invoke|invoke-with-response-stream)$"
)


_ANTHROPIC_BLOCKS: Final = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)
_CHAT_BLOCKS: Final = frozenset({"image_url", "input_audio", "file"})
_RESPONSES_KEYS: Final = frozenset(
    {"input", "instructions", "prompt", "previous_response_id", "conversation"}
)
_ANTHROPIC_KEYS: Final = frozenset(
    {"system", "stop_sequences", "top_k", "thinking", "anthropic_version"}
)
_CONVERSE_KEYS: Final = frozenset(
    {
        "inferenceConfig",
        "toolConfig",
        "additionalModelRequestFields",
        "additionalModelResponseFieldPaths",
        "guardrailConfig",
        "promptVariables",
        "performanceConfig",
        "requestMetadata",
    }
)
"""Top-level members only a Converse request has (``toolConfig`` also in Gemini's, which has
``contents`` instead of ``messages``)."""
_CONVERSE_BLOCKS: Final = frozenset(
    {
        "text",
        "image",
        "document",
        "video",
        "toolUse",
        "toolResult",
        "guardContent",
        "cachePoint",
        "reasoningContent",
        "citationsContent",
    }
)
"""Converse content block members; its blocks have no ``type``, unlike Anthropic's and
OpenAI's."""
_CHAT_KEYS: Final = frozenset(
    {
        "max_completion_tokens",
        "n",
        "response_format",
        "stream_options",
        "logprobs",
        "frequency_penalty",
        "presence_penalty",
        "seed",
        "parallel_tool_calls",
        "reasoning_effort",
        "modalities",
    }
)


def _content(value: Any) -> Any:
    """A message's blocks: ``content`` (Anthropic, OpenAI, Converse) or ``parts`` (Gemini)."""
    if not isinstance(value, dict):
        return None
    return value["content"] if "content" in value else value.get("parts")


def _block_types(value: Any) -> set[str]:
    """Each block's ``type``; for a block without one (Converse, Gemini), its member names."""
    content = _content(value)
    if not isinstance(content, list):
        return set()
    out: set[str] = set()
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if isinstance(kind, str):
            out.add(kind)
        elif kind is None:
            out.update(block)
    return out


def _message_vote(info: ItemInfo) -> int:
    """Return +1 for an Anthropic-only message, -1 for a Chat-only one, 0 when either."""
    vote = info.extra.get("vote")
    if vote is None:
        value = info.parsed()
        types = _block_types(value)
        vote = 0
        if types & _ANTHROPIC_BLOCKS:
            vote = 1
        elif isinstance(value, dict) and (
            value.get("role") in ("system", "developer", "tool", "function")
            or "tool_calls" in value
            or "tool_call_id" in value
            or types & _CHAT_BLOCKS
        ):
            vote = -1
        info.extra["vote"] = vote
    assert isinstance(vote, int)
    return vote


def _tools_vote(body: ScannedBody) -> int:
    for info in body.items.get("tools", ()):
        value = info.parsed()
        if isinstance(value, dict):
            if "input_schema" in value:
                return 1
            if "function" in value or value.get("type") == "function":
                return -1
    return 0


def _messages_vote(body: ScannedBody) -> int:
    for info in body.items.get("messages", ()):
        vote = _message_vote(info)
        if vote:
            return vote
    return 0


def _anthropic_vote(body: ScannedBody) -> bool | None:
    """Whether a ``messages`` body is Anthropic's, by a member or block only one shape has.

    ``None`` when nothing in it tells.
    """
    keys = body.spans.keys()
    if any(k in _ANTHROPIC_KEYS for k in keys):
        return True
    if any(k in _CHAT_KEYS for k in keys):
        return False
    vote = _tools_vote(body) or _messages_vote(body)
    return vote > 0 if vote else None


def _is_anthropic(body: ScannedBody) -> bool:
    vote = _anthropic_vote(body)
    if vote is not None:
        return vote
    model = body.values.get("model")
    # Nothing provider-only in the body: Claude model ids are Anthropic's; anything else is
    # taken as Chat Completions, the shape OpenAI-compatible servers share.
    return isinstance(model, str) and "claude" in model and "/" not in model


def _converse_item(info: ItemInfo, content_key: str | None) -> bool | None:
    """Whether the item's first block is a Converse block (no ``type``, a Converse member).

    ``None`` when it holds no block; cached per item.
    """
    key = f"converse:{content_key}"
    if key not in info.extra:
        value = info.parsed()
        blocks = value.get(content_key) if content_key and isinstance(value, dict) else value
        found = None
        for block in blocks if isinstance(blocks, list) else [blocks]:
            if isinstance(block, dict) and block:
                found = "type" not in block and not block.keys().isdisjoint(_CONVERSE_BLOCKS)
                break
        info.extra[key] = found
    got = info.extra[key]
    assert got is None or isinstance(got, bool)
    return got


def _typeless_block(items: list[ItemInfo], content_key: str | None) -> bool:
    """Whether the first block found is a Converse block."""
    for info in items:
        found = _converse_item(info, content_key)
        if found is not None:
            return found
    return False


def _is_converse(body: ScannedBody) -> bool:
    keys = body.spans.keys()
    if not keys.isdisjoint(_CONVERSE_KEYS):
        return True
    if _typeless_block(body.items.get("system", []), None):
        return True
    return _typeless_block(body.items.get("messages", []), "content")


def body_shape(body: ScannedBody, *, definite: bool = False) -> str | None:
    """Return the provider whose wire shape ``body`` has, or ``None`` when it has none.

    ``contents`` is Gemini's; a Converse member or a content block without ``type`` is
    Converse's (checked before Anthropic's, whose blocks always carry ``type``); then
    Anthropic's (``anthropic_version``, ``system``, …) or Chat Completions' ``messages``, or
    Responses' ``input`` / ``instructions``. OpenRouter bodies read as ``openai-chat``.

    Args:
        body: The scanned body.
        definite: Return ``None`` for a ``messages`` body that nothing marks as Anthropic's or
            Chat Completions' (plain text messages, no provider-only member) instead of
            deciding by the model name.
    """
    keys = body.spans.keys()
    if "contents" in keys:
        return "gemini"
    if _is_converse(body):
        return "bedrock-converse"
    if "messages" not in keys:
        return "openai-responses" if any(k in _RESPONSES_KEYS for k in keys) else None
    vote = _anthropic_vote(body) if definite else _is_anthropic(body)
    if vote is None:
        return None
    return "anthropic" if vote else "openai-chat"


def wire_shape(body: bytes, uri: str | None = None) -> str | None:
    """Return the wire shape of a request body as the auditor reads it, when it is definite.

    Args:
        body: The body bytes (UTF-8 JSON object).
        uri: The request URI, if known; its endpoint decides (:func:`shape_from_uri`).

    Returns:
        A name of :data:`PROVIDERS` (a Bedrock InvokeModel body with ``anthropic_version`` is
        ``anthropic``), or ``None`` when the body is not a JSON object or nothing in it tells
        the shape (plain text ``messages`` fit Anthropic's and Chat Completions' alike).
    """
    try:
        scanned = scan_body(body, ItemCache(), {}, location="<body>")
        return _definite_shape(scanned, uri)
    except (AuditInputError, RecursionError):
        return None


def _definite_shape(body: ScannedBody, uri: str | None) -> str | None:
    found = shape_from_uri(uri) if uri else None
    if found == BEDROCK_INVOKE:
        return "anthropic" if "anthropic_version" in body.spans else None
    return found if found is not None else body_shape(body, definite=True)


@lru_cache(maxsize=4096)  # a cassette's requests go to a few URIs, each asked about twice
def shape_from_uri(uri: str) -> str | None:
    """Return the provider a request URI's endpoint speaks, or ``None`` for another endpoint.

    ``…/messages`` → ``anthropic``; ``…/chat/completions`` → ``openai-chat`` (``openrouter`` on
    an ``openrouter.ai`` host); ``…/responses`` → ``openai-responses``;
    ``…/models/<id>:generateContent`` or ``:streamGenerateContent`` → ``gemini``;
    ``…/model/<id>/converse`` or ``/converse-stream`` → ``bedrock-converse``;
    ``…/model/<id>/invoke`` (or ``/invoke-with-response-stream``) → :data:`BEDROCK_INVOKE`.
    The query string and a trailing ``/`` are ignored.
    """
    parts = urlsplit(uri)
    path = parts.path.rstrip("/")
    if _GEMINI_PATH.search(path):
        return "gemini"
    bedrock = _BEDROCK_PATH.search(path)
    if bedrock is not None:
        return "bedrock-converse" if bedrock[2].startswith("converse") else BEDROCK_INVOKE
    if path.endswith("/chat/completions"):
        host = (parts.hostname or "").lower()
        return "openrouter" if host.endswith("openrouter.ai") else "openai-chat"
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/responses"):
        return "openai-responses"
    return None


def model_from_uri(uri: str) -> str:
    """Return the model a Gemini or Bedrock request URI names (``""`` for others).

    ``…/models/gemini-2.5-flash:generateContent`` → ``gemini-2.5-flash``;
    ``…/model/us.amazon.nova-pro-v1%3A0/converse`` → ``us.amazon.nova-pro-v1:0`` (unquoted).
    """
    path = urlsplit(uri).path.rstrip("/")
    found = _GEMINI_PATH.search(path) or _BEDROCK_PATH.search(path)
    return unquote(found[1]) if found is not None else ""


def detect_provider(
    body: ScannedBody, given: str | None, *, location: str, uri: str | None = None
) -> str:
    """Return the provider of ``body``: ``given`` if set, else its URI's, else its shape's.

    Args:
        body: The scanned body.
        given: ``--provider``, or ``None``.
        location: Where the body came from, for errors.
        uri: The request URI, when the input records one (:func:`shape_from_uri`).

    Raises:
        UnknownProviderError: ``given`` is not one of :data:`PROVIDERS`.
        AuditInputError: The body has no known shape (no ``messages``, ``contents`` or
            ``input``/``instructions``), or is a Bedrock InvokeModel body of a model other
            than Anthropic's.
    """
    if given is not None:
        if given not in PROVIDERS:
            raise UnknownProviderError(
                f"unknown provider {given!r} (expected one of {', '.join(PROVIDERS)})"
            )
        return given
    from_uri = shape_from_uri(uri) if uri else None
    if from_uri == BEDROCK_INVOKE:
        if "anthropic_version" in body.spans:
            return "anthropic"
        raise AuditInputError(
            "a Bedrock InvokeModel body without 'anthropic_version' (only Anthropic's is audited)",
            location=location,
        )
    found = from_uri or body_shape(body)
    if found is None:
        raise AuditInputError(
            "not a Messages, Chat Completions, Responses, Gemini or Converse request body "
            "(no 'messages', 'contents' or 'input')",
            location=location,
        )
    return found


def model_of(body: ScannedBody, uri: str | None) -> str:
    """Return the body's ``model``, else the one its URI names (Gemini, Bedrock), else ``""``."""
    model = body.values.get("model")
    if isinstance(model, str):
        return model
    return model_from_uri(uri) if uri else ""


_SOURCE_SUFFIX: Final = re.compile(r"(?::\d+|: interactions\[\d+\])$")


def note_conflict(
    notes: dict[str, str], body: ScannedBody, given: str, source: str, uri: str | None
) -> None:
    """Record, once per file, that ``given`` is not the shape of a body read from it.

    Args:
        notes: File → warning line; a file already noted is not checked again.
        body: The scanned body.
        given: The ``--provider`` the run audits with.
        source: The body's source (``run.yaml: interactions[2]``, ``run.jsonl:3``); the file
            is its part before the line or interaction.
        uri: The request URI, if recorded.
    """
    file = _SOURCE_SUFFIX.sub("", source)
    if file in notes:
        return
    found = shape_conflict(body, given, uri)
    if found is not None:
        notes[file] = conflict_message(file, given, found, "audited")


def conflict_message(name: str, given: str, found: str, done: str) -> str:
    """Return the warning line for a ``--provider`` that is not the body's shape.

    Args:
        name: The file (``run.yaml``, ``<stdin>``).
        given: The ``--provider``.
        found: The body's shape.
        done: What the command did anyway, as a past participle (``audited``, ``built``).
    """
    return f"{name}: --provider {given} contradicts the body's shape ({found}); {done} as {given}"


def wire_conflict(body: bytes, given: str, *, name: str, done: str) -> str | None:
    """Return the warning line when ``body``'s definite shape is not ``given``'s, else ``None``.

    See :func:`wire_shape` and :func:`conflict_message` (``name``, ``done``).
    """
    found = wire_shape(body)
    if found is None or _SAME_SHAPE.get(found, found) == _SAME_SHAPE.get(given, given):
        return None
    return conflict_message(name, given, found, done)


_SAME_SHAPE: Final[Mapping[str, str]] = {"openrouter": "openai-chat"}
"""Providers whose bodies have another provider's shape."""


def shape_conflict(body: ScannedBody, given: str, uri: str | None = None) -> str | None:
    """Return the shape ``body`` (or its URI) has when it is not ``given``'s, else ``None``.

    ``None`` too when the shape cannot be told (:func:`wire_shape`); an ``openrouter`` body
    reads as ``openai-chat``.
    """
    found = _definite_shape(body, uri)
    if found is None or _SAME_SHAPE.get(found, found) == _SAME_SHAPE.get(given, given):
        return None
    return found
