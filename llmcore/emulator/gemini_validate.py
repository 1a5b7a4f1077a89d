"""Gemini ``generateContent`` request validation, as the real API refuses (SPEC V2).

Each rule raises :class:`~llmcore.emulator.errors.Rejection` (400, ``INVALID_ARGUMENT``) with
the API's own wording where it is known:

* Unknown fields, at the top level and inside ``contents``, parts, ``systemInstruction``,
  ``tools``, ``toolConfig`` and ``generationConfig``: ``Invalid JSON payload received. Unknown
  name "x" at 'path': Cannot find field.`` (the proto JSON parser's message).
* ``contents`` must be a non-empty array; roles ``user`` / ``model`` (``function`` is accepted
  as a synonym for ``user``, as the API does); every content needs ``parts``, each part exactly
  one data field.
* Function calling turns (https://ai.google.dev/gemini-api/docs/function-calling): "Please
  ensure that function call turn comes immediately after a user turn or after a function
  response turn."; "Please ensure that function response turn comes immediately after a
  function call turn."; "Please ensure that the number of function response parts is equal to
  the number of function call parts of the function call turn."
* A request naming ``cachedContent`` may not also send ``systemInstruction``, ``tools`` or
  ``toolConfig`` (PROVIDER-RULES §4): "CachedContent can not be used with GenerateContent
  request setting system_instruction, tools or tool_config."
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.emulator.errors import Rejection

__all__ = ["camel", "camel_get", "validate_gemini"]

_TOP: Final = frozenset(
    {
        "contents",
        "systemInstruction",
        "system_instruction",
        "tools",
        "toolConfig",
        "tool_config",
        "generationConfig",
        "generation_config",
        "safetySettings",
        "safety_settings",
        "cachedContent",
        "cached_content",
        "labels",
        "serviceTier",
        "model",
    }
)
_DATA: Final = frozenset(
    {
        "text",
        "inlineData",
        "inline_data",
        "functionCall",
        "function_call",
        "functionResponse",
        "function_response",
        "fileData",
        "file_data",
        "executableCode",
        "codeExecutionResult",
    }
)
_PART: Final = _DATA | {
    "thought",
    "thoughtSignature",
    "thought_signature",
    "videoMetadata",
    "mediaResolution",
    "partMetadata",
}
_CALL: Final = frozenset({"id", "name", "args", "partialArgs", "willContinue"})
_RESPONSE: Final = frozenset({"id", "name", "response", "parts", "willContinue", "scheduling"})
_CONFIG: Final = frozenset(
    {
        "temperature",
        "topP",
        "topK",
        "candidateCount",
        "maxOutputTokens",
        "stopSequences",
        "presencePenalty",
        "frequencyPenalty",
        "seed",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "responseLogprobs",
        "logprobs",
        "responseModalities",
        "thinkingConfig",
        "mediaResolution",
        "speechConfig",
        "imageConfig",
    }
)
_TOOL: Final = frozenset(
    {"functionDeclarations", "googleSearch", "codeExecution", "urlContext", "googleSearchRetrieval"}
)
_DECLARATION: Final = frozenset(
    {
        "name",
        "description",
        "parameters",
        "parametersJsonSchema",
        "response",
        "responseJsonSchema",
        "behavior",
    }
)
_CACHED_WITH: Final = (
    "CachedContent can not be used with GenerateContent request setting system_instruction, "
    "tools or tool_config.\n\nProposed fix: move those values to CachedContent from "
    "GenerateContent request."
)


def camel(key: str) -> str:
    """Return a proto field name in lowerCamelCase (the API takes either spelling)."""
    head, *rest = key.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def camel_get(obj: dict[str, Any], key: str) -> Any:
    """Return ``obj[key]`` under either spelling of the field name (``None`` when absent)."""
    for name, value in obj.items():
        if camel(name) == key:
            return value
    return None


def _bad(message: str) -> Rejection:
    return Rejection(message, error_type="INVALID_ARGUMENT")


def _known(obj: Any, allowed: frozenset[str], path: str) -> dict[str, Any]:
    """Return ``obj`` as an object with only ``allowed`` keys (the API's unknown-name error)."""
    if not isinstance(obj, dict):
        raise _bad(f"Invalid JSON payload received. Expected an object at '{path}'.")
    for key in obj:
        if key not in allowed and camel(key) not in allowed:
            where = f"{path}" if path else "(root)"
            raise _bad(
                f"Invalid JSON payload received. Unknown name \"{key}\" at '{where}': "
                "Cannot find field."
            )
    return obj


def _part(part: Any, path: str) -> str:
    """Check one part; return its data field's name (camelCase)."""
    obj = _known(part, _PART, path)
    data = [key for key in obj if camel(key) in _DATA]
    if len(data) != 1:
        raise _bad(
            f"* GenerateContentRequest.{path}.data: required oneof field 'data' must have one "
            "initialized field"
        )
    kind = camel(data[0])
    if kind == "text" and not isinstance(obj["text"], str):
        raise _bad(f"Invalid value at '{path}.text', expected a string.")
    if kind == "functionCall":
        call = _known(obj[data[0]], _CALL, f"{path}.function_call")
        if not isinstance(call.get("name"), str) or not call["name"]:
            raise _bad(f"* GenerateContentRequest.{path}.function_call.name: name cannot be empty.")
    if kind == "functionResponse":
        response = _known(obj[data[0]], _RESPONSE, f"{path}.function_response")
        if not isinstance(response.get("name"), str) or not response["name"]:
            raise _bad(
                f"* GenerateContentRequest.{path}.function_response.name: name cannot be empty."
            )
    if kind == "inlineData":
        blob = _known(
            obj[data[0]], frozenset({"mimeType", "mime_type", "data"}), f"{path}.inline_data"
        )
        if not isinstance(blob.get("data"), str):
            raise _bad(f"* GenerateContentRequest.{path}.inline_data.data: data cannot be empty.")
    return kind


def _turns(contents: list[Any]) -> None:
    """The function-calling turn rules (module doc)."""
    previous: tuple[str, int, int] | None = None  # (role, calls, responses)
    for index, content in enumerate(contents):
        obj = _known(content, frozenset({"role", "parts"}), f"contents[{index}]")
        role = obj.get("role", "user")
        if role not in ("user", "model", "function"):
            raise _bad("Please use a valid role: user, model.")
        parts = obj.get("parts")
        if not isinstance(parts, list) or not parts:
            raise _bad(
                f"* GenerateContentRequest.contents[{index}].parts: contents.parts must not be "
                "empty."
            )
        kinds = [_part(p, f"contents[{index}].parts[{i}]") for i, p in enumerate(parts)]
        calls, responses = kinds.count("functionCall"), kinds.count("functionResponse")
        if calls and (role != "model" or previous is None or previous[0] == "model"):
            raise _bad(
                "Please ensure that function call turn comes immediately after a user turn or "
                "after a function response turn."
            )
        if responses:
            if previous is None or previous[1] == 0:
                raise _bad(
                    "Please ensure that function response turn comes immediately after a "
                    "function call turn."
                )
            if responses != previous[1]:
                raise _bad(
                    "Please ensure that the number of function response parts is equal to the "
                    "number of function call parts of the function call turn."
                )
        previous = ("model" if role == "model" else "user", calls, responses)


def _tools(tools: Any) -> None:
    if not isinstance(tools, list):
        raise _bad("Invalid JSON payload received. Expected an array at 'tools'.")
    for index, tool in enumerate(tools):
        obj = _known(tool, _TOOL, f"tools[{index}]")
        declarations = camel_get(obj, "functionDeclarations") or []
        for number, decl in enumerate(declarations):
            where = f"tools[{index}].function_declarations[{number}]"
            keys = {camel(key) for key in _known(decl, _DECLARATION, where)}
            if "parameters" in keys and "parametersJsonSchema" in keys:
                raise _bad(
                    f"* GenerateContentRequest.{where}: parameters and parameters_json_schema "
                    "cannot both be set."
                )


def validate_gemini(body: Any) -> dict[str, Any]:
    """Return the validated body of a ``generateContent`` request.

    Raises:
        Rejection: A rule of the module doc is broken.
    """
    obj = {camel(key): value for key, value in _known(body, _TOP, "").items()}
    contents = obj.get("contents")
    if not isinstance(contents, list) or not contents:
        raise _bad("* GenerateContentRequest.contents: contents is not specified")
    _turns(contents)
    system = obj.get("systemInstruction")
    if system is not None:
        parts = _known(system, frozenset({"role", "parts"}), "system_instruction").get("parts")
        for index, part in enumerate(parts if isinstance(parts, list) else []):
            _part(part, f"system_instruction.parts[{index}]")
    if "tools" in obj:
        _tools(obj["tools"])
    config = obj.get("toolConfig")
    if config is not None:
        inner = _known(
            config, frozenset({"functionCallingConfig", "retrievalConfig"}), "tool_config"
        )
        calling = camel_get(inner, "functionCallingConfig")
        if calling is not None:
            _known(
                calling,
                frozenset({"mode", "allowedFunctionNames"}),
                "tool_config.function_calling_config",
            )
    generation = obj.get("generationConfig")
    if generation is not None:
        _known(generation, _CONFIG, "generation_config")
    if obj.get("cachedContent") is not None:
        if any(
            obj.get(k) is not None
            for k in (
                "systemInstruction",
                "system_instruction",
                "tools",
                "toolConfig",
                "tool_config",
            )
        ):
            raise _bad(_CACHED_WITH)
    return obj
