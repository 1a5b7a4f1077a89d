"""Shared builders and file-system doubles for the archive tests."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from llmcore.archive import ConversationState, Item
from llmcore.archive.fs import MUTATING, FileSystem
from llmcore.facts import SentFacts, TurnFacts
from llmcore.messages import Image, Message, Text, ToolCall, ToolResult
from llmcore.usage import Cost, Usage, UsageTotals

FIXTURE = Path(__file__).parent / "fixtures" / "conversation-format1.json"


def png(payload: bytes) -> bytes:
    """Bytes with a PNG signature, so the declared type stays image/png."""
    return b"\x89PNG\r\n\x1a\n" + payload


def turn(index: int, *, image: bytes | None = None, result: bytes | None = None) -> list[Message]:
    """One agent turn: user text (and image), a tool call, its result, a final answer."""
    user: list[Any] = [Text(text=f"# This turn\nMode: Just do it\n\nStep {index} — ünïcode")]
    if image is not None:
        user.append(Image(data=image, mime_type="image/png"))
    call_id = f"toolu_{index}"
    return [
        Message(role="user", content=tuple(user)),
        Message.assistant(
            f"Working on {index}.",
            ToolCall(id=call_id, name="batch_design", arguments=b'{"operations":"[]"}'),
        ),
        Message.tool(
            ToolResult(
                call_id=call_id,
                tool_name="batch_design",
                content=result if result is not None else b'{"created":[]}',
            )
        ),
        Message.assistant(f"Done with {index}."),
    ]


def conversation(turns: int, *, image_every: int = 1, image_size: int = 64) -> ConversationState:
    """A conversation of ``turns`` turns with items, usage, facts and images."""
    history: list[Message] = []
    items: list[Item] = []
    facts: list[TurnFacts] = []
    for index in range(turns):
        image = None
        if image_every and index % image_every == 0:
            image = png(index.to_bytes(4, "big") * (image_size // 4))
        facts.append(TurnFacts(message=len(history), sections=(("This turn", "0" * 64),)))
        history.extend(turn(index, image=image))
        items.append(Item.make(id=f"u{index}", type="user", text=f"Step {index}", hasImage=True))
        items.append(Item.make(id=f"t{index}", type="tool", name="batch_design", status="ok"))
        items.append(Item.make(id=f"a{index}", type="assistant", text=f"Done with {index}."))
    usage = UsageTotals().record(
        Usage(input=10 * turns, output=turns), Cost(kind="estimated", dollars=0.5)
    )
    return ConversationState(
        provider="anthropic",
        model="claude-opus-5-5",
        items=tuple(items),
        history=tuple(history),
        usage=usage,
        sent_facts=SentFacts(turns=tuple(facts)),
    )


def snapshot(folder: Path, *, lock: bool = False) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path → bytes); directories as ``path/``.

    llmcore's empty lock file (``.llmcore.lock``, created by the first open or save, not part of
    the archive) is left out unless ``lock`` is set.
    """
    out: dict[str, bytes] = {}
    if not folder.exists():
        return out
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            out[os.path.relpath(os.path.join(root, name), folder) + "/"] = b""
        for name in files:
            if name == ".llmcore.lock" and root == str(folder) and not lock:
                continue
            path = os.path.join(root, name)
            out[os.path.relpath(path, folder)] = Path(path).read_bytes()
    return out


def images_intact(folder: Path, data: bytes) -> bool:
    """Whether every image ``conversation.json`` names exists with the right hash."""
    import json

    doc = json.loads(data)
    for message in doc["history"]:
        for block in message["content"]:
            if block["type"] == "image":
                ext = {"image/png": "png"}.get(block["mimeType"], "bin")
                path = folder / "images" / f"{block['sha256']}.{ext}"
                if not path.is_file():
                    return False
                if hashlib.sha256(path.read_bytes()).hexdigest() != block["sha256"]:
                    return False
    return True


def _half(data: bytes | list[bytes | memoryview]) -> bytes:
    """The first half of what a ``write`` was given (bytes, or a list of pieces)."""
    whole = b"".join(data) if isinstance(data, list) else bytes(data)
    return whole[: len(whole) // 2]


class CountingFS(FileSystem):
    """Counts mutating calls by name; fails the call numbered ``fail_at`` (1-based) if set."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls: list[str] = []
        self.fail_at = fail_at
        self.failed: str | None = None

    def _tick(self, name: str) -> None:
        self.calls.append(name)
        if self.fail_at is not None and len(self.calls) == self.fail_at:
            self.failed = name
            raise OSError(28, "No space left on device (injected)")

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        if name not in MUTATING:
            return attr

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            if name == "close":  # the descriptor is released even when closing "fails"
                attr(*args, **kwargs)
                self._tick(name)
                return None
            if name == "write":  # a full disk stops a write half way (bytes or pieces)
                fd, data = args
                try:
                    self._tick(name)
                except OSError:
                    attr(fd, _half(data))
                    raise
            else:
                self._tick(name)
            return attr(*args, **kwargs)

        return wrapped
