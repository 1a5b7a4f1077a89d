"""Hand-written Gemini ``generateContent`` and Bedrock Converse bodies for the auditor tests.

Modelled on the API references (https://ai.google.dev/api/generate-content,
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html) and on the
cassettes pydantic-ai records; independent of llmcore.providers.
"""

from __future__ import annotations

from typing import Any

from llmcore import jsonbytes

GEMINI_URI = "https://generativelanguage.googleapis.com/v1beta/models/{model}:generateContent"
CONVERSE_URI = "https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}/converse"
INVOKE_URI = "https://bedrock-runtime.us-east-1.amazonaws.com/model/{model}/invoke"
POINT: dict[str, Any] = {"cachePoint": {"type": "default"}}

WEATHER_DECL = {
    "name": "get_weather",
    "description": "Weather for a city.",
    "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
}


def gemini(
    contents: list[dict[str, Any]],
    *,
    system: str | None = "Answer briefly.",
    tools: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
) -> bytes:
    """A ``generateContent`` body: contents, systemInstruction, tools, generationConfig."""
    body: dict[str, Any] = {"contents": contents}
    if system is not None:
        body["systemInstruction"] = {"parts": [{"text": system}], "role": "user"}
    if tools is not None:
        body["tools"] = tools
    body["generationConfig"] = {"temperature": 0}
    body.update(extra or {})
    return jsonbytes.dumps(body)


def g_user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def g_model(text: str) -> dict[str, Any]:
    return {"role": "model", "parts": [{"text": text}]}


def g_call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]}


def g_result(name: str, response: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": [{"functionResponse": {"name": name, "response": response}}]}


def converse(
    messages: list[dict[str, Any]],
    *,
    system: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> bytes:
    """A Converse body: messages, system, inferenceConfig, toolConfig (pydantic-ai's order)."""
    body: dict[str, Any] = {"messages": messages}
    body["system"] = system if system is not None else [{"text": "Answer briefly."}]
    body["inferenceConfig"] = {"maxTokens": 512}
    if tools is not None:
        body["toolConfig"] = {"tools": tools}
    return jsonbytes.dumps(body)


def c_user(text: str, point: bool = False) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"text": text}]
    if point:
        content.append(POINT)
    return {"role": "user", "content": content}


def c_assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"text": text}]}


def tool_spec(name: str, description: str) -> dict[str, Any]:
    schema = {"json": {"type": "object", "properties": {"city": {"type": "string"}}}}
    return {"toolSpec": {"name": name, "description": description, "inputSchema": schema}}
