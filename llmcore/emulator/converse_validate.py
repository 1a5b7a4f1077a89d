"""Bedrock Converse request validation: the rules the real API enforces (SPEC V2, P8).

Each rule is one the Converse API documents or that real clients quote from its
``ValidationException`` (400) answers; the message is the API's where it is known:

* only the request members of ``ConverseRequest`` (the botocore service model) —
  ``extraneous key [x] is not permitted``;
* ``messages`` is a non-empty array; roles alternate — ``A
  conversation must alternate between user and assistant roles. Make sure the conversation
  alternates between user and assistant roles and try again.`` (quoted in
  langchain-ai/langchain-aws#130 and many client reports);
* the first message is ``user`` for Meta Llama models only (:func:`_first_role`);
* every content block has exactly one member (a union); text is not blank; image ``format`` is
  ``png``, ``jpeg``, ``gif`` or ``webp`` with base64 ``source.bytes``;
* ``toolUse`` / ``toolResult`` need ``toolConfig`` — ``The toolConfig field must be defined when
  using toolUse and toolResult content blocks.``; each ``toolResult`` answers a ``toolUse`` of
  the assistant message before it;
* ``toolChoice`` is one of ``auto``, ``any``, ``tool`` (with a ``name`` of an offered tool);
* at most 4 ``cachePoint`` blocks in the request (PROVIDER-RULES §5,
  https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html), and a
  ``cachePoint`` in ``toolConfig.tools`` only for Claude models (Nova caches no tools).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Final

from llmcore.emulator.errors import Rejection

__all__ = ["MAX_CACHE_POINTS", "tool_fields", "validate_converse"]

MAX_CACHE_POINTS: Final = 4
"""Cache checkpoints per request (Claude and Nova, Bedrock prompt-caching guide)."""

_TOP: Final = frozenset(
    {
        "messages",
        "system",
        "inferenceConfig",
        "toolConfig",
        "guardrailConfig",
        "additionalModelRequestFields",
        "promptVariables",
        "additionalModelResponseFieldPaths",
        "requestMetadata",
        "performanceConfig",
        "serviceTier",
        "outputConfig",
    }
)
_BLOCKS: Final = frozenset(
    {"text", "image", "toolUse", "toolResult", "cachePoint", "reasoningContent", "document"}
)
_FORMATS: Final = frozenset({"png", "jpeg", "gif", "webp"})
ALTERNATE: Final = (
    "A conversation must alternate between user and assistant roles. Make sure the "
    "conversation alternates between user and assistant roles and try again."
)
NEEDS_TOOL_CONFIG: Final = (
    "The toolConfig field must be defined when using toolUse and toolResult content blocks."
)


def _fail(message: str) -> Rejection:
    return Rejection(message, error_type="ValidationException")


def _block(block: Any, at: str, uses: set[str], answered: set[str]) -> str:
    """Check one content block; return its kind."""
    if not isinstance(block, dict) or len(block) != 1:
        raise _fail(f"{at}: a content block must have exactly one member")
    ((kind, value),) = block.items()
    kind = str(kind)
    if kind not in _BLOCKS:
        raise _fail(f"{at}: unknown content block member [{kind}]")
    if kind == "text" and (not isinstance(value, str) or not value.strip()):
        raise _fail(f"{at}.text: The text field in the ContentBlock object is blank.")
    if kind == "image":
        _image(value, f"{at}.image")
    if kind == "toolUse":
        if not isinstance(value, dict) or not isinstance(value.get("input"), dict):
            raise _fail(f"{at}.toolUse: toolUseId, name and an input object are required")
        uses.add(str(value.get("toolUseId")))
    if kind == "toolResult":
        if not isinstance(value, dict) or not isinstance(value.get("content"), list):
            raise _fail(f"{at}.toolResult: toolUseId and a content array are required")
        answered.add(str(value.get("toolUseId")))
    return kind


def _image(value: Any, at: str) -> None:
    if not isinstance(value, dict) or value.get("format") not in _FORMATS:
        raise _fail(f"{at}.format: must be one of png, jpeg, gif, webp")
    source = value.get("source")
    data = source.get("bytes") if isinstance(source, dict) else None
    try:
        base64.b64decode(str(data), validate=True)
    except (binascii.Error, ValueError):
        raise _fail(f"{at}.source.bytes: invalid base64 image bytes") from None


def _first_role(model: str) -> None:
    """Refuse a conversation that starts with the assistant's message, for Llama models only.

    Sources: Bedrock answered 200 to such a body for Claude Sonnet 4.5 (the corpus case
    ``tests/corpus/bedrock-converse/0018``, recorded by pydantic-ai's test
    ``test_bedrock_anthropic_message_history_starting_with_response``); Meta Llama 3 models
    answer 400 with the message below (epam/ai-dial-adapter-bedrock's integration test
    ``test_llama_out_of_turn_dialog``). No source found says so for other families (Nova,
    Mistral, Cohere…), so they accept it.

    Raises:
        Rejection: ``ValidationException`` for a ``meta.`` / Llama model id.
    """
    if "llama" in model.lower():
        raise _fail(
            "A conversation must start with a user message. Try again with a "
            "conversation that starts with a user message."
        )


def _messages(body: dict[str, Any], model: str) -> tuple[int, bool]:
    """Check the messages; return (cache points in them, whether tool blocks appear)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise _fail("messages: at least one message is required")
    points, tools, previous_uses = 0, False, set[str]()
    for index, message in enumerate(messages):
        at = f"messages.{index}"
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            raise _fail(f"{at}.role: must be user or assistant")
        if index == 0 and role != "user":
            _first_role(model)
        if index and messages[index - 1].get("role") == role:
            raise _fail(ALTERNATE)
        content = message.get("content")
        if not isinstance(content, list) or not content:
            raise _fail(f"{at}.content: at least one content block is required")
        uses: set[str] = set()
        answered: set[str] = set()
        kinds = [_block(b, f"{at}.content.{i}", uses, answered) for i, b in enumerate(content)]
        points += kinds.count("cachePoint")
        tools = tools or bool(uses or answered)
        if answered - previous_uses:
            raise _fail(
                f"{at}: toolResult blocks answer toolUse ids not in the previous turn: "
                f"{', '.join(sorted(answered - previous_uses))}"
            )
        previous_uses = uses
    return points, tools


def _tool_points(body: dict[str, Any], model: str) -> int:
    config = body.get("toolConfig")
    if config is None:
        return 0
    tools = config.get("tools") if isinstance(config, dict) else None
    if not isinstance(tools, list) or not tools:
        raise _fail("toolConfig.tools: at least one tool is required")
    names = set()
    points = 0
    for index, tool in enumerate(tools):
        if isinstance(tool, dict) and "cachePoint" in tool:
            if "claude" not in model.lower():
                raise _fail(f"toolConfig.tools.{index}: this model does not support cachePoint")
            points += 1
        elif isinstance(tool, dict) and isinstance(tool.get("toolSpec"), dict):
            names.add(tool["toolSpec"].get("name"))
        else:
            raise _fail(f"toolConfig.tools.{index}: a tool needs toolSpec or cachePoint")
    _tool_choice(config.get("toolChoice"), names)
    return points


def _tool_choice(choice: Any, names: set[Any]) -> None:
    if choice is None:
        return
    if not isinstance(choice, dict) or len(choice) != 1:
        raise _fail("toolConfig.toolChoice: exactly one of auto, any, tool")
    ((kind, value),) = choice.items()
    if kind not in ("auto", "any", "tool"):
        raise _fail(f"toolConfig.toolChoice: unknown member [{kind}]")
    if kind == "tool" and (not isinstance(value, dict) or value.get("name") not in names):
        raise _fail("toolConfig.toolChoice.tool.name: names no tool in toolConfig.tools")


def validate_converse(body: Any, model: str) -> dict[str, Any]:
    """Return ``body`` when it is a valid Converse request for ``model``.

    Raises:
        Rejection: ``ValidationException`` (400) naming the rule broken (see the module doc).
    """
    if not isinstance(body, dict):
        raise _fail("the request body must be a JSON object")
    for key in body:
        if key not in _TOP:
            raise _fail(f"extraneous key [{key}] is not permitted")
    points, tool_blocks = _messages(body, model)
    system = body.get("system", [])
    if not isinstance(system, list):
        raise _fail("system: must be an array of blocks")
    points += sum(1 for b in system if isinstance(b, dict) and "cachePoint" in b)
    points += _tool_points(body, model)
    if tool_blocks and body.get("toolConfig") is None:
        raise _fail(NEEDS_TOOL_CONFIG)
    if points > MAX_CACHE_POINTS:
        raise _fail(
            f"The number of cache points in the request exceeds the maximum of "
            f"{MAX_CACHE_POINTS}: found {points}."
        )
    return body


def tool_fields(config: dict[str, Any]) -> dict[str, Any]:
    """Return a validated ``toolConfig`` as the Anthropic ``tools`` / ``tool_choice`` fields.

    The scripted reply obeys the tool choice through :func:`llmcore.emulator.params.obey`,
    which reads those fields.
    """
    specs = [
        t["toolSpec"]
        for t in config.get("tools") or []
        if isinstance(t, dict) and isinstance(t.get("toolSpec"), dict)
    ]
    tools = [
        {"name": spec.get("name"), "input_schema": (spec.get("inputSchema") or {}).get("json")}
        for spec in specs
    ]
    choice = config.get("toolChoice")
    fields: dict[str, Any] = {"tools": tools}
    if isinstance(choice, dict) and "any" in choice:
        fields["tool_choice"] = {"type": "any"}
    elif isinstance(choice, dict) and isinstance(choice.get("tool"), dict):
        fields["tool_choice"] = {"type": "tool", "name": choice["tool"].get("name")}
    return fields
