"""memory: save, recall, search and forget what the user wants remembered."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from app.db.models import Memory
from app.lib.schema import Schema
from app.memories import recall, services
from app.memories.serializers import memory_data
from app.tools.base import Tool, ToolContext, ToolData, ToolResult

Content = Annotated[
    str, msgspec.Meta(min_length=1, max_length=10_000, description="What to remember.")
]
Key = Annotated[str, msgspec.Meta(min_length=1, max_length=200,
                                  description="Short unique label; saving the same key replaces.")]  # fmt: skip
Tags = Annotated[list[Annotated[str, msgspec.Meta(min_length=1, max_length=50)]],
                 msgspec.Meta(max_length=20, description="Labels to group memories.")]  # fmt: skip
Limit = Annotated[int, msgspec.Meta(ge=1, le=50, description="At most this many (default 10).")]
MemoryId = Annotated[UUID, msgspec.Meta(description="memory_id from save, recall or search.")]


class SaveParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    content: Content
    key: Key | None = None
    tags: Tags | None = None


class RecallParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    key: Key | None = None
    tag: (
        Annotated[str, msgspec.Meta(max_length=50, description="Only memories with this tag.")]
        | None
    ) = None
    limit: Limit | None = None


class SearchParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    query: Annotated[
        str,
        msgspec.Meta(
            min_length=1, max_length=500, description="What to look for (meaning and words)."
        ),
    ]
    limit: Limit | None = None


class ForgetParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    memory_id: MemoryId | None = None
    key: Key | None = None

    def __post_init__(self) -> None:
        if (self.memory_id is None) == (self.key is None):
            raise ValueError("forget needs exactly one of memory_id or key")


class MemoryItem(Schema):
    memory_id: UUID
    key: str | None
    content: str
    tags: list[str]
    updated_at: datetime | None


class MemoryToolResult(ToolData, tag="memory", kw_only=True, omit_defaults=True):
    """A memory saved (`created`: new rather than replaced) or forgotten."""

    action: Literal["save", "forget"]
    created: bool | None = None  # save only
    memory_id: UUID
    key: str | None
    content: str
    tags: list[str]
    updated_at: datetime | None


class MemoryListResult(ToolData, tag="memories", kw_only=True, omit_defaults=True):
    """Memories recalled (by key or most recent) or found by a search (`query`)."""

    action: Literal["recall", "search"]
    query: str | None = None  # search only
    memories: list[MemoryItem]
    count: int


def _item(memory: Memory) -> MemoryItem:
    return msgspec.convert(memory_data(memory), MemoryItem)


def memory_result(
    action: Literal["save", "forget"], memory: Memory, **extra: Any
) -> MemoryToolResult:
    return msgspec.convert({"action": action, **memory_data(memory), **extra}, MemoryToolResult)


def remembered(count: int) -> str:
    if count == 0:
        return "Nothing remembered about that"
    return "Remembered 1 thing" if count == 1 else f"Remembered {count} things"


class MemoryTool(Tool):
    name = "memory"
    description = (
        "Long-term memory about the user. Actions: save (content, optional key, tags), "
        "recall (by key, or the most recent), search (query), forget (memory_id or key)."
    )
    actions = {
        "save": SaveParams,
        "recall": RecallParams,
        "search": SearchParams,
        "forget": ForgetParams,
    }
    results = {
        "save": MemoryToolResult,
        "recall": MemoryListResult,
        "search": MemoryListResult,
        "forget": MemoryToolResult,
    }
    # Recall is bookkeeping for the model: stored and synced, but the phone shows no cell.
    non_user_facing_actions = frozenset({"recall"})
    read_only_actions = frozenset({"recall", "search"})
    # Forgetting cannot be undone: the user confirms it in the app first.
    requires_confirmation = frozenset({"forget"})
    timeout_seconds = 15
    examples = {
        "save": {"key": "coffee", "content": "Takes coffee black."},
        "recall": {"key": "coffee"},
        "search": {"query": "coffee"},
        "forget": {"key": "coffee"},
    }

    async def save_action(self, ctx: ToolContext, params: SaveParams) -> ToolResult:
        async with ctx.transaction() as session:
            memory, created = await services.save_memory(
                session, ctx.user.id, content=params.content.strip(), key=params.key,
                tags=params.tags, agent_id=ctx.agent.id,
            )  # fmt: skip
        data = memory_result("save", memory, created=created)
        return ToolResult.success(
            data, display_message="Saved to memory" if created else "Memory updated"
        )

    async def recall_action(self, ctx: ToolContext, params: RecallParams) -> ToolResult:
        async with ctx.transaction() as session:
            if params.key is not None:
                memory = await services.find_by_key(session, ctx.user.id, params.key)
                rows = [memory] if memory else []
            else:
                rows = await services.recent_memories(
                    session, ctx.user.id, params.limit or 10, params.tag
                )
        if params.key is not None and not rows:
            return ToolResult.failure(
                f"No memory with key {params.key!r}.",
                "user_error",
                suggestion="Use search with a few words, or recall without a key for recent ones.",
                key=params.key,
            )
        memories = [_item(m) for m in rows]
        data = MemoryListResult(action="recall", memories=memories, count=len(memories))
        return ToolResult.success(data)

    async def search_action(self, ctx: ToolContext, params: SearchParams) -> ToolResult:
        async with ctx.transaction() as session:
            found, _ = await recall.recall(session, ctx.user.id, params.query, params.limit or 10)
        memories = [_item(r.memory) for r in found]
        data = MemoryListResult(
            action="search", query=params.query, memories=memories, count=len(memories)
        )
        return ToolResult.success(data, display_message=remembered(len(memories)))

    async def forget_action(self, ctx: ToolContext, params: ForgetParams) -> ToolResult:
        async with ctx.transaction() as session:
            if params.memory_id is not None:
                memory = await services.find_by_id(session, ctx.user.id, params.memory_id)
            else:
                memory = await services.find_by_key(session, ctx.user.id, params.key or "")
            if memory is None:
                return ToolResult.failure(
                    "No such memory.",
                    "user_error",
                    suggestion="Use search or recall to find the memory_id.",
                )
            data = memory_result("forget", memory)
            await services.delete_memory(session, memory)
        return ToolResult.success(data, display_message="Forgot a memory")
