"""llmcore: a provider-agnostic LLM request layer with byte-stable prompt-cache verification."""

from __future__ import annotations

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
