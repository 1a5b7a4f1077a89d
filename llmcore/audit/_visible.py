"""Requests whose cache use the input cannot show (SPEC V5): the "not visible in the input" label.

The theoretical maximum is an upper bound on what the provider read only for what the recorded
bodies hold. Some requests carry less than the provider saw:

* **server-side state**: a Responses request continuing a stored response or conversation
  (``previous_response_id``, ``conversation``: the server prepends the earlier items,
  https://platform.openai.com/docs/guides/conversation-state), a Gemini request naming an explicit
  cache (``cachedContent``: its contents live on the server,
  https://ai.google.dev/gemini-api/docs/caching);
* **a server-side tool loop**: a request declaring a tool the provider runs itself (Anthropic
  ``web_search``, ``web_fetch``, ``code_execution``, ``tool_search_tool``, the MCP connector;
  OpenAI ``web_search``, ``file_search``, ``code_interpreter``, ``mcp``, ``image_generation``)
  may be answered after several model calls inside the one request, each reading the cache,
  and the usage reports their sum (https://platform.claude.com/docs/en/agents-and-tools/tool-use/
  server-tools, "server tools … are executed on Anthropic's servers"; the recorded usage of
  pydantic-ai's ``test_anthropic_code_execution_files_cache_prefix_stable`` reads 9,134 of 9,375
  tokens from a 3,600-token request);
* **a cache warmed outside the recording**: the first request of its scope (a cassette file, a
  key, the input) for its provider and model whose recorded read exceeds the maximum.

Leaves out: computing the maximum (:mod:`llmcore.audit._maximum`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from llmcore._words import plural
from llmcore.audit._compare import Prepared
from llmcore.audit.report import RequestRecord
from llmcore.audit.usage import RecordedUsage

__all__ = ["SERVER_TOOLS", "no_breakpoints", "not_visible", "server_side", "visible_label"]

SERVER_TOOLS: Final = (
    "web_search",
    "web_fetch",
    "code_execution",
    "tool_search_tool",
    "mcp",
    "file_search",
    "code_interpreter",
    "image_generation",
)
"""Prefixes of the ``type`` of tools a provider runs on its own servers (see the module)."""


def _server_tool(prep: Prepared) -> str | None:
    for section in ("tools", "toolConfig.tools"):
        for info in prep.body.items.get(section, ()):
            kind = info.extra.get("server_tool", "")
            if kind == "":
                value = info.parsed()
                found = value.get("type") if isinstance(value, dict) else None
                kind = found if isinstance(found, str) and found.startswith(SERVER_TOOLS) else None
                info.extra["server_tool"] = kind
            if isinstance(kind, str):
                return kind
    return None


def server_side(prep: Prepared) -> str | None:
    """Why the request's prompt is partly held or built on the server, or ``None``."""
    values = prep.body.values
    for name in ("previous_response_id", "conversation"):
        if prep.provider == "openai-responses" and values.get(name):
            return f"not visible in the input: {name} continues server-held items"
    if prep.body.items.get("cachedContent") or values.get("cachedContent"):
        return "not visible in the input: cachedContent names an explicit cache held on the server"
    if values.get("mcp_servers"):
        return "not visible in the input: a server-side tool loop (mcp_servers)"
    tool = _server_tool(prep)
    if tool is not None:
        return f"not visible in the input: a server-side tool loop inside one request ({tool})"
    return None


def not_visible(
    prep: Prepared, usage: RecordedUsage | None, maximum: int, first: bool
) -> str | None:
    """Return the "not visible in the input" label of a request, or ``None``.

    Args:
        prep: The request.
        usage: Its recorded usage, if any.
        maximum: Its theoretical maximum (estimated tokens).
        first: Whether it is the first request of its scope for its provider and model.

    Returns:
        The label for a request with server-side state or a server-side tool (always), or for
        the first request of its scope whose recorded read exceeds ``maximum``.
    """
    return visible_label(server_side(prep), usage, maximum, first)


def visible_label(
    server: str | None, usage: RecordedUsage | None, maximum: int, first: bool
) -> str | None:
    """:func:`not_visible` from the request's :func:`server_side` reason (``--jobs`` merges)."""
    if server is not None:
        return server
    if first and usage is not None and usage.cache_read_tokens > maximum:
        return (
            "not visible in the input: the cache was warm before the recording's first request"
            f" ({plural(usage.cache_read_tokens, 'token')} read)"
        )
    return None


def no_breakpoints(records: Sequence[RequestRecord]) -> tuple[str, ...]:
    """One diagnosis per conversation whose provider caches only marked prefixes and none is.

    Anthropic (and Converse, and OpenRouter's Anthropic routing) writes a prefix only where a
    breakpoint marks it: "Prompt caching references the entire prompt - tools, system, and
    messages (in that order) up to and including the block designated with cache_control"
    (https://platform.claude.com/docs/en/build-with-claude/prompt-caching, read 2026-12-02). A
    conversation without any ``cache_control`` (or ``cachePoint``) reads nothing, whatever it
    repeats: the most common Anthropic caching mistake.
    """
    by_conversation: dict[int, list[RequestRecord]] = {}
    for record in records:
        if record.breakpoints is not None:
            by_conversation.setdefault(record.conversation, []).append(record)
    out = []
    for number, group in by_conversation.items():
        if len(group) < 2 or any(r.breakpoints for r in group):
            continue
        ideal = sum(r.ideal_cacheable_tokens or 0 for r in group)
        total = sum(r.total_tokens for r in group)
        if not ideal:
            continue
        first, last = group[0].index, group[-1].index
        out.append(
            f"conversation {number} (requests {first}-{last}, {group[0].provider}): no cache"
            f" breakpoint in any request, so nothing is written to the cache and nothing read;"
            f" breakpoints on the last tool, the system prompt and the newest message would reach"
            f" {ideal} of {total} estimated tokens"
        )
    return tuple(out)
