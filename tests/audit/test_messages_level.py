"""PROVIDER-RULES §1.6: an image appearing, or tool_choice changing, misses the messages level.

The bodies carry no breakpoint, so what is checked is the ideal maximum (what breakpoints on
every block would reach); the tool-use system prompt (346 tokens) is cached with the tools.
"""

from llmcore import jsonbytes
from llmcore.audit import audit_bodies
from llmcore.audit.estimate import FAMILIES, item_tokens

TOOLS = [{"name": "t", "description": "d" * 4000, "input_schema": {"type": "object"}}]
SYSTEM = [{"type": "text", "text": "s" * 4000}]
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}


def body(messages, **extra):
    return jsonbytes.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 10,
            "system": SYSTEM,
            "tools": TOOLS,
            "messages": messages,
            **extra,
        }
    )


def text(role, value):
    return {"role": role, "content": [{"type": "text", "text": value}]}


def tokens_of(value, tool=False):
    return item_tokens(value, FAMILIES["anthropic"], tool=tool)


FIRST = [text("user", "q" * 400)]
SECOND = [*FIRST, text("assistant", "a"), {"role": "user", "content": [IMAGE]}]
TOOLS_SYSTEM = 346 + tokens_of(TOOLS[0], tool=True) + tokens_of(SYSTEM[0])


def test_first_image_caps_the_shared_prefix_at_tools_and_system():
    report = audit_bodies([body(FIRST), body(SECOND)])
    assert report.requests[1].ideal_cacheable_tokens == TOOLS_SYSTEM
    # The bytes are a prefix, but the messages level's key changed: a break of kind parameter
    # (issue 19) whose loss is the earlier request's messages level.
    second = report.requests[1]
    assert (second.verdict, second.kind, second.parameter) == ("break", "parameter", "first image")
    assert second.path == "messages[2].content[0]" and second.divergence == "messages"
    assert second.lost_tokens == tokens_of(FIRST[0]["content"][0])


def test_without_a_toggle_the_whole_earlier_request_is_cacheable():
    plain = [*FIRST, text("assistant", "a"), text("user", "next")]
    report = audit_bodies([body(FIRST), body(plain)])
    assert report.requests[1].ideal_cacheable_tokens == TOOLS_SYSTEM + tokens_of(
        FIRST[0]["content"][0]
    )


def test_after_the_image_later_requests_share_the_messages_again():
    third = [*SECOND, text("assistant", "b"), text("user", "more")]
    report = audit_bodies([body(FIRST), body(SECOND), body(third)])
    shared = (
        TOOLS_SYSTEM
        + tokens_of(FIRST[0]["content"][0])
        + tokens_of(SECOND[1]["content"][0])
        + tokens_of(IMAGE)
    )
    assert tokens_of(IMAGE) == 1600 + 5  # bytes that are no image: Anthropic's largest image
    assert report.requests[2].ideal_cacheable_tokens == shared


def test_tool_choice_change_misses_the_messages_level():
    report = audit_bodies([body(FIRST), body(FIRST, tool_choice={"type": "any"})])
    # the tool-use system prompt is 313 tokens with tool_choice any (346 with auto)
    assert report.requests[1].ideal_cacheable_tokens == TOOLS_SYSTEM - 346 + 313
