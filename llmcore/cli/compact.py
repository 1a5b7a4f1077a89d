"""``llmcore compact ARCHIVE [--dry-run] [--yes] [-p P] [--model M] [--base-url U] [--endpoint C]``.

C1–C3 for an archive folder (SPEC R2): open it, print the compaction plan and its cost preview
(C2), then — after confirmation, or with ``--yes`` — make the one summarization call
(:func:`llmcore.compaction.run_compaction`) and save the archive. ``--dry-run`` prints the
preview and exits 0 without any model call. The provider and model default to the archive's;
the API key comes from the provider's environment variable (``ANTHROPIC_API_KEY``,
``OPENAI_API_KEY``, ``OPENROUTER_API_KEY``); ``--base-url`` sends to any compatible endpoint
(e.g. ``llmcore emulate``'s); ``--endpoint vertex|bedrock|azure`` sends through that cloud
(:mod:`llmcore.cloud`, settings from the environment). Without a terminal to ask on,
``--yes`` is required.

Exit 0: compacted, or the dry run / a declined confirmation. Exit 2 (one line on stderr): no
archive or an unreadable one, compaction not offered (the reason), a failed call or an empty
summary (the archive then gains only a failure item, and is saved), a save that failed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from llmcore._words import plural
from llmcore.cli._common import (
    BaseUrlOption,
    EndpointOption,
    ModelOption,
    base_url_transport,
    cloud_transport,
    fail,
    one_line_errors,
)
from llmcore.errors import LLMCoreError
from llmcore.providers import PROVIDER_NAMES, get_provider

if TYPE_CHECKING:
    from llmcore.compaction import CompactionPlan
    from llmcore.transport import HTTPTransport

__all__ = ["compact", "compact_command", "register"]


def _preview(plan: CompactionPlan, provider: str) -> str:
    source = (
        "the last request's input"
        if plan.input_source == "last_request"
        else "history characters ÷ 4"
    )
    dollars = "price unknown" if plan.dollars is None else f"about ${plan.dollars:.4f}"
    return (
        f"{plural(plan.turns, 'turn')}: {plan.turns - 2} would be summarized "
        f"({plural(plan.summarized_messages, 'message')}) and the last 2 kept. One call to "
        f"{provider} {plan.model}: ~{plural(plan.input_tokens, 'input token')} ({source}), "
        f"{dollars}."
    )


def compact_command(
    archive: Path,
    *,
    dry_run: bool = False,
    yes: bool = False,
    provider: str | None = None,
    model: str | None = None,
    base_url: str | None = None,
    confirm: bool | None = None,
    endpoint: str | None = None,
) -> int:
    """Run ``llmcore compact``; return the exit code (errors: one line on stderr, exit 2).

    Args:
        archive: The archive folder.
        dry_run: Print the preview only.
        yes: Do not ask.
        provider: The provider of the call (default: the archive's).
        model: The model of the call (default: the archive's).
        base_url: Send to this base URL instead of the provider's.
        confirm: The answer to the question (tests); ``None`` asks on the terminal.
        endpoint: A cloud endpoint (``vertex``, ``bedrock``, ``azure``) to send through.

    Raises:
        typer.Exit: With code 2 for every error (one line printed).
    """
    from llmcore.archive import ArchiveStore
    from llmcore.compaction import plan_compaction, run_compaction
    from llmcore.runner import Runner

    store = ArchiveStore(archive)
    if not store.conversation_file.is_file():
        raise fail(f"{archive}: no conversation.json (nothing to compact)")
    conversation = store.open()
    if conversation.keeps_unreadable:
        raise fail(conversation.notices[0].reason)
    name = provider or conversation.state.provider
    if name not in PROVIDER_NAMES:
        raise fail(f"{archive}: $.provider: unknown provider {name!r}; give --provider")
    plan = plan_compaction(conversation, model=model)
    if plan.refusal is not None:
        raise fail(f"compaction is not offered: {plan.refusal.value}")
    print(_preview(plan, name))
    if dry_run:
        return 0
    if not yes and not _confirmed(confirm):
        print("Not compacted.")
        return 0
    with _transport(name, base_url, endpoint) as transport:
        runner = Runner(provider=get_provider(name), model=plan.model, transport=transport)
        outcome = run_compaction(conversation, runner, plan)
    store.save(conversation)
    if not outcome.ok:
        raise fail(f"not compacted: {outcome.failure}")
    print(f"Compacted: the history is now {plural(len(conversation.history), 'message')}; saved.")
    return 0


def _confirmed(answer: bool | None) -> bool:
    """The user's answer: ``answer`` if given, else asked on the terminal.

    Raises:
        typer.Exit: There is no terminal to ask on (code 2).
    """
    if answer is not None:
        return answer
    if not sys.stdin.isatty():
        raise fail("not a terminal: pass --yes to compact without asking")
    return typer.confirm("Compact now?")


def _transport(name: str, base_url: str | None, endpoint: str | None) -> HTTPTransport:
    """The transport of the call: the provider's own, ``--endpoint``'s or ``--base-url``'s."""
    from llmcore.transport import HTTPTransport

    if endpoint:
        return cloud_transport(name, endpoint, base_url)
    return base_url_transport(name, base_url) if base_url else HTTPTransport()


@one_line_errors
def compact(
    archive: Annotated[
        Path,
        typer.Argument(metavar="ARCHIVE", help="The archive folder holding conversation.json."),
    ],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", metavar="", help="Show the preview only.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", metavar="", help="Do not ask for confirmation.")
    ] = False,
    provider: Annotated[
        str | None,
        typer.Option(
            "--provider", "-p", metavar="PROVIDER", help=f"One of: {', '.join(PROVIDER_NAMES)}."
        ),
    ] = None,
    model: ModelOption = None,
    base_url: BaseUrlOption = None,
    endpoint: EndpointOption = None,
) -> None:
    """Summarize every turn but the last two of ARCHIVE with one model call (C1–C3)."""
    try:
        code = compact_command(
            archive,
            dry_run=dry_run,
            yes=yes,
            provider=provider,
            model=model,
            base_url=base_url,
            endpoint=endpoint,
        )
    except LLMCoreError as exc:
        raise fail(str(exc)) from None
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``compact`` to ``app``."""
    app.command("compact")(compact)
