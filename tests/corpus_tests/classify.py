"""The corpus classification: each recorded case in exactly one class (a)–(d).

(a) imported and rebuilt equal to the recorded body, key order included (order-preserving
    comparison of (key, value) pair lists);
(b) equal after named normalizations of the recorded body: the standard ones (key order,
    string-vs-array content shorthand) and the further ones of :data:`NORMALIZATIONS`, each with
    its reason; a normalization marked ``both_sides`` is applied to the rebuilt body too;
(c) refused by import with :class:`~llmcore.errors.UnsupportedContentError` naming a feature;
(d) no importable body: ``request`` is not a JSON object, or it is not a well-formed body of
    its API — import raises :class:`~llmcore.errors.RequestFileError` naming the path — and the
    API itself refused it (recorded status 400; anthropic/0004 sends a bare string as a message).

Where a case keeps ``request_raw``, :func:`classify` also says whether the rebuilt bytes equal it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmcore.errors import RequestFileError, UnsupportedContentError
from llmcore.providers import get_provider
from tests.corpus_tests import normalize as n
from tests.corpus_tests import normalize_converse as nc
from tests.corpus_tests.normalize import Normalization, Obj

STANDARD = ("key order", "content shorthand")

_DROP_THINKING = Normalization(
    "thinking dropped",
    "thinking / redacted_thinking blocks are provider-only data and never enter the history (M4)",
    n.anthropic_drop_thinking,
)
_EMPTY_MESSAGES = Normalization(
    "empty messages dropped",
    "a message with no content left (empty string, only thinking) is not sent (M1)",
    n.drop_empty_messages,
)
_MARKERS = Normalization(
    "cache_control placed by P3",
    "import drops recorded markers and llmcore places its own breakpoints (P3); markers are "
    "deleted on both sides (their placement is pinned by the provider golden tests)",
    n.strip_markers,
    both_sides=True,
)
_TTL = Normalization(
    "ttl 5m default",
    'an explicit "ttl": "5m" is the API default; llmcore writes ttl only for 1h',
    n.ttl_5m_default,
)

NORMALIZATIONS: dict[str, tuple[Normalization, ...]] = {
    "anthropic": (
        _TTL,
        _DROP_THINKING,
        Normalization(
            "is_error false dropped",
            "llmcore sends is_error only when true (false is the API default)",
            n.anthropic_is_error_false,
        ),
        Normalization(
            "tool result text blocks joined",
            "a tool result's content is raw bytes (M2): an array of text blocks is read as "
            "their joined text and sent as one string",
            n.anthropic_join_result_text,
        ),
        Normalization(
            "empty tool result content omitted",
            "an empty result is sent without content (never an empty string or array)",
            n.anthropic_empty_result_content,
        ),
        Normalization(
            "empty text blocks dropped",
            "no empty text block is ever sent (they cannot carry a breakpoint and the API "
            "rejects them in some positions)",
            n.drop_empty_text,
        ),
        Normalization(
            "tool results split from user content",
            "the history has tool messages (results only) and user messages (text, images), "
            "M1; a wire message mixing both is rebuilt as two messages",
            n.anthropic_split_results,
        ),
        _EMPTY_MESSAGES,
        Normalization(
            "empty tool description omitted",
            "an empty description is not sent",
            n.drop_empty_tool_description,
        ),
        _MARKERS,
    ),
    "openai-responses": (
        Normalization(
            "store false added",
            "llmcore replays the whole history every request and never keeps server state, so "
            "every body sends store: false",
            n.responses_store_false,
        ),
        Normalization(
            "strict false added",
            "a function tool always sends strict (the openai FunctionToolParam requires it); "
            "absent means false",
            n.responses_strict_false,
        ),
        Normalization(
            "empty instructions omitted",
            "an all-empty system prompt sends no instructions",
            n.responses_empty_instructions,
        ),
        Normalization(
            "system items as instructions",
            "the system prompt is request-level (M1): leading system / developer message items "
            "are imported as the system prompt and rebuilt as instructions",
            n.responses_system_items,
        ),
        Normalization(
            "reasoning items dropped",
            "reasoning items are provider-only data and never enter the history (M4)",
            n.responses_drop_reasoning,
        ),
        Normalization(
            "item id / status dropped",
            "provider ids, status and phase of replayed items are provider-only data (M4)",
            n.responses_drop_item_ids,
        ),
        Normalization(
            "empty assistant text dropped",
            "no empty text is sent (an empty assistant message has no content, M1)",
            n.responses_drop_empty_assistant_text,
        ),
        Normalization(
            "empty tool description omitted",
            "an empty or null description is not sent (no optional field is sent as null)",
            n.responses_empty_tool_description,
        ),
        Normalization(
            "empty tools omitted",
            "an empty tools array is not sent",
            n.responses_empty_tools,
        ),
        Normalization(
            "assistant output_text parts as string",
            "assistant text is stored as text (M2) and replayed as an EasyInputMessage with "
            "string content; output_text parts (with empty annotations) are joined",
            n.responses_assistant_text_string,
        ),
    ),
    "openai-chat": (
        Normalization(
            "empty assistant content omitted",
            "an assistant message of tool calls only omits content (never null or empty)",
            n.chat_assistant_empty_content,
        ),
        _EMPTY_MESSAGES,
        Normalization(
            "empty tool description omitted",
            "an empty description is not sent",
            n.chat_empty_tool_description,
        ),
        Normalization(
            "developer role as system",
            "the system prompt is request-level (M1); a leading developer message is imported "
            "as the system prompt and rebuilt as a system message",
            n.chat_developer_as_system,
        ),
        Normalization(
            "cache markers dropped",
            "recorded prompt_cache_breakpoint / cache_control markers are dropped by import; "
            "OpenAI explicit breakpoints are a later option (P3); deleted on both sides",
            n.strip_breakpoints,
            both_sides=True,
        ),
    ),
}

NORMALIZATIONS["bedrock-converse"] = (
    Normalization(
        "empty system / inferenceConfig omitted",
        "an all-empty system and an empty inferenceConfig are not sent",
        nc.empty_top_members,
    ),
    Normalization(
        "reasoning dropped",
        "reasoningContent blocks are provider-only data and never enter the history (M4)",
        nc.drop_reasoning,
    ),
    Normalization(
        "status success dropped",
        "a tool result sends status only as error (success is what a result without it means)",
        nc.status_success,
    ),
    Normalization(
        "tool result content as one text",
        "a tool result's content is raw bytes (M2): text parts are joined, a json part is its "
        "compact JSON text, sent as one text block",
        nc.result_text,
    ),
    Normalization(
        "empty text blocks dropped",
        "no empty text block is ever sent (the API refuses blank text)",
        nc.drop_empty_text,
    ),
    Normalization(
        "cachePoint placed by P3",
        "import drops recorded cachePoint blocks and llmcore places its own (P3); they are "
        "deleted on both sides (their placement is pinned by the provider golden tests)",
        nc.strip_cache_points,
        both_sides=True,
    ),
)

SHORTHAND = {
    "anthropic": n.anthropic_shorthand,
    "openai-chat": n.chat_shorthand,
    "openai-responses": n.responses_shorthand,
    "bedrock-converse": lambda body: body,  # Converse has no shorthand forms
}


@dataclass(frozen=True)
class Outcome:
    """Where one case landed."""

    klass: str
    """``a``, ``b``, ``c``, ``d``, or ``none`` (the test fails)."""
    detail: tuple[str, ...] = ()
    """(b) the normalizations used; (c) the refused feature; ``none`` what went wrong."""
    byte_equal: bool | None = None
    """With ``request_raw``: whether the rebuilt bytes equal it; else ``None``."""


def normalize(api: str, recorded: Obj, rebuilt: Obj) -> tuple[Any, Any, list[str]]:
    """Apply the standard and then every further normalization; return what changed."""
    used: list[str] = []
    shorthand = SHORTHAND[api](recorded)
    if shorthand != recorded:
        used.append("content shorthand")
    recorded = shorthand
    for norm in NORMALIZATIONS[api]:
        changed = norm.apply(recorded)
        other = norm.apply(rebuilt) if norm.both_sides else rebuilt
        if changed != recorded:
            used.append(norm.name)
        recorded, rebuilt = changed, other
    return recorded, rebuilt, used


def classify(api: str, case: dict[str, Any]) -> Outcome:
    """Put one corpus case in its class."""
    body = case["request"]
    if not isinstance(body, dict):
        return Outcome("d")
    provider = get_provider(api)
    try:
        imported, raw_bytes = _import_arguments(api, body, case)
        result = provider.import_body(imported, raw=raw_bytes)
    except UnsupportedContentError as exc:
        return Outcome("c", (exc.feature,))
    except RequestFileError as exc:
        if case.get("status") == 400:
            return Outcome("d", (f"malformed body the API refused: {exc}",))
        return Outcome("none", (f"import raised RequestFileError: {exc}",))
    except Exception as exc:  # noqa: BLE001 - any other failure is a case outside the classes
        return Outcome("none", (f"import raised {type(exc).__name__}: {exc}",))
    try:
        built = provider.build_body(result.request)
    except Exception as exc:  # noqa: BLE001
        return Outcome("none", (f"rebuild raised {type(exc).__name__}: {exc}",))
    raw = case.get("request_raw")
    byte_equal = None if raw is None else built == raw.encode("utf-8")
    recorded = n.parse(raw) if raw is not None else n.to_obj(case["request"])
    rebuilt = n.parse(built)
    if rebuilt == recorded:
        return Outcome("a", (), byte_equal)
    recorded_n, rebuilt_n, used = normalize(api, recorded, rebuilt)
    if n.sort_keys(rebuilt_n) == n.sort_keys(recorded_n):
        if _key_order_differs(recorded_n, rebuilt_n):
            used.insert(0, "key order")
        return Outcome("b", tuple(used), byte_equal)
    return Outcome("none", ("rebuilt body differs after every normalization",), byte_equal)


def _import_arguments(
    api: str, body: dict[str, Any], case: dict[str, Any]
) -> tuple[dict[str, Any], bytes | None]:
    """Return ``import_body``'s arguments: a Converse body gets its URL's model as ``modelId``
    and its recorded bytes (for the exact spans of ``toolUse.input``)."""
    if api != "bedrock-converse":
        return body, None
    raw = case.get("request_raw")
    body = {**body, "modelId": case["meta"]["model_id"]}
    return body, raw.encode("utf-8") if raw is not None else None


def _key_order_differs(a: Any, b: Any) -> bool:
    return json.dumps(a) != json.dumps(b)


def load_case(path: Path) -> dict[str, Any]:
    """Read one corpus case file."""
    value: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return value
