"""The peers of llmcore driven the way their users drive them, each through a mock transport.

Every driver sends one request of the seeded conversation (``bench_bodies.conversation``): the
request whose history is the first ``k`` messages. A driver is built once per series (its
client, its shaped inputs); :meth:`Driver.prepare` readies the arguments of one call outside the
timed window and returns the call, which is timed *to the wire*: from its start to the moment
its own HTTP client's mock transport has read the request bytes (:class:`Wire`). The response is
a minimal one (``bench_bodies.ANTHROPIC_RESPONSE`` / ``CHAT_RESPONSE``).

Peers (each optional; :func:`missing` names the modules a peer lacks):

* ``anthropic SDK``: ``client.messages.create(**shaped)`` with llmcore's body parsed into dicts;
* ``openai SDK``: ``client.chat.completions.create(**shaped)``, likewise;
* ``pydantic-ai``: an ``Agent`` on its Anthropic model or its OpenAI Chat model, the conversation
  as ``message_history`` (``ModelRequest`` / ``ModelResponse`` parts), the tools as functions;
* ``LiteLLM``: ``litellm.completion(model="anthropic/…" or "openai/…", messages=…, tools=…)`` with
  the Chat-shaped messages, through ``client=`` (its ``HTTPHandler`` over an ``httpx`` mock
  transport for Anthropic; an ``openai.OpenAI`` client over an ``httpx2`` one for OpenAI).

llmcore itself: ``build_body`` (cold: no encode cache; incremental: the cache carried from the
previous request of the series) then ``HTTPTransport.send`` over an ``httpx.MockTransport``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from benchmarks.bench_bodies import ANTHROPIC_RESPONSE, CHAT_RESPONSE, MODELS, TOOLS, request
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.providers import get_provider
from llmcore.providers.base import EncodeCache
from llmcore.transport import HTTPTransport

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price table

PROVIDERS = ("anthropic", "openai-chat")
SYSTEM_TEXT = request("anthropic", []).system[0]

PEER_MODULES: dict[str, tuple[str, ...]] = {
    "anthropic SDK": ("anthropic", "httpx2"),
    "openai SDK": ("openai", "httpx2"),
    "pydantic-ai": ("pydantic_ai", "anthropic", "openai", "httpx2"),
    "LiteLLM": ("litellm", "openai", "httpx2"),
}
"""Each peer and the modules it needs (all installed by the ``peers`` extra)."""

PEER_PROVIDERS: dict[str, tuple[str, ...]] = {
    "anthropic SDK": ("anthropic",),
    "openai SDK": ("openai-chat",),
    "pydantic-ai": PROVIDERS,
    "LiteLLM": PROVIDERS,
}
"""The wire formats each peer is measured on."""


def missing(peer: str) -> list[str]:
    """The modules ``peer`` needs that are not installed."""
    return [m for m in PEER_MODULES[peer] if importlib.util.find_spec(m) is None]


@dataclass
class Wire:
    """What a mock transport received last, and when."""

    payload: bytes
    """The response body it answers with."""
    at: float = 0.0
    """``time.perf_counter()`` once the request bytes were read."""
    body: bytes = b""
    """The request bytes."""

    def receive(self, content: bytes) -> bytes:
        self.at = time.perf_counter()
        self.body = content
        return self.payload

    def timed(self, call: Callable[[], object]) -> float:
        """Milliseconds from the call's start to the transport having read the bytes."""
        start = time.perf_counter()
        call()
        return (self.at - start) * 1000


def wire_for(provider: str) -> Wire:
    payload = ANTHROPIC_RESPONSE if provider == "anthropic" else CHAT_RESPONSE
    return Wire(json.dumps(payload).encode())


JSON = {"content-type": "application/json"}


def httpx_client(wire: Wire) -> httpx.Client:
    def handler(req: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=wire.receive(req.read()), headers=JSON)

    return httpx.Client(transport=httpx.MockTransport(handler))


def httpx2_transport(wire: Wire) -> Any:
    import httpx2

    def handler(req: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=wire.receive(req.read()), headers=JSON)

    return httpx2.MockTransport(handler)


# ------------------------------------------------------------------ shaped inputs


@dataclass
class Shaped:
    """The conversation as one wire format's dicts, sliceable by neutral message count."""

    top: dict[str, Any]
    """Every field of the body but ``messages``."""
    lead: list[dict[str, Any]]
    """Wire messages before the conversation's (Chat: the system message)."""
    messages: list[dict[str, Any]]
    """The wire messages of the whole conversation."""
    ends: list[int] = field(default_factory=list)
    """``ends[k]``: how many wire messages the first ``k`` neutral messages make."""

    def body(self, k: int) -> dict[str, Any]:
        return {**self.top, "messages": [*self.lead, *self.messages[: self.ends[k]]]}


def shaped(provider: str, messages: Sequence[Message]) -> Shaped:
    """Parse llmcore's body of the whole conversation into the dicts a peer's user holds."""
    body = json.loads(get_provider(provider).build_body(request(provider, list(messages))))
    wire = body.pop("messages")
    lead = wire[:1] if provider == "openai-chat" else []
    wire = wire[len(lead) :]
    ends = [0]
    for message in messages:  # Chat: one tool message per tool result
        many = provider == "openai-chat" and message.role == "tool"
        ends.append(ends[-1] + (len(message.content) if many else 1))
    if ends[-1] != len(wire):
        raise AssertionError(f"{provider}: {ends[-1]} wire messages expected, {len(wire)} built")
    return Shaped(top=body, lead=lead, messages=wire, ends=ends)


# ------------------------------------------------------------------ drivers


class Driver:
    """One series: a peer (or llmcore) on one wire format."""

    name: str
    provider: str
    wire: Wire

    def prepare(self, k: int) -> Callable[[], object]:
        """Ready the call sending the request with the first ``k`` messages (not timed)."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the client."""


class SDKDriver(Driver):
    def __init__(self, provider: str, messages: Sequence[Message]) -> None:
        import httpx2

        self.provider = provider
        self.wire = wire_for(provider)
        self.shaped = shaped(provider, messages)
        self.http = httpx2.Client(transport=httpx2_transport(self.wire))
        if provider == "anthropic":
            import anthropic

            self.name = "anthropic SDK"
            client_a = anthropic.Anthropic(api_key="test", http_client=self.http, max_retries=0)
            self.create: Callable[..., object] = client_a.messages.create
        else:
            import openai

            self.name = "openai SDK"
            client_o = openai.OpenAI(api_key="test", http_client=self.http, max_retries=0)
            self.create = client_o.chat.completions.create

    def prepare(self, k: int) -> Callable[[], object]:
        body = self.shaped.body(k)
        return lambda: self.create(**body)

    def close(self) -> None:
        self.http.close()


class LiteLLMDriver(Driver):
    def __init__(self, provider: str, messages: Sequence[Message]) -> None:
        import httpx2
        import litellm
        import openai
        from litellm.llms.custom_httpx.http_handler import HTTPHandler

        litellm.telemetry = False
        self.name = "LiteLLM"
        self.provider = provider
        self.wire = wire_for(provider)
        chat = shaped("openai-chat", messages)  # LiteLLM's users write Chat-shaped messages
        self.shaped = chat
        self.top = {k: v for k, v in chat.top.items() if k != "model"}
        if provider == "anthropic":
            self.model = f"anthropic/{MODELS['anthropic']}"
            self.http: Any = httpx_client(self.wire)
            self.client: Any = HTTPHandler(client=self.http)
        else:
            self.model = f"openai/{MODELS['openai-chat']}"
            self.http = httpx2.Client(transport=httpx2_transport(self.wire))
            self.client = openai.OpenAI(api_key="test", http_client=self.http, max_retries=0)
        self.completion = litellm.completion

    def prepare(self, k: int) -> Callable[[], object]:
        messages = self.shaped.body(k)["messages"]

        def call() -> object:
            return self.completion(
                model=self.model, messages=messages, api_key="test", client=self.client, **self.top
            )

        return call

    def close(self) -> None:
        self.http.close()


def pydantic_history(messages: Sequence[Message]) -> list[Any]:
    """The conversation as pydantic-ai ``message_history`` (requests and responses)."""
    from pydantic_ai import messages as pm

    history: list[Any] = []
    for message in messages:
        if message.role == "assistant":
            parts: list[Any] = []
            for part in message.content:
                if isinstance(part, Text):
                    parts.append(pm.TextPart(content=part.text))
                elif isinstance(part, ToolCall):
                    parts.append(
                        pm.ToolCallPart(
                            tool_name=part.name,
                            args=part.arguments.decode(),
                            tool_call_id=part.id,
                        )
                    )
            history.append(pm.ModelResponse(parts=parts))
        elif message.role == "tool":
            returns = [
                pm.ToolReturnPart(
                    tool_name=r.tool_name,
                    content=r.content.decode("utf-8", "replace"),
                    tool_call_id=r.call_id,
                )
                for r in message.content
                if isinstance(r, ToolResult)
            ]
            history.append(pm.ModelRequest(parts=returns))
        else:
            history.append(pm.ModelRequest(parts=[pm.UserPromptPart(content=user_parts(message))]))
    return history


def user_parts(message: Message) -> list[Any]:
    from pydantic_ai import messages as pm

    out: list[Any] = []
    for part in message.content:
        if isinstance(part, Text):
            out.append(part.text)
        elif isinstance(part, Image):
            out.append(pm.BinaryContent(data=part.data, media_type=part.mime_type))
    return out


def pydantic_tools() -> list[Any]:
    """The benchmark's tools as pydantic-ai function tools (never called: the reply is text)."""
    from pydantic_ai import Tool

    def read_file(path: str) -> str:
        return path

    def run_shell(cmd: str) -> str:
        return cmd

    def screenshot() -> str:
        return ""

    functions = {"read_file": read_file, "run_shell": run_shell, "screenshot": screenshot}
    return [
        Tool(functions[t.name], name=t.name, description=t.description, takes_ctx=False)
        for t in TOOLS
    ]


def pydantic_model(provider: str, model: str, base_url: str | None, http: Any) -> Any:
    """pydantic-ai's Anthropic model or OpenAI Chat model on ``http`` (an httpx2 AsyncClient)."""
    if provider == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        p_a = AnthropicProvider(api_key="test", base_url=base_url, http_client=http)
        return AnthropicModel(model, provider=p_a)
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    p_o = OpenAIProvider(api_key="test", base_url=base_url, http_client=http)
    return OpenAIChatModel(model, provider=p_o)


class PydanticAIDriver(Driver):
    def __init__(self, provider: str, messages: Sequence[Message]) -> None:
        import httpx2
        from pydantic_ai import Agent
        from pydantic_ai.settings import ModelSettings

        self.name = "pydantic-ai"
        self.provider = provider
        self.wire = wire_for(provider)
        self.http = httpx2.AsyncClient(transport=httpx2_transport(self.wire))
        model = pydantic_model(provider, MODELS[provider], None, self.http)
        self.agent: Any = Agent(
            model,
            instructions=SYSTEM_TEXT,
            tools=pydantic_tools(),
            model_settings=ModelSettings(max_tokens=4096),
        )
        self.history = pydantic_history(messages)
        self.messages = list(messages)
        self.loop = asyncio.new_event_loop()  # an async application's loop, kept across calls

    def prepare(self, k: int) -> Callable[[], object]:
        last = self.messages[k - 1]
        if last.role == "user":  # a user turn: its prompt, the history before it
            prompt: Any = user_parts(last)
            history = self.history[: k - 1]
        else:  # tool results: continue from the history ending with them
            prompt, history = None, self.history[:k]

        def call() -> object:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return self.loop.run_until_complete(self.agent.run(prompt, message_history=history))

        return call

    def close(self) -> None:
        self.loop.run_until_complete(self.http.aclose())
        self.loop.close()


class LlmcoreDriver(Driver):
    def __init__(self, provider: str, messages: Sequence[Message], *, incremental: bool) -> None:
        self.name = f"llmcore {'incremental' if incremental else 'cold'}"
        self.provider = provider
        self.wire = wire_for(provider)
        self.incremental = incremental
        self.messages = list(messages)
        self.p = get_provider(provider)
        self.http = httpx_client(self.wire)
        self.transport = HTTPTransport(
            base_urls={provider: "http://mock"}, api_keys={provider: "test"}, client=self.http
        )
        self.cache = EncodeCache()

    def warm(self, k: int) -> None:
        """Carry a fresh encode cache through the request before ``k`` (incremental only)."""
        self.cache = EncodeCache()
        if self.incremental and k > 1:
            self.p.build_body(
                request(self.provider, self.messages[: previous(self.messages, k)]),
                cache=self.cache,
            )

    def prepare(self, k: int) -> Callable[[], object]:
        req = request(self.provider, self.messages[:k])
        cache = self.cache if self.incremental else None

        def call() -> object:
            return self.transport.send(self.p, self.p.build_body(req, cache=cache))

        return call

    def close(self) -> None:
        self.http.close()


def previous(messages: Sequence[Message], k: int) -> int:
    """The history length of the request before the one with the first ``k`` messages.

    The session sends after each user message and after each tool message: the request
    before a user turn ends with the previous turn's tool results, the one before tool
    results ends with the user message that started the turn.
    """
    for j in range(k - 1, 0, -1):
        if messages[j - 1].role in ("user", "tool"):
            return j
    return 0


def session_points(messages: Sequence[Message]) -> list[int]:
    """The history lengths of the whole session's requests (after each user or tool message)."""
    return [k for k in range(1, len(messages) + 1) if messages[k - 1].role in ("user", "tool")]


PEER_DRIVERS: dict[str, Callable[[str, Sequence[Message]], Driver]] = {
    "anthropic SDK": SDKDriver,
    "openai SDK": SDKDriver,
    "pydantic-ai": PydanticAIDriver,
    "LiteLLM": LiteLLMDriver,
}
