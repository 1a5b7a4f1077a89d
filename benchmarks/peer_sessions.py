"""Each peer plays the emulator's scripted agent session; its cache hits and argument bytes.

The emulator (``llmcore.emulator.Emulator``, started in-process on loopback) answers from its
built-in agent script (``AGENT_SCRIPT``: tool calls with parallel calls, non-ASCII and unusually
spaced argument bytes, a 12 KB result, an image). Each peer is pointed at its base URL and
driven as its documentation shows for a tool-using agent loop, with prompt caching turned on
the peer's own way:

* anthropic SDK: dict messages, the response's ``content`` appended as the assistant turn,
  top-level ``cache_control`` (automatic caching);
* openai SDK: dict messages, the response's ``message`` appended (caching is automatic);
* pydantic-ai: ``await Agent.run(prompt, message_history=result.all_messages())`` with the tools
  as functions; ``anthropic_cache=True`` on Anthropic;
* LiteLLM: ``litellm.completion`` with Chat-shaped messages, the response's ``message``
  appended; ``cache_control_injection_points`` (system and last message) on Anthropic.

Every request and response crossing the peer's HTTP client is recorded by a wrapping transport.
From them: the hit rate (Σ cache read ÷ Σ prompt tokens as the emulator reported them), the
auditor's theoretical maximum for the bodies sent (``llmcore.audit.audit_bodies``), and the share
of tool-call arguments sent back byte for byte (:func:`argument_share`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from benchmarks.peer_drivers import pydantic_model
from llmcore import jsonbytes
from llmcore.audit import audit_bodies
from llmcore.emulator import AGENT_TOOLS, AgentWorkspace, Emulator, ManualClock
from llmcore.emulator.session import PROMPTS, SYSTEM

Prompts = Sequence[str]
SESSION_MODELS = {"anthropic": "claude-sonnet-4-6", "openai-chat": "gpt-4o"}


@dataclass
class Recorder:
    """Request and response bodies seen by a peer's HTTP client, in order."""

    requests: list[bytes] = field(default_factory=list)
    responses: list[bytes] = field(default_factory=list)


def recording_transport(module: Any, recorder: Recorder, *, asynchronous: bool) -> Any:
    """A transport of ``module`` (``httpx`` or ``httpx2``) that records what passes through it."""
    if asynchronous:

        class AsyncRecording(module.AsyncBaseTransport):  # type: ignore[misc,name-defined]
            inner = module.AsyncHTTPTransport()

            async def handle_async_request(self, req: Any) -> Any:
                recorder.requests.append(await req.aread())
                response = await self.inner.handle_async_request(req)
                recorder.responses.append(await response.aread())
                return response

            async def aclose(self) -> None:
                await self.inner.aclose()

        return AsyncRecording()

    class Recording(module.BaseTransport):  # type: ignore[misc,name-defined]
        inner = module.HTTPTransport()

        def handle_request(self, req: Any) -> Any:
            recorder.requests.append(req.read())
            response = self.inner.handle_request(req)
            recorder.responses.append(response.read())
            return response

        def close(self) -> None:
            self.inner.close()

    return Recording()


# ------------------------------------------------------------------ agent loops


def run_tool(workspace: AgentWorkspace, name: str, arguments: bytes) -> tuple[str, bool, Any]:
    """(text, is_error, image or None) of one tool call on the workspace."""
    outcome = workspace.call(name, arguments)
    return outcome.content.decode("utf-8", "replace"), outcome.is_error, outcome.image


def anthropic_tools() -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": json.loads(t.schema_json())}
        for t in AGENT_TOOLS
    ]


def chat_tools() -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": json.loads(t.schema_json()),
            },
        }
        for t in AGENT_TOOLS
    ]


def data_url(image: tuple[bytes, str]) -> str:
    return f"data:{image[1]};base64,{base64.b64encode(image[0]).decode()}"


def anthropic_sdk_session(base_url: str, recorder: Recorder, prompts: Prompts) -> None:
    import anthropic
    import httpx2

    http = httpx2.Client(transport=recording_transport(httpx2, recorder, asynchronous=False))
    client = anthropic.Anthropic(api_key="peer", base_url=base_url, http_client=http)
    workspace = AgentWorkspace()
    messages: list[dict[str, Any]] = []
    tools = anthropic_tools()
    for prompt in prompts:
        messages.append({"role": "user", "content": prompt})
        while True:
            response = client.messages.create(
                model=SESSION_MODELS["anthropic"],
                max_tokens=1024,
                system=SYSTEM,
                tools=tools,  # type: ignore[arg-type]
                messages=messages,  # type: ignore[arg-type]
                cache_control={"type": "ephemeral"},
            )
            messages.append({"role": "assistant", "content": response.content})
            calls = [b for b in response.content if b.type == "tool_use"]
            if not calls:
                break
            results: list[dict[str, Any]] = []
            images: list[dict[str, Any]] = []
            for call in calls:
                text, error, image = run_tool(workspace, call.name, json.dumps(call.input).encode())
                results.append(
                    {"type": "tool_result", "tool_use_id": call.id, "content": text}
                    | ({"is_error": True} if error else {})
                )
                if image is not None:
                    source = {
                        "type": "base64",
                        "media_type": image[1],
                        "data": base64.b64encode(image[0]).decode(),
                    }
                    images.append({"type": "image", "source": source})
            messages.append({"role": "user", "content": results + images})
    http.close()


def chat_loop(
    create: Callable[[list[dict[str, Any]]], Any],
    as_message: Callable[[Any], Any],
    prompts: Prompts,
) -> None:
    """The Chat-shaped tool loop shared by the openai SDK and LiteLLM."""
    workspace = AgentWorkspace()
    messages: list[Any] = [{"role": "system", "content": SYSTEM}]
    for prompt in prompts:
        messages.append({"role": "user", "content": prompt})
        while True:
            message = create(messages).choices[0].message
            messages.append(as_message(message))
            if not message.tool_calls:
                break
            images = []
            for call in message.tool_calls:
                text, _, image = run_tool(
                    workspace, call.function.name, call.function.arguments.encode()
                )
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
                if image is not None:
                    images.append({"type": "image_url", "image_url": {"url": data_url(image)}})
            if images:
                messages.append({"role": "user", "content": images})


def openai_sdk_session(base_url: str, recorder: Recorder, prompts: Prompts) -> None:
    import httpx2
    import openai

    http = httpx2.Client(transport=recording_transport(httpx2, recorder, asynchronous=False))
    client = openai.OpenAI(api_key="peer", base_url=base_url + "/v1", http_client=http)
    tools = chat_tools()

    def create(messages: list[dict[str, Any]]) -> Any:
        return client.chat.completions.create(
            model=SESSION_MODELS["openai-chat"],
            max_completion_tokens=1024,
            tools=tools,  # type: ignore[arg-type]
            messages=messages,  # type: ignore[arg-type]
        )

    chat_loop(create, lambda message: message, prompts)
    http.close()


def litellm_session(provider: str, base_url: str, recorder: Recorder, prompts: Prompts) -> None:
    import httpx
    import httpx2
    import litellm
    import openai
    from litellm.llms.custom_httpx.http_handler import HTTPHandler

    extra: dict[str, Any] = {}
    if provider == "anthropic":
        http: Any = httpx.Client(transport=recording_transport(httpx, recorder, asynchronous=False))
        client: Any = HTTPHandler(client=http)
        model = f"anthropic/{SESSION_MODELS['anthropic']}"
        extra["api_base"] = base_url
        extra["cache_control_injection_points"] = [
            {"location": "message", "role": "system"},
            {"location": "message", "index": -1},
        ]
    else:
        http = httpx2.Client(transport=recording_transport(httpx2, recorder, asynchronous=False))
        client = openai.OpenAI(api_key="peer", base_url=base_url + "/v1", http_client=http)
        model = f"openai/{SESSION_MODELS['openai-chat']}"
    tools = chat_tools()

    def create(messages: list[dict[str, Any]]) -> Any:
        return litellm.completion(
            model=model,
            messages=messages,
            tools=tools,
            max_tokens=1024,
            api_key="peer",
            client=client,
            **extra,
        )

    chat_loop(create, lambda message: message, prompts)
    http.close()


def pydantic_ai_session(provider: str, base_url: str, recorder: Recorder, prompts: Prompts) -> None:
    import asyncio

    import httpx2
    from pydantic_ai import Agent, BinaryContent, Tool, ToolReturn

    transport = recording_transport(httpx2, recorder, asynchronous=True)
    http = httpx2.AsyncClient(transport=transport)
    url = base_url if provider == "anthropic" else base_url + "/v1"
    model = pydantic_model(provider, SESSION_MODELS[provider], url, http)
    workspace = AgentWorkspace()

    def tool(name: str) -> Callable[..., Any]:
        def run(**arguments: str) -> Any:
            text, _, image = run_tool(workspace, name, jsonbytes.dumps(arguments))
            if image is None:
                return text
            return ToolReturn(
                return_value=text, content=[BinaryContent(data=image[0], media_type=image[1])]
            )

        return run

    tools = [
        Tool.from_schema(
            tool(t.name),
            name=t.name,
            description=t.description,
            json_schema=json.loads(t.schema_json()),
        )
        for t in AGENT_TOOLS
    ]
    settings: dict[str, Any] = {"max_tokens": 1024}
    if provider == "anthropic":
        settings["anthropic_cache"] = True
    agent: Any = Agent(model, instructions=SYSTEM, tools=tools, model_settings=settings)

    async def play() -> None:
        history: list[Any] = []
        for prompt in prompts:
            history = (await agent.run(prompt, message_history=history)).all_messages()
        await http.aclose()

    asyncio.run(play())


PEER_SESSIONS: dict[tuple[str, str], Callable[[str, Recorder, Prompts], None]] = {
    ("anthropic SDK", "anthropic"): anthropic_sdk_session,
    ("openai SDK", "openai-chat"): openai_sdk_session,
    **{("pydantic-ai", p): partial(pydantic_ai_session, p) for p in SESSION_MODELS},
    **{("LiteLLM", p): partial(litellm_session, p) for p in SESSION_MODELS},
}
"""The agent loop of each (peer, provider); llmcore's is added below its definition."""


# ------------------------------------------------------------------ measurements


@dataclass(frozen=True)
class SessionStats:
    """One peer's session on one provider."""

    requests: int
    hit_rate: float
    theoretical_hit_rate: float
    arguments: int
    arguments_exact: int
    bodies: tuple[bytes, ...] = ()

    @property
    def argument_share(self) -> float:
        return self.arguments_exact / self.arguments if self.arguments else 1.0

    def to_json(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "hitRate": round(self.hit_rate, 6),
            "theoreticalHitRate": round(self.theoretical_hit_rate, 6),
            "arguments": self.arguments,
            "argumentsExact": self.arguments_exact,
            "argumentShare": round(self.argument_share, 6),
        }


def usage_tokens(provider: str, response: bytes) -> tuple[int, int]:
    """(cache read, prompt tokens) of one response as the emulator reported them."""
    usage = json.loads(response)["usage"]
    if provider == "anthropic":
        read = usage.get("cache_read_input_tokens") or 0
        write = usage.get("cache_creation_input_tokens") or 0
        return read, usage["input_tokens"] + read + write
    details = usage.get("prompt_tokens_details") or {}
    return details.get("cached_tokens") or 0, usage["prompt_tokens"]


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


_DECODER = json.JSONDecoder()


def _walk(text: str, i: int, found: list[tuple[str, str]]) -> tuple[Any, int]:
    """Parse the value at ``i``; note the raw ``input`` text of every ``tool_use`` object."""
    i = _skip(text, i)
    if text[i] not in "{[":
        return _DECODER.raw_decode(text, i)
    if text[i] == "[":
        items, i = [], _skip(text, i + 1)
        while text[i] != "]":
            item, i = _walk(text, i, found)
            items.append(item)
            i = _skip(text, i)
            i = _skip(text, i + 1) if text[i] == "," else i
        return items, i + 1
    fields: dict[str, Any] = {}
    raw: dict[str, str] = {}
    i = _skip(text, i + 1)
    while text[i] != "}":
        key, i = _DECODER.raw_decode(text, i)
        i = _skip(text, _skip(text, i) + 1)  # past the colon
        start = i
        fields[key], i = _walk(text, i, found)
        raw[key] = text[start:i]
        i = _skip(text, i)
        i = _skip(text, i + 1) if text[i] == "," else i
    if fields.get("type") == "tool_use" and "input" in raw:
        found.append((fields.get("id", ""), raw["input"]))
    return fields, i + 1


def tool_arguments(provider: str, body: bytes) -> list[tuple[str, str]]:
    """(call id, argument text) of every tool call in a body, in order.

    Anthropic: the raw source text of each ``tool_use`` block's ``input`` object. Chat: each
    ``tool_calls[].function.arguments`` string's value.
    """
    if provider == "anthropic":
        found: list[tuple[str, str]] = []
        _walk(body.decode("utf-8"), 0, found)
        return found
    value = json.loads(body)
    pieces = value.get("choices", [{}])[0].get("message") if "choices" in value else None
    messages = [pieces] if pieces else value.get("messages", [])
    return [
        (call["id"], call["function"]["arguments"])
        for message in messages
        for call in message.get("tool_calls") or ()
    ]


def argument_share(provider: str, requests: list[bytes], responses: list[bytes]) -> tuple[int, int]:
    """(tool calls sent back, of them byte for byte) over the session.

    Each call the emulator produced (in its response) is looked up, by id, in the first
    request after that response; it counts as exact when the argument text is identical.
    """
    total = exact = 0
    for index, response in enumerate(responses[:-1]):
        produced = dict(tool_arguments(provider, response))
        if not produced:
            continue
        carried = dict(tool_arguments(provider, requests[index + 1]))
        for call_id, text in produced.items():
            total += 1
            exact += carried.get(call_id) == text
    return total, exact


def stats(provider: str, recorder: Recorder) -> SessionStats:
    read = prompt = 0
    for response in recorder.responses:
        r, p = usage_tokens(provider, response)
        read, prompt = read + r, prompt + p
    total, exact = argument_share(provider, recorder.requests, recorder.responses)
    return SessionStats(
        requests=len(recorder.requests),
        hit_rate=read / prompt if prompt else 0.0,
        theoretical_hit_rate=audit_bodies(recorder.requests).theoretical_hit_rate,
        arguments=total,
        arguments_exact=exact,
        bodies=tuple(recorder.requests),
    )


def peer_session(peer: str, provider: str, prompts: int = len(PROMPTS)) -> SessionStats:
    """Play the first ``prompts`` user turns of the script with ``peer`` on a fresh emulator."""
    recorder = Recorder()
    with Emulator(clock=ManualClock()) as emulator:
        PEER_SESSIONS[(peer, provider)](emulator.base_url, recorder, PROMPTS[:prompts])
    return stats(provider, recorder)


def llmcore_session(provider: str, base_url: str, recorder: Recorder, prompts: Prompts) -> None:
    """llmcore's own agent loop: a :class:`~llmcore.runner.Runner` turn per prompt."""
    import httpx

    from llmcore.archive import Conversation
    from llmcore.bench import _agent_tools
    from llmcore.request import Params
    from llmcore.runner import Runner
    from llmcore.transport import HTTPTransport

    http = httpx.Client(transport=recording_transport(httpx, recorder, asynchronous=False))
    transport = HTTPTransport(
        base_urls={provider: base_url}, api_keys={provider: "peer"}, client=http
    )
    runner = Runner(
        provider=provider,
        model=SESSION_MODELS[provider],
        transport=transport,
        system=(SYSTEM,),
        tools=_agent_tools(AgentWorkspace()),
        params=Params(max_tokens=1024),
    )
    conversation = Conversation()
    for prompt in prompts:
        runner.run_turn(conversation, prompt)
    http.close()


PEER_SESSIONS.update({("llmcore", p): partial(llmcore_session, p) for p in SESSION_MODELS})
