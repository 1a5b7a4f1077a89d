"""A request's normalized view, for grouping keyless requests by meaning (SPEC V1).

Grouping decides which earlier request a request is compared with; the comparison itself is
byte-exact (:mod:`llmcore.audit._compare`). So that a byte-level edit is judged rather than
hidden as a "new conversation", requests are matched on what they mean:

* an item's **normalized key** is its parsed value written back as compact JSON with every
  object's members in sorted order, breakpoints (``cache_control``, ``prompt_cache_breakpoint``,
  ``cachePoint`` blocks) removed and a message whose content is one text block written as the
  plain string it holds — so JSON escapes, whitespace between tokens, key order, breakpoints
  and the string / one-block forms do not matter;
* a request's **frame** is the set of its tools' normalized keys (order does not matter) and
  the list of its system items' normalized keys.

Leaves out: the grouping rule itself (:mod:`llmcore.audit._auditor`).
"""

from __future__ import annotations

from typing import Any

from llmcore import jsonbytes
from llmcore.audit._compare import Prepared
from llmcore.audit._scan import CACHE_KEYS, ItemInfo, is_cache_point
from llmcore.errors import EncodingError

__all__ = ["leading_run", "normalized", "normalized_frame"]


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _canonical(v) for k, v in sorted(value.items()) if k not in CACHE_KEYS}
        content = out.get("content")
        if isinstance(content, list) and len(content) == 1:
            block = content[0]
            if isinstance(block, dict) and block.get("type") == "text" and len(block) == 2:
                out["content"] = block.get("text")
        return out
    if isinstance(value, list):
        return [_canonical(v) for v in value if not is_cache_point(v)]
    return value


def normalized(info: ItemInfo) -> str:
    """Return the item's normalized key (cached on the item; see the module docstring)."""
    got = info.extra.get("meaning")
    if got is None:
        value = _canonical(info.parsed())
        try:
            got = jsonbytes.dumps_text(value)
        except EncodingError:  # a value the writer refuses: its exact text stands for it
            got = info.norm
        info.extra["meaning"] = got
    assert isinstance(got, str)
    return got


def normalized_frame(
    p: Prepared, sections: tuple[str, ...]
) -> tuple[frozenset[str], tuple[str, ...]]:
    """Return (the set of tools' keys, the system items' keys) of a request.

    Args:
        p: The request.
        sections: Its prefix sections (the last, the history, is not part of the frame; its
            leading system/developer messages are).
    """
    tools: set[str] = set()
    system: list[str] = []
    for section in sections[:-1]:
        infos = p.body.items.get(section, ())
        if section in ("tools", "toolConfig.tools"):
            tools.update(normalized(info) for info in infos)
        else:
            system.extend(normalized(info) for info in infos)
    system.extend(normalized(info) for info in p.hist[: p.lead])
    return frozenset(tools), tuple(system)


def leading_run(a: list[ItemInfo], b: list[ItemInfo]) -> int:
    """How many leading items of ``a`` and ``b`` have equal normalized keys."""
    run = 0
    for x, y in zip(a, b, strict=False):
        if not (x is y or x.norm == y.norm or normalized(x) == normalized(y)):
            break
        run += 1
    return run
