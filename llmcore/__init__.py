"""llmcore: a provider-agnostic LLM request layer with byte-stable prompt-cache verification.

The public names below load on first use (PEP 562 module ``__getattr__``), so ``import llmcore``
costs almost nothing and a program pays only for what it touches: ``llmcore.Request`` loads the
request model, ``llmcore.HTTPTransport`` loads httpx, ``llmcore.ArchiveStore`` the archive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmcore._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:
    from llmcore.archive import ArchiveStore, Conversation, ConversationState
    from llmcore.audit import audit_bodies
    from llmcore.errors import LLMCoreError
    from llmcore.limits import context_limit
    from llmcore.messages import (
        OMITTED_IMAGE_PLACEHOLDER,
        Image,
        Message,
        MessageContent,
        Text,
        ToolCall,
        ToolResult,
    )
    from llmcore.providers import PROVIDER_NAMES, get_provider
    from llmcore.request import Params, Request, Tool, ToolChoiceName
    from llmcore.runner import FunctionTool, GeneratedImage, Runner, ToolOutput, TurnResult
    from llmcore.transport import AsyncHTTPTransport, HTTPTransport
    from llmcore.usage import Cost, Usage

__all__ = [
    "OMITTED_IMAGE_PLACEHOLDER",
    "PROVIDER_NAMES",
    "ArchiveStore",
    "AsyncHTTPTransport",
    "Conversation",
    "ConversationState",
    "Cost",
    "FunctionTool",
    "GeneratedImage",
    "HTTPTransport",
    "Image",
    "LLMCoreError",
    "Message",
    "MessageContent",
    "Params",
    "Request",
    "Runner",
    "Text",
    "Tool",
    "ToolCall",
    "ToolChoiceName",
    "ToolOutput",
    "ToolResult",
    "TurnResult",
    "Usage",
    "audit_bodies",
    "context_limit",
    "get_provider",
]

__version__ = "0.1.0"

_HOMES: dict[str, str] = {
    **dict.fromkeys(["ArchiveStore", "Conversation", "ConversationState"], "llmcore.archive"),
    "audit_bodies": "llmcore.audit",
    "LLMCoreError": "llmcore.errors",
    "context_limit": "llmcore.limits",
    **dict.fromkeys(
        [
            "OMITTED_IMAGE_PLACEHOLDER",
            "Image",
            "Message",
            "MessageContent",
            "Text",
            "ToolCall",
            "ToolResult",
        ],
        "llmcore.messages",
    ),
    **dict.fromkeys(["PROVIDER_NAMES", "get_provider"], "llmcore.providers"),
    **dict.fromkeys(["Params", "Request", "Tool", "ToolChoiceName"], "llmcore.request"),
    **dict.fromkeys(
        ["FunctionTool", "GeneratedImage", "Runner", "ToolOutput", "TurnResult"], "llmcore.runner"
    ),
    **dict.fromkeys(["AsyncHTTPTransport", "HTTPTransport"], "llmcore.transport"),
    **dict.fromkeys(["Cost", "Usage"], "llmcore.usage"),
}
"""Each public name and the module it lives in; every name of ``__all__`` is a key."""


__getattr__, __dir__ = _lazy_names(__name__, _HOMES, globals())
