"""The on-disk shape of ``conversation.json``, format 1 (SPEC A1–A4, U1, U2, F1), as TypedDicts.

These types describe the JSON exactly as it is written; :mod:`llmcore.archive.codec` converts
between them and the values of :mod:`llmcore.archive.state`. Key names are camelCase as on disk.
``NotRequired`` keys are written only when present.

The file is written with every object's keys sorted, two spaces of indentation, ``": "`` after
keys and one trailing newline (:data:`INDENT`), so an unchanged conversation always encodes to
the same bytes (A2).
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypeAlias, TypedDict

__all__ = [
    "CONVERSATION_FILE",
    "FORMAT_VERSION",
    "IMAGES_DIR",
    "INDENT",
    "ITEM_TYPES",
    "TOP_LEVEL_KEYS",
    "ConversationFile",
    "CostJSON",
    "FeedbackJSON",
    "HistoryBlock",
    "HistoryMessage",
    "ImageBlock",
    "ImageOmittedBlock",
    "ItemJSON",
    "SentFactJSON",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "UsageJSON",
]

FORMAT_VERSION: Final = 1
"""The format this version reads and writes; a newer one is kept untouched (A8)."""
CONVERSATION_FILE: Final = "conversation.json"
"""The document file inside the archive folder (A1)."""
IMAGES_DIR: Final = "images"
"""The image folder inside the archive folder (A5)."""
INDENT: Final = 2
"""Spaces per nesting level of ``conversation.json``."""

ITEM_TYPES: Final = frozenset(
    {
        "user",
        "assistant",
        "thinking",
        "tool",
        "notice",
        "failure",
        "questions",
        "directions",
        "skillProposal",
        "lintRuleProposal",
        "toolApproval",
        "webSearch",
        "reportedIssue",
    }
)
"""The 13 panel item types of SPEC A4."""


class TextBlock(TypedDict):
    """``{"type": "text", "text": str}``."""

    type: Literal["text"]
    text: str


class ImageBlock(TypedDict):
    """``{"type": "image", "sha256": hex, "mimeType": str}``; bytes in ``images/`` (A5)."""

    type: Literal["image"]
    sha256: str
    mimeType: str


class ImageOmittedBlock(TypedDict):
    """``{"type": "imageOmitted", "mimeType": str}``: an image dropped from storage (A6, M3)."""

    type: Literal["imageOmitted"]
    mimeType: str


class ToolCallBlock(TypedDict):
    """A tool call: ``arguments`` (UTF-8 text) or ``argumentsBase64`` (other bytes), never both."""

    type: Literal["toolCall"]
    id: str
    name: str
    arguments: NotRequired[str]
    argumentsBase64: NotRequired[str]


class ToolResultBlock(TypedDict):
    """A tool result: ``content`` (UTF-8 text) or ``contentBase64`` (other bytes), never both."""

    type: Literal["toolResult"]
    callID: str
    toolName: str
    isError: bool
    content: NotRequired[str]
    contentBase64: NotRequired[str]


HistoryBlock: TypeAlias = (
    TextBlock | ImageBlock | ImageOmittedBlock | ToolCallBlock | ToolResultBlock
)
"""One history content block (A3)."""


class HistoryMessage(TypedDict):
    """``{"role": "user" | "assistant" | "tool", "content": [block]}``."""

    role: Literal["user", "assistant", "tool"]
    content: list[HistoryBlock]


class ItemJSON(TypedDict):
    """A panel item: ``id``, ``type`` (:data:`ITEM_TYPES`), optional ``detail`` and ``citations``.

    Every other key belongs to the host and is kept unchanged (A4).
    """

    id: str
    type: str
    detail: NotRequired[str]
    citations: NotRequired[list[Any]]


class FeedbackJSON(TypedDict):
    """A rating of the turn that ends with an item: ``good`` or ``bad`` and reasons."""

    rating: Literal["good", "bad"]
    reasons: list[str]


class UsageJSON(TypedDict):
    """Usage (U1) in camelCase; the two optional keys are written only when present."""

    input: int
    output: int
    cacheRead: int
    cacheWrite: int
    webSearchRequests: int
    cacheWrite1h: NotRequired[int]
    reportedCost: NotRequired[float]


class CostJSON(TypedDict):
    """Cost (U2): ``kind`` and, for ``reported`` and ``estimated``, ``dollars``."""

    kind: Literal["reported", "estimated", "unknown", "notBilled"]
    dollars: NotRequired[float]


class SentFactJSON(TypedDict):
    """One turn's facts (F1): its first history index and the sections it left with the model."""

    message: int
    sections: NotRequired[dict[str, str]]


class ConversationFile(TypedDict):
    """The whole of ``conversation.json`` (A1)."""

    formatVersion: int
    provider: str
    model: str
    items: list[ItemJSON]
    feedback: dict[str, FeedbackJSON]
    skillCards: dict[str, Any]
    lintRuleCards: dict[str, Any]
    approvalCards: dict[str, Any]
    resolvedCards: list[str]
    history: list[HistoryMessage]
    queued: list[str]
    unsent: list[str]
    usage: UsageJSON
    lastRoundUsage: UsageJSON
    estimatedCost: CostJSON
    sentFacts: list[SentFactJSON]


TOP_LEVEL_KEYS: Final = frozenset(ConversationFile.__annotations__)
"""Every top-level key format 1 knows; any other makes the file unreadable (A4, A8)."""
