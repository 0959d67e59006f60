"""What the memory API takes and gives (the phone's "Manage memories" screen)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from app.lib.schema import Input, Schema

MemoryContent = Annotated[str, msgspec.Meta(min_length=1, max_length=10_000)]
MemoryTag = Annotated[str, msgspec.Meta(min_length=1, max_length=50)]
MemoryTags = Annotated[list[MemoryTag], msgspec.Meta(max_length=20)]
SearchQuery = Annotated[str, msgspec.Meta(min_length=1, max_length=500)]


class MemoryRead(Schema):
    """A memory, with who saved it and when: `agent_id`/`agent_name` are the agent whose
    `memory` tool saved it (null: saved otherwise, or that agent was deleted)."""

    id: UUID
    key: str | None
    content: str
    tags: list[str]
    agent_id: UUID | None
    agent_name: str | None
    created_at: datetime
    updated_at: datetime


class MemoryPage(Schema):
    items: list[MemoryRead]
    next_cursor: str | None


class MemoryMatch(Schema):
    memory: MemoryRead
    # How it was found: `meaning` (its vector is close), `words` (full text), or `both`.
    matched_by: Literal["meaning", "words", "both"]


class MemorySearchResults(Schema):
    query: str
    items: list[MemoryMatch]
    # `hybrid`: by meaning and words; `keyword`: words only (no embedding model serves).
    mode: Literal["hybrid", "keyword"]


class MemoryUpdate(Input):
    content: MemoryContent | msgspec.UnsetType = msgspec.UNSET
    tags: MemoryTags | msgspec.UnsetType = msgspec.UNSET


class MemoriesDeleted(Schema):
    deleted: int
