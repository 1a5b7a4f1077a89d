"""The conversation archive, format 1 (SPEC A1–A12, F1, U3).

A host gives llmcore a folder; :class:`ArchiveStore` opens it into a :class:`Conversation` and
saves conversations into it atomically and durably::

    store = ArchiveStore(Path("Poster.silverpoint/agent"), keep_conversation=settings.keep)
    conversation = store.open(on_edited=document.mark_edited)
    ...
    store.save(conversation)

Modules: :mod:`.format` (the on-disk TypedDicts), :mod:`.state` (the values),
:mod:`.codec` (bytes ↔ values), :mod:`.images` (names and the budget), :mod:`.fs` (the
injectable file-system layer), :mod:`.store` (open and save), :mod:`.conversation` (the
host-facing object).
"""

from __future__ import annotations

from .codec import decode, encode
from .conversation import CardKind, Conversation
from .format import CONVERSATION_FILE, FORMAT_VERSION, IMAGES_DIR, ITEM_TYPES, ConversationFile
from .fs import MUTATING, FileSystem
from .images import IMAGE_BUDGET, ImagePlan, image_file_name, kept_images
from .state import ConversationState, Feedback, InvalidArchiveValueError, Item
from .store import ArchiveStore, Loaded, Notice, SaveResult

__all__ = [
    "CONVERSATION_FILE",
    "FORMAT_VERSION",
    "IMAGES_DIR",
    "IMAGE_BUDGET",
    "ITEM_TYPES",
    "MUTATING",
    "ArchiveStore",
    "CardKind",
    "Conversation",
    "ConversationFile",
    "ConversationState",
    "Feedback",
    "FileSystem",
    "ImagePlan",
    "InvalidArchiveValueError",
    "Item",
    "Loaded",
    "Notice",
    "SaveResult",
    "decode",
    "encode",
    "image_file_name",
    "kept_images",
]
