"""SPEC P6 provider switching, one check per generated conversation (test and benchmark share it).

:func:`check_switch` plays one switch from provider A to provider B:

1. A generated conversation (:func:`tests.strategies.conversations` for A: all four content
   cases, parallel tool calls, tool errors, omitted images, ids B may have to rewrite) runs its
   last request on A **with provider-only data** in memory — an Anthropic thinking block or a
   Responses reasoning item carrying :data:`MARKER` — and that body must contain it (M4 allows it
   within the turn).
2. The turn ends on the host :class:`~llmcore.archive.Conversation` (``end_turn``), which is
   saved with :class:`~llmcore.archive.ArchiveStore` and reopened from disk: the history is the
   same value, original tool-call ids included, and ``provider`` / ``model`` still name A (they
   change at the end of the next turn, P6).
3. The next request goes to B (a model and parameters drawn for B, plus a new user message),
   built from the reopened history. Checks:

   * it is byte-identical to B's body for the never-saved history (nothing dropped or added by
     the save, the reopen or A's turn);
   * :data:`MARKER` is not in it (thinking and reasoning from A never reach B, M4);
   * decoded with B's importer (``llmcore import``; OpenRouter bodies with the ``openai-chat``
     one, as the CLI says), it carries the same messages, message by message, as the history
     should produce on B: :func:`wire_view` applies only B's documented encoding rules (ids
     rewritten by B's ``wire_id``, argument bytes by ``arguments_json``, result bytes as UTF-8
     with U+FFFD, no ``is_error`` on Responses, empty text not sent, an omitted image as its
     placeholder text, consecutive same-role messages joined as each wire format joins them);
   * the ids B rewrote appear only in the body: the history keeps the originals.

4. The next turn ends on B: ``provider`` and ``model`` now name B, and the history is the old
   one followed by that turn's messages.

Returns a short label per example (which of the interesting cases it covered) for statistics.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Final

from hypothesis import strategies as st

from llmcore.archive import ArchiveStore, Conversation
from llmcore.messages import Image, Message, MessageContent, Text, ToolCall, ToolResult
from llmcore.providers import PROVIDER_NAMES, get_provider
from llmcore.providers.base import arguments_json
from llmcore.request import Request
from llmcore.usage import Cost, Usage
from tests.archive.test_reopen import NoSyncFS
from tests.strategies import PROVIDER_MODELS, conversations, params, user_messages

MARKER: Final = "PROVIDER-ONLY-4f1c"
"""Text inside the provider-only data of A's turn; it must never appear in B's body."""

PAIRS: Final = tuple((a, b) for a in PROVIDER_NAMES for b in PROVIDER_NAMES if a != b)
"""Every ordered pair (A, B) of distinct providers (30 for six wire APIs)."""

CARRY: Final[dict[str, tuple[str, ...]]] = {
    "anthropic": (
        '{"type":"thinking","thinking":"' + MARKER + ' thoughts","signature":"' + MARKER + '"}',
    ),
    "openai-responses": (
        '{"type":"reasoning","id":"rs_' + MARKER + '","summary":[],'
        '"encrypted_content":"' + MARKER + '"}',
    ),
    "gemini": ('{"text":"' + MARKER + '","thought":true,"thoughtSignature":"' + MARKER + '"}',),
}
"""Provider-only data A's last response returned (a provider without an entry has none)."""

IMPORTERS: Final = {"openrouter": "openai-chat"}
"""The importer that decodes a provider's body when it is not its own (``llmcore import``)."""


def _module(provider: str) -> ModuleType:
    """The module that writes ``provider``'s bodies (OpenRouter writes with the Chat encoder)."""
    name = IMPORTERS.get(provider, provider).replace("-", "_")
    return importlib.import_module(f"llmcore.providers.{name}")


def _wire_id(provider: str) -> Callable[[str], str]:
    """The provider's tool-call id rewrite; an id it does not send at all (``None``) stays."""
    rewrite = _module(provider).wire_id

    def wire_id(value: str) -> str:
        sent = rewrite(value)
        return value if sent is None else str(sent)

    return wire_id


WIRE_IDS: Final[dict[str, Callable[[str], str]]] = {name: _wire_id(name) for name in PROVIDER_NAMES}
"""Each provider's tool-call id rewrite, read from its module's ``wire_id``."""

_SURROGATE = re.compile("[\ud800-\udfff]")

PartView = tuple[Any, ...]
WireView = list[tuple[str, list[PartView]]]


def _arguments(text: str) -> str:
    """Argument JSON compared by value and key order; lone surrogates as U+FFFD (the wire's)."""
    value = json.loads(text, object_pairs_hook=list)
    return _SURROGATE.sub("\ufffd", json.dumps(value, ensure_ascii=False))


def _part(part: MessageContent, target: str | None) -> PartView | None:
    """One part as B should carry it (``target``), or as decoded (``None``: no rewriting)."""
    responses = target == "openai-responses"
    rewrite = WIRE_IDS[target] if target is not None else (lambda value: value)
    if isinstance(part, Text):
        return ("text", part.text) if part.text else None
    if isinstance(part, Image):
        return ("image", part.mime_type, part.data)
    if isinstance(part, ToolCall):
        arguments = arguments_json(part.arguments, replace_invalid_utf8=responses)
        return ("call", rewrite(part.id), part.name, _arguments(arguments))
    if isinstance(part, ToolResult):
        text = part.content.decode("utf-8", "replace")
        return ("result", rewrite(part.call_id), part.is_error and not responses, text)
    raise AssertionError(f"unexpected part {part!r}")


ROLE_JOINED: Final = frozenset({"bedrock-converse"})
"""Wires whose roles alternate: a ``tool`` message is a ``user`` one, joined with its neighbours."""


def wire_view(messages: Sequence[Message], target: str | None, joined: bool = False) -> WireView:
    """Messages as (role, parts), consecutive same-role messages joined, empty ones left out.

    With ``joined`` (or a ``target`` in :data:`ROLE_JOINED`) ``tool`` counts as ``user``.
    """
    out: WireView = []
    joined = joined or target in ROLE_JOINED
    for message in messages:
        parts = [view for part in message.content if (view := _part(part, target)) is not None]
        role = "user" if joined and message.role == "tool" else message.role
        if out and out[-1][0] == role:
            out[-1][1].extend(parts)
        elif parts:
            out.append((role, parts))
    return out


def _last_assistant(history: Sequence[Message]) -> int:
    return max(i for i, m in enumerate(history) if m.role == "assistant")


def _ids(messages: Sequence[Message]) -> set[str]:
    return {p.id for m in messages for p in m.content if isinstance(p, ToolCall)}


def check_switch(data: st.DataObject, source: str, target: str, folder: Path) -> list[str]:
    """Play one switch ``source`` → ``target`` (module doc); return the cases it covered.

    Raises:
        AssertionError: A P6 or M4 property does not hold (the message says which).
    """
    generated = data.draw(conversations(source, max_steps=3), label="conversation on A")
    history = generated.history()
    # 1. A's last request of the turn, with provider-only data in memory.
    if source in CARRY:
        carry = {_last_assistant(history): CARRY[source]}
        body_a = get_provider(source).build_body(generated.request(history), carry=carry)
        assert MARKER.encode() in body_a, "A's carry was not sent within A's turn"
    # 2. The turn ends; save and reopen.
    conversation = Conversation()
    conversation.end_turn(
        messages=history,
        provider=source,
        model=generated.model,
        rounds=[(Usage(input=10, output=2), Cost(kind="not_billed"))],
    )
    ArchiveStore(folder, fs=NoSyncFS()).save(conversation)
    reopened = ArchiveStore(folder).open()
    assert reopened.history == history, "the save and reopen changed the history"
    assert (reopened.state.provider, reopened.state.model) == (source, generated.model)
    # 3. The next request, on B.
    following = data.draw(user_messages(), label="next user message")
    request = Request(
        model=data.draw(st.sampled_from(PROVIDER_MODELS[target]), label="model on B"),
        system=generated.system,
        tools=generated.tools,
        messages=(*reopened.history, following),
        params=data.draw(params(target, generated.tools), label="params on B"),
    )
    provider_b = get_provider(target)
    body_b = provider_b.build_body(request)
    stayed = provider_b.build_body(dataclasses.replace(request, messages=(*history, following)))
    assert body_b == stayed, "B's body after the reopen differs from B's body for the history"
    assert MARKER.encode() not in body_b, "provider-only data from A reached B (M4)"
    recorded = json.loads(body_b)
    if target == "bedrock-converse":  # the model is in the URL; import takes it as modelId
        recorded["modelId"] = request.model
    else:
        recorded = {"model": request.model, **recorded}  # a URL-model body names it
    imported = get_provider(IMPORTERS.get(target, target)).import_body(recorded, raw=body_b).request
    expected = wire_view(request.messages, target)
    got = wire_view(imported.messages, None, joined=target in ROLE_JOINED)
    assert got == expected, _first_message_difference(expected, got)
    rewritten = {i for i in _ids(history) if WIRE_IDS[target](i) != i}
    assert _ids(reopened.history) == _ids(history), "the history lost its original ids"
    # 4. The next turn ends on B.
    reply = Message.assistant("done")
    reopened.end_turn(messages=(following, reply), provider=target, model=request.model)
    assert (reopened.state.provider, reopened.state.model) == (target, request.model)
    assert reopened.history == (*history, following, reply)
    return _cases(history, rewritten, source)


def _first_message_difference(expected: WireView, got: WireView) -> str:
    for index, (want, have) in enumerate(zip(expected, got, strict=False)):
        if want != have:
            return f"wire message {index}: expected {want!r:.400} got {have!r:.400}"
    return f"{len(expected)} wire messages expected, {len(got)} decoded"


def _cases(history: Sequence[Message], rewritten: set[str], source: str) -> list[str]:
    parts = [p for m in history for p in m.content]
    cases = []
    if rewritten:
        cases.append("ids rewritten for B")
    if any(isinstance(p, ToolResult) and p.is_error for p in parts):
        cases.append("tool errors")
    if any(isinstance(p, Text) and p.omitted_image_mime_type for p in parts):
        cases.append("omitted images")
    if any(isinstance(p, Image) for p in parts):
        cases.append("images")
    if any(sum(isinstance(p, ToolCall) for p in m.content) > 1 for m in history):
        cases.append("parallel tool calls")
    if source in CARRY:
        cases.append("provider-only data on A")
    return cases
