"""The theoretical maximum cacheable prefix of each request (SPEC V1, V5): two figures.

Every request's prefix items (:func:`llmcore.audit._shape.token_items`) go into a trie per
(provider, model); a node is one prefix seen before, with the time its cache entry expires.

* **ideal**: the longest prefix the request shares with any earlier live one, as if every item
  boundary were written to the cache. Whole items above the model's minimum for the whole-item
  rule (Anthropic, Converse, Gemini); for OpenAI the common leading bytes of the first
  differing item are added, and nothing below 1,024 tokens for OpenAI's models
  (PROVIDER-RULES §2.1). No 128-token floor: recorded usage reads 4,012 of a 4,020-token prompt
  (pydantic-ai ``test_openai_prompt_cache/test_openai_chat_prompt_cache_e2e``), off the
  1,024 + 128·k grid, so a floor would put the maximum below what the provider read.
* **maximum** (the report's headline): what the provider can have read. For the whole-item rule
  with breakpoints (Anthropic, Converse, OpenRouter with ``cache_control``; not Gemini's implicit
  cache), a prefix is written only where a request marks it — at each breakpoint, or the last
  item in automatic mode (a top-level ``cache_control``) — and only when it reaches the model's
  minimum; a request reads, from each of its breakpoints, the longest written prefix it shares
  within 20 items before the breakpoint; more than 4 breakpoints are refused by the API, so
  nothing is read (PROVIDER-RULES §1.1–§1.3: "A maximum of 4 blocks with cache_control may be
  provided"; the 20-block lookback; "Shorter prompts cannot be cached"). Elsewhere the
  maximum is the ideal.

Lifetimes apply only when both requests carry timestamps; a hit refreshes the entry
(PROVIDER-RULES §1.4, §2.1).

Leaves out: grouping and verdicts (:mod:`llmcore.audit._auditor`).
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from llmcore import tokens
from llmcore.audit import _shape
from llmcore.audit._compare import Prepared

__all__ = ["LOOKBACK", "MAX_BREAKPOINTS", "Entry", "Maxima", "Maximum", "entry_of"]

LOOKBACK: Final = 20
"""Item boundaries checked before each breakpoint for a written prefix (PROVIDER-RULES §1.2)."""

MAX_BREAKPOINTS: Final = 4
"""Breakpoints a request may carry; more are refused with HTTP 400 (PROVIDER-RULES §1.2)."""

_FANOUT_LIMIT: Final = 256
"""At most this many sibling items (newest first) are searched for OpenAI's partial match."""

_NUMBER: Final = operator.itemgetter(1)
_TOKENS: Final = operator.itemgetter(2)
"""A prefix item's tokens."""


_SCAN_BELOW: Final = 32
"""A node with fewer children has them scanned one by one for OpenAI's partial match; above,
its newest :data:`_FANOUT_LIMIT` are kept sorted by their bytes (:func:`_partial`)."""

_Window = list[tuple[bytes, int, object, "_Node"]]
"""A node's newest children sorted by their bytes: (bytes, insertion number, key, child)."""


class _Node:
    """A node of the per-(provider, model) prefix trie: one prefix of items seen before."""

    __slots__ = ("arrived", "children", "data", "expiry", "window", "window_of", "written")

    def __init__(self, data: bytes) -> None:
        self.children: dict[object, _Node] = {}
        self.data = data
        self.expiry = -math.inf
        self.written = -math.inf
        self.window: _Window | None = None
        """Its newest :data:`_FANOUT_LIMIT` children sorted by their bytes (:func:`_partial`),
        or ``None``."""
        self.arrived: deque[tuple[bytes, int]] | None = None
        """The (bytes, insertion number) of :attr:`window`'s children, oldest first (made with
        the window: most nodes never have one)."""
        self.window_of = 0
        """How many children it had when :attr:`window` was last brought up to date."""

    def add(self, key: object, child: _Node) -> None:
        """Add ``child`` under ``key`` (a key it does not have yet)."""
        number = len(self.children)
        self.children[key] = child
        window, arrived = self.window, self.arrived
        if window is not None and arrived is not None and self.window_of == number:
            bisect.insort(window, (child.data, number, key, child))
            arrived.append((child.data, number))
            if len(arrived) > _FANOUT_LIMIT:  # the oldest is past the limit now
                del window[bisect.bisect_left(window, arrived.popleft())]
            self.window_of = number + 1


@dataclass(frozen=True, slots=True)
class Maximum:
    """One request's two maxima (estimated tokens)."""

    maximum: int
    """What the request's own breakpoints let the provider read (the headline)."""
    ideal: int
    """What ideal breakpoints would reach (the longest live shared prefix)."""
    breakpoints: int
    """How many breakpoints the request carries (automatic mode counts one)."""


def uses_breakpoints(prep: Prepared) -> bool:
    """Whether only marked prefixes are written: the whole-item rule, except Gemini's."""
    return prep.anthropic and prep.provider != "gemini"


@dataclass(frozen=True, slots=True)
class Entry:
    """What the maximum needs of one request: plain values, picklable for worker processes.

    Built by :func:`entry_of` where the request is scanned (a worker of ``llmcore audit
    --jobs``), added to :class:`Maxima` in input order where the report is merged.
    """

    provider: str
    """The request's provider: the trie is per (provider, model)."""
    model: str
    """Its model."""
    timestamp: float | None
    """When it was sent (seconds since the epoch), or ``None``."""
    anthropic: bool
    """Whether the whole-item rule applies."""
    breakpoints: bool
    """Whether only marked prefixes are written (:func:`uses_breakpoints`)."""
    keys: tuple[object, ...]
    """The trie key of each prefix item (:func:`_trie_keys`)."""
    toks: tuple[_shape.TokenItem, ...]
    """The prefix items (key, compact normalized bytes, tokens, section)."""
    marks: tuple[int, ...]
    """Indices into ``toks`` of the items that carry a breakpoint."""
    minimum: int
    """The model's minimum cacheable prefix (tokens)."""
    ttl: float
    """How long its cache entries live without a hit (seconds)."""


def entry_of(prep: Prepared) -> Entry:
    """Return what :meth:`Maxima.add` needs of ``prep``."""
    return Entry(
        provider=prep.provider,
        model=prep.model,
        timestamp=prep.timestamp,
        anthropic=prep.anthropic,
        breakpoints=uses_breakpoints(prep),
        keys=tuple(_trie_keys(prep)),
        toks=tuple(prep.toks),
        marks=tuple(prep.marks),
        minimum=_shape.minimum_tokens(prep.model, prep.anthropic),
        ttl=_shape.cache_ttl(prep.body, prep.anthropic),
    )


class Maxima:
    """The tries of every (provider, model) seen so far."""

    __slots__ = ("_tries",)

    def __init__(self) -> None:
        self._tries: dict[tuple[str, str], _Node] = {}

    def add(self, entry: Entry) -> Maximum:
        """Return the request's maxima against the requests added before, then add it."""
        root = self._tries.setdefault((entry.provider, entry.model), _Node(b""))
        now = entry.timestamp
        keys = entry.keys
        path = self._path(root, keys, now)
        cum = list(itertools.accumulate(map(_TOKENS, entry.toks), initial=0))
        shared = cum[len(path) - 1]
        minimum = entry.minimum
        if entry.anthropic:
            ideal = shared if shared >= minimum else 0
        else:
            k = len(path) - 1
            partial = _partial(path[-1], entry.toks[k], now) if k < len(entry.toks) else 0
            ideal = shared + partial if shared + partial >= minimum else 0
        marks = sorted(set(entry.marks))
        written = marks
        if not entry.breakpoints:
            maximum = ideal
        else:
            maximum, hits = _read(path, cum, marks, now)
            written = [*marks, *hits]  # a hit refreshes its entry
        self._insert(root, entry, [m for m in written if cum[m + 1] >= minimum], path)
        return Maximum(maximum=maximum, ideal=ideal, breakpoints=len(marks))

    @staticmethod
    def _path(root: _Node, keys: Sequence[object], now: float | None) -> list[_Node]:
        """The trie nodes of the request's live shared prefix: ``path[d]`` holds ``d`` items."""
        path = [root]
        node = root
        for key in keys:
            child = node.children.get(key)
            if child is None or (now is not None and child.expiry < now):
                break
            path.append(child)
            node = child
        return path

    @staticmethod
    def _insert(root: _Node, entry: Entry, written: list[int], path: list[_Node]) -> None:
        """Add the request's items below ``root``; ``path`` is its live shared prefix there."""
        now = entry.timestamp
        expiry = math.inf if now is None else now + entry.ttl
        shared = len(path) - 1
        # an ancestor's expiry is never below a descendant's (each request raises every node
        # of its items): the walk's nodes to raise are the deepest, from the first below
        low, high = 1, shared + 1
        while low < high:
            mid = (low + high) // 2
            if path[mid].expiry < expiry:
                high = mid
            else:
                low = mid + 1
        for node in itertools.islice(path, low, None):
            node.expiry = expiry
        for k in written:
            if k < shared and path[k + 1].written < expiry:
                path[k + 1].written = expiry
        marked = set(written)
        node = path[shared]
        keys, toks = entry.keys, entry.toks
        for k in range(shared, len(keys)):
            key = keys[k]
            child = node.children.get(key)
            if child is None:
                child = _Node(toks[k][1])
                node.add(key, child)
            if child.expiry < expiry:
                child.expiry = expiry
            if k in marked and child.written < expiry:
                child.written = expiry
            node = child


def _read(
    path: list[_Node], cum: list[int], marks: list[int], now: float | None
) -> tuple[int, list[int]]:
    """The longest written prefix any breakpoint reaches back to, and the items hit.

    Nothing is read with more than :data:`MAX_BREAKPOINTS` breakpoints. A hit refreshes its
    entry (the caller writes it again).
    """
    if len(marks) > MAX_BREAKPOINTS:
        return 0, []
    best, hits = 0, []
    shared = len(path) - 1
    for mark in marks:
        depth = mark + 1
        for d in range(min(depth, shared), max(0, depth - 1 - LOOKBACK), -1):
            written = path[d].written
            if written > -math.inf if now is None else written >= now:
                best = max(best, cum[d])
                hits.append(d - 1)
                break
    return best, hits


def _trie_keys(prep: Prepared) -> list[object]:
    """The prefix items' keys; Anthropic message items also carry the messages-level key."""
    if not prep.anthropic:
        return [tok[0] for tok in prep.toks]
    level = _shape.messages_level(prep.body, prep.provider)
    last = _shape.SECTIONS[prep.provider][-1]
    return [(tok[0], level) if tok[3] == last else tok[0] for tok in prep.toks]


def _partial(node: _Node, tok: _shape.TokenItem, now: float | None) -> int:
    """OpenAI: tokens of the longest common leading bytes of the first differing item.

    The siblings searched are the live children of ``node`` of the item's section among its
    newest :data:`_FANOUT_LIMIT`. Above :data:`_SCAN_BELOW` children, they are looked up in the
    node's window, its newest children sorted by their bytes: the bytes sharing the longest
    start with the item's sit next to where the item's bytes would be sorted, and the shared
    length only falls moving away from there, so the search stops at the first sibling on
    each side that shares no more than the best found. The same number as
    :func:`_partial_scan`, which looks at every one of them (a property test compares them).
    """
    data = tok[1]
    children = node.children
    if len(children) < _SCAN_BELOW or not data:
        return _partial_scan(node, tok, now)
    window = _window(node)
    section = tok[3]
    best = 0
    at = bisect.bisect_left(window, (data,))
    for side in (range(at, len(window)), range(at - 1, -1, -1)):
        for n in side:
            other, _number, key, child = window[n]
            shared = tokens.common_prefix_len(other, data)
            if shared <= best:
                break
            if (
                (now is None or child.expiry >= now)
                and isinstance(key, tuple)
                and key[0] == section
            ):
                best = shared
    return best * tok[2] // len(data)


def _window(node: _Node) -> _Window:
    """``node``'s window (:func:`_partial`), brought up to date."""
    children = node.children
    if node.window is None or node.window_of != len(children):
        count = len(children)
        newest = itertools.islice(reversed(children.items()), _FANOUT_LIMIT)
        node.window = sorted(
            (child.data, count - 1 - n, key, child) for n, (key, child) in enumerate(newest)
        )
        node.arrived = deque(sorted(((e[0], e[1]) for e in node.window), key=_NUMBER))
        node.window_of = count
    return node.window


def _partial_scan(node: _Node, tok: _shape.TokenItem, now: float | None) -> int:
    """:func:`_partial` by looking at each of the newest children, newest first."""
    section, data, count = tok[3], tok[1], tok[2]
    best = 0
    head = data[:1]  # a sibling beats ``best`` only if it starts with ``data[:best + 1]``
    for key, child in itertools.islice(reversed(node.children.items()), _FANOUT_LIMIT):
        if now is not None and child.expiry < now:
            continue
        if isinstance(key, tuple) and key[0] == section and child.data.startswith(head):
            best = tokens.common_prefix_len(child.data, data)
            if best == len(data):
                break
            head = data[: best + 1]
    return best * count // len(data) if data else 0
