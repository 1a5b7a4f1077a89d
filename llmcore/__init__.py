"""llmcore: a provider-agnostic LLM request layer with byte-stable prompt-cache verification."""

from __future__ import annotations

from llmcore.errors import LLMCoreError
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

__all__ = [
    "OMITTED_IMAGE_PLACEHOLDER",
    "PROVIDER_NAMES",
    "Image",
    "LLMCoreError",
    "Message",
    "MessageContent",
    "Params",
    "Request",
    "Text",
    "Tool",
    "ToolCall",
    "ToolChoiceName",
    "ToolResult",
    "get_provider",
]

__version__ = "0.1.0"
