"""``llmcore verify ARCHIVE [--request FILE] [--provider P] [--allow-omitted]`` (SPEC R2).

P5 for an archive folder.

Builds the next request body from the archive (model, system, tools and params from
``--request``, else neutral defaults; provider from ``--provider``, else the archive's; model the
archive's unless the request file names one; the request file's messages appended after the
history), saves a copy of the conversation into a temporary folder, reopens the copy, rebuilds
the body and compares the two byte for byte. Images the archive holds as ``imageOmitted`` (the
image budget, A6, or a missing file, A7) are a difference too: the conversation that was saved
sent those images, and the reopened one sends placeholder text in their place, so its next body
differs from the first of them on; ``--allow-omitted`` accepts that. The verdict then names
what differs: the image itself against the placeholder text, each image file that is missing
or does not match its name (its path and JSON path), and how many the budget omitted. Exit 0:
identical.
Exit 1: they differ (the first differing byte and its context are shown). Exit 2: bad input —
a missing, unreadable or newer archive (never touched), an unreadable request file, an unknown
provider.

It leaves out the archive itself (:mod:`llmcore.archive`) and body building (the providers).
"""

from __future__ import annotations

import dataclasses
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from llmcore._words import plural
from llmcore.cli._common import EXIT_USAGE
from llmcore.errors import LLMCoreError, UnknownProviderError
from llmcore.providers import PROVIDER_NAMES, get_provider

if TYPE_CHECKING:
    from llmcore.archive import ArchiveStore, ConversationState
    from llmcore.archive.store import Encoder
    from llmcore.providers.base import Provider
    from llmcore.request import Request

__all__ = ["LostImage", "VerifyResult", "register", "verify", "verify_archive", "verify_command"]

_PLACEHOLDER = b"[Image omitted:"
EXIT_IDENTICAL = 0
EXIT_DIFFERS = 1
_CONTEXT = 32
"""Bytes of context shown on each side of the first difference."""


class VerifyInputError(LLMCoreError):
    """The archive or the options cannot be verified (exit 2)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LostImage:
    """An image ``conversation.json`` names whose file cannot give its bytes back (SPEC A7)."""

    file: str
    """The image file's path (``ARCHIVE/images/<sha256>.<ext>``)."""
    path: str
    """The block's JSON path in ``conversation.json`` (``$.history[0].content[1]``)."""
    mime_type: str
    """The image's declared type."""
    problem: str
    """What is wrong with the file: ``is missing``, ``is not a regular file`` or ``does not
    match its name``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifyResult:
    """The outcome of :func:`verify_archive`."""

    provider: str
    """The provider the bodies were built for."""
    model: str
    """The model of the request."""
    before: bytes
    """The body built from the archive as opened."""
    after: bytes
    """The body built after saving a copy and reopening it (empty if the copy is unreadable)."""
    note: str | None = None
    """Why there is no second body: the saved copy could not be read back."""
    omitted_images: int = 0
    """Images the archive holds as ``imageOmitted`` (A6, A7), which the body before the save
    carried; :attr:`identical` is false while any are there and not allowed."""
    allow_image_budget: bool = False
    """Omitted images are expected (``--allow-omitted``): only the bytes are compared."""
    with_request: bool = True
    """A request file gave the system prompt and tools; without one only the history (and
    neutral defaults) was checked, since the archive holds neither (A1)."""
    lost_files: tuple[LostImage, ...] = ()
    """The omitted images that ``conversation.json`` holds as ``image`` blocks whose file is
    missing or damaged (A7), as opposed to ``imageOmitted`` blocks (the budget, A6)."""

    @property
    def identical(self) -> bool:
        """Whether the two bodies are byte-identical (P5 holds) and no image was omitted."""
        omitted = self.omitted_images > 0 and not self.allow_image_budget
        return self.before == self.after and not omitted

    def first_difference(self) -> int:
        """Return the offset of the first differing byte (the shorter length if one is a prefix).

        With omitted images not allowed, the offset of the first placeholder text in the body
        (where the body before the save had the image) when it comes first.
        """
        differs = self.first_byte_difference()
        if self.omitted_images and not self.allow_image_budget:
            placeholder = self.before.find(_PLACEHOLDER)
            if placeholder >= 0 and (self.before == self.after or placeholder < differs):
                return placeholder
        return differs

    def first_byte_difference(self) -> int:
        """Return the offset of the first differing byte of the two bodies (images aside)."""
        for index, (a, b) in enumerate(zip(self.before, self.after, strict=False)):
            if a != b:
                return index
        return min(len(self.before), len(self.after))


def _open(archive: Path) -> ConversationState:
    """Load the archive, refusing what :meth:`ArchiveStore.load` would open as empty.

    Raises:
        VerifyInputError: The archive cannot be read (its notice's reason: a bad file, a
            symlinked folder, a path that cannot be used) or there is no ``conversation.json``.
    """
    from llmcore.archive import ArchiveStore

    store = ArchiveStore(archive)
    loaded = store.load()
    if loaded.notice is not None:
        raise VerifyInputError(f"cannot verify: {loaded.notice.reason}")
    try:
        present = store.fs.is_file(store.conversation_file)
    except OSError as exc:  # load() just read this path; a race is still one line
        message = f"cannot verify: {exc.strerror or exc}"
        raise VerifyInputError(message, location=str(archive)) from None
    if not present:
        if not archive.exists():
            raise VerifyInputError("no such folder", location=str(archive))
        raise VerifyInputError("no conversation.json in this folder", location=str(archive))
    return loaded.state


def _provider(name: str | None, state: ConversationState, archive: Path) -> Provider:
    """Return the provider to build for: ``--provider``, else the one the archive names."""
    from llmcore.archive import CONVERSATION_FILE

    if name:
        return get_provider(name)
    if not state.provider:
        raise VerifyInputError(
            "the archive names no provider; pass --provider",
            location=str(archive / CONVERSATION_FILE),
        )
    try:
        return get_provider(state.provider)
    except UnknownProviderError:
        raise VerifyInputError(
            f"the archive names provider {state.provider!r}, which llmcore does not know; "
            f"pass --provider (one of {', '.join(PROVIDER_NAMES)})",
            location=f"{archive / CONVERSATION_FILE}: $.provider",
        ) from None


def _request(state: ConversationState, request: Path | None) -> Request:
    from llmcore.archive import CONVERSATION_FILE
    from llmcore.request import Request

    if request is None:
        if not state.model:
            raise VerifyInputError(
                "the archive names no model; pass --request with a model",
                location=f"{CONVERSATION_FILE}: $.model",
            )
        return Request(model=state.model, messages=state.history)
    from llmcore.requestfile import load_request_file

    extra = load_request_file(request)
    model = extra.model or state.model
    return Request(
        model=model,
        system=extra.system,
        tools=extra.tools,
        messages=(*state.history, *extra.messages),
        params=extra.params,
    )


def verify_archive(
    archive: Path,
    request: Path | None = None,
    provider: str | None = None,
    *,
    encoder: Encoder | None = None,
    allow_image_budget: bool = False,
) -> VerifyResult:
    """Check P5 for the archive folder ``archive``; never writes into it.

    Args:
        archive: The folder holding ``conversation.json``.
        request: A request file (SPEC R1) for model, system, tools, params and new messages.
        provider: The provider name; ``None`` uses the archive's.
        encoder: Writes the saved copy (tests inject a non-canonical writer here); ``None``
            is the archive's own :func:`llmcore.archive.encode`.
        allow_image_budget: Accept images the archive holds as ``imageOmitted``.

    Raises:
        VerifyInputError: No archive, an unreadable or newer one, or no provider/model to use.
        LLMCoreError: The request file is bad, the provider unknown, or a body cannot be built.
    """
    from llmcore.archive import ArchiveStore, encode
    from llmcore.archive.images import omitted_images

    state = _open(archive)
    omitted = omitted_images(state.history)[0]
    lost = _lost_files(ArchiveStore(archive)) if omitted else ()
    builder = _provider(provider, state, archive)
    name = builder.name
    first = _request(state, request)
    before = builder.build_body(first)
    with tempfile.TemporaryDirectory(prefix="llmcore-verify-") as tmp:
        copy = ArchiveStore(Path(tmp) / "agent", encoder=encoder or encode)
        copy.write(state)
        loaded = ArchiveStore(copy.folder).load()
    if loaded.notice is not None:
        return VerifyResult(
            provider=name,
            model=first.model,
            before=before,
            after=b"",
            note=loaded.notice.reason,
            omitted_images=omitted,
            allow_image_budget=allow_image_budget,
            with_request=request is not None,
            lost_files=lost,
        )
    extra = first.messages[len(state.history) :]
    second = dataclasses.replace(first, messages=(*loaded.state.history, *extra))
    after = builder.build_body(second)
    return VerifyResult(
        provider=name,
        model=first.model,
        before=before,
        after=after,
        omitted_images=omitted,
        allow_image_budget=allow_image_budget,
        with_request=request is not None,
        lost_files=lost,
    )


def _lost_files(store: ArchiveStore) -> tuple[LostImage, ...]:
    """The ``image`` blocks of ``conversation.json`` whose file is missing or damaged (A7).

    Read-only; a file that cannot be read (an ``OSError``) is not listed: the archive keeps it
    (:attr:`~llmcore.messages.Text.unread_image_sha256`) rather than reading it as omitted.
    """
    from llmcore import jsonbytes
    from llmcore.archive.images import image_file_name, verified

    try:
        history = jsonbytes.loads(store.fs.read_bytes(store.conversation_file)).get("history", [])
    except (OSError, ValueError, AttributeError):  # load() just read it; a race is not listed
        return ()
    lost = []
    for index, message in enumerate(history):
        for place, block in enumerate(message.get("content", [])):
            if block.get("type") != "image":
                continue
            sha, mime = block["sha256"], block["mimeType"]
            path = store.images_dir / image_file_name(sha, mime)
            problem = _file_problem(store, path, sha, verified)
            if problem is not None:
                where = f"$.history[{index}].content[{place}]"
                lost.append(LostImage(file=str(path), path=where, mime_type=mime, problem=problem))
    return tuple(lost)


def _file_problem(
    store: ArchiveStore, path: Path, sha256: str, verified: Callable[[bytes, str], bool]
) -> str | None:
    try:
        info = store.fs.lstat(path)
        if info is None:
            return "is missing"
        if not stat.S_ISREG(info.st_mode):
            return "is not a regular file"
        return None if verified(store.fs.read_bytes(path), sha256) else "does not match its name"
    except OSError:
        return None


def _context(data: bytes, offset: int) -> str:
    start = max(0, offset - _CONTEXT)
    return repr(data[start : offset + _CONTEXT])


_NO_REQUEST = (
    "  note: the archive holds no system prompt or tools, so this checked the history alone; "
    "pass --request FILE with the model, system and tools your host sends"
)


def report(result: VerifyResult) -> int:
    """Print the outcome on stdout and return the exit code (0 identical, 1 differs)."""
    if result.identical:
        print(
            f"OK: {plural(len(result.before), 'body byte')} identical after save and reopen "
            f"({result.provider}, {result.model})"
        )
        if not result.with_request:
            print(_NO_REQUEST)
        return EXIT_IDENTICAL
    offset = result.first_difference()
    print(
        f"DIFFERS at byte {offset} ({result.provider}, {result.model}; "
        f"{plural(len(result.before), 'byte')} before, {len(result.after):,} after reopen)"
    )
    images = result.omitted_images > 0 and not result.allow_image_budget
    if images and offset != result.first_byte_difference():
        # The bodies agree here: what differs is the image the saved conversation sent.
        print("  before: the image itself, which the conversation sent before it was saved")
        print(f"  after:  {_context(result.after, offset)}")
        if result.before != result.after:
            also = result.first_byte_difference()
            print(f"  the bytes differ too, at byte {also}:")
            print(f"    before: {_context(result.before, also)}")
            print(f"    after:  {_context(result.after, also)}")
    else:
        print(f"  before: {_context(result.before, offset)}")
        print(f"  after:  {_context(result.after, offset)}")
    if images:
        _print_images(result)
    if result.note is not None:
        print(f"  the saved copy could not be read back: {result.note}")
    return EXIT_DIFFERS


def _print_images(result: VerifyResult) -> None:
    """Say which images the reopened conversation sends as placeholder text, and why."""
    for lost in result.lost_files:
        print(
            f"  the image file {lost.file} {lost.problem} ({lost.path}, {lost.mime_type}): "
            "the reopened conversation cannot send its bytes and sends placeholder text instead"
        )
    budget = result.omitted_images - len(result.lost_files)
    if budget > 0:
        print(
            f"  {plural(budget, 'image')} of the archive {'is' if budget == 1 else 'are'} saved "
            "as imageOmitted (the 20 MiB image budget): the conversation that was saved sent "
            "the image there, the reopened one sends placeholder text"
        )
    fix = "put the file back, or " if result.lost_files else ""
    print(f"  {fix}pass --allow-omitted when this is expected")


def verify_command(
    archive: Path, request: Path | None, provider: str | None, allow_image_budget: bool = False
) -> int:
    """Run ``llmcore verify`` and return its exit code; errors are one line on stderr (exit 2)."""
    try:
        result = verify_archive(archive, request, provider, allow_image_budget=allow_image_budget)
        return report(result)
    except LLMCoreError as exc:
        print(f"llmcore: {exc}", file=sys.stderr)
        return EXIT_USAGE


def verify(
    archive: Annotated[
        Path,
        typer.Argument(metavar="ARCHIVE", help="The archive folder holding conversation.json."),
    ],
    request: Annotated[
        Path | None,
        typer.Option("--request", "-r", metavar="FILE", help="A request file (model, system, …)."),
    ] = None,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider", "-p", metavar="PROVIDER", help=f"One of: {', '.join(PROVIDER_NAMES)}."
        ),
    ] = None,
    allow_image_budget: Annotated[
        bool,
        typer.Option(
            "--allow-omitted",
            metavar="",
            help="Accept omitted images (the image budget).",
        ),
    ] = False,
) -> None:
    """Check that the next body is byte-identical after saving and reopening ARCHIVE (P5)."""
    raise typer.Exit(verify_command(archive, request, provider, allow_image_budget))


def register(app: typer.Typer) -> None:
    """Add ``verify`` to ``app``."""
    app.command("verify")(verify)
