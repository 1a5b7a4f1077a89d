"""Response chains between conversation keys: which keys ``--jobs`` and the engine must join.

By default the auditor groups a keyed JSONL line within its ``conversation`` key, except that
a Responses request whose ``previous_response_id`` names a response recorded earlier in the
same file (an envelope's ``response_id``) joins that response's conversation, whatever its key
(:meth:`llmcore.audit.Auditor._chained`). A partition by key must then keep the two keys
together, and a line without a key (the shared partition) that names a keyed line's response
pulls that key into the shared partition.

:class:`Links` is a union-find over the keys (``None`` standing for the lines without one):
:func:`line_links` reads a line's key, its ``response_id`` and its body's
``previous_response_id``; per file, each named response joins the key of the line naming it
to the keys of the lines that recorded it. Order and provider are not checked (a chain to a
later line, or of another wire shape, joins keys the auditor keeps apart): joining more keys
than needed only makes a partition larger, never changes the report. Lines that chain no key
to another keep the partition by key, so a Responses log keeps its speed-up.

Leaves out: the partitions themselves (:mod:`llmcore.audit.jobs`, :mod:`llmcore.audit.engine`).
"""

from __future__ import annotations

from typing import Any, Final

from llmcore.audit._envelope import fast_loads
from llmcore.audit.inputs import envelope_key

__all__ = ["ANY", "Link", "Links", "line_links"]

_CHAIN: Final = b"previous_response_id"
_NAMES: Final = b"response_id"
"""In a line's bytes whenever it records a response or names one (both names hold it)."""

ANY: Final = "\x00any"
"""A ``previous_response_id`` that cannot be read for sure (named twice): any response of its
file."""

Link = tuple[str | None, str | None, str | None]
"""A line's (key, ``response_id``, ``previous_response_id``)."""


def line_links(line: bytes) -> Link:
    """A JSONL line's key (as :func:`~llmcore.audit.inputs.envelope_key`), response and link.

    Never raises: a line the reader refuses names nothing (its error comes from the worker).
    """
    if _NAMES not in line:
        return envelope_key(line), None, None
    try:
        value = fast_loads(line)
    except (ValueError, RecursionError):
        return None, None, None
    if not isinstance(value, dict):
        return None, None, None
    if "body" not in value:  # a plain request body
        return None, None, _previous(value, line.count(_CHAIN))
    key, answered, body = value.get("conversation"), value.get("response_id"), value["body"]
    if isinstance(body, str) and _CHAIN.decode() in body:
        try:
            count = body.count(_CHAIN.decode())
            body = fast_loads(body.encode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError):
            body = None
    else:
        count = 1
    return (
        key if isinstance(key, str) else None,
        answered if isinstance(answered, str) else None,
        _previous(body, count),
    )


def _previous(body: Any, count: int) -> str | None:
    if not isinstance(body, dict):
        return None
    found = body.get("previous_response_id")
    if not isinstance(found, str):
        return None
    return ANY if count > 1 else found  # a name given twice: the reader may take either


class Links:
    """The keys response chains join (see the module): a union-find, ``None`` for no key."""

    __slots__ = ("_named", "_parent", "_recorded")

    def __init__(self) -> None:
        self._parent: dict[str | None, str | None] = {}
        self._recorded: dict[str, list[str | None]] = {}
        self._named: list[tuple[str | None, str]] = []

    def add(self, link: Link) -> None:
        """Note one line of the current file (``link`` from :func:`line_links`)."""
        key, answered, previous = link
        if answered is not None:
            self._recorded.setdefault(answered, []).append(key)
        if previous is not None:
            self._named.append((key, previous))

    def end_file(self) -> None:
        """Join the keys the current file's chains link; the next lines are another file's."""
        for key, previous in self._named:
            if previous == ANY:
                owners = [k for keys in self._recorded.values() for k in keys]
            else:
                owners = self._recorded.get(previous, [])
            for owner in owners:
                self._union(key, owner)
        self._recorded.clear()
        self._named.clear()

    def root(self, key: str | None) -> str | None:
        """The representative of ``key``'s group (``key`` itself when nothing joins it)."""
        parent = self._parent
        top = key
        while (up := parent.get(top, top)) != top:
            top = up
        while key != top:  # path compression
            up = parent.get(key, key)
            parent[key] = top
            key = up
        return top

    def shared(self, key: str | None) -> bool:
        """Whether ``key`` is joined to the lines without a key."""
        return self.root(key) == self.root(None)

    def joined(self) -> bool:
        """Whether any chain joins two keys (or a key to the lines without one)."""
        return bool(self._parent)

    def _union(self, a: str | None, b: str | None) -> None:
        ra, rb = self.root(a), self.root(b)
        if ra == rb:
            return
        lead = None if ra is None or rb is None else min(ra, rb)  # None, else the least key
        self._parent[rb if lead == ra else ra] = lead
