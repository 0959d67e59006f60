"""`/api/memories`: what the assistant remembers about the user, to see, correct, delete."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from litestar import delete, get, patch
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import User
from app.lib.page_request import PAGE, PageRequest
from app.lib.problems import problems
from app.memories import recall, services
from app.memories.schemas import (
    MemoriesDeleted,
    MemoryPage,
    MemoryRead,
    MemorySearchResults,
    MemoryUpdate,
)

SEARCH_LIMIT = 20


class MemoryController(SignedInController):
    path = "/api/memories"
    tags = ["memories"]

    @get("/", operation_id="ListMemories", responses=problems(), dependencies=PAGE)
    async def list_memories(
        self, db_session: AsyncSession, current_user: User, *, page: PageRequest
    ) -> MemoryPage:
        """Everything remembered about you, newest first, with the agent that saved each."""
        return await services.list_memories(db_session, current_user.id, page.size, page.cursor)

    @get("/search", operation_id="SearchMemories", responses=problems())
    async def search_memories(
        self,
        db_session: AsyncSession,
        current_user: User,
        q: Annotated[str, Parameter(min_length=1, max_length=500, description="What to look for.")],
        limit: Annotated[int, Parameter(ge=1, le=SEARCH_LIMIT)] = 10,
    ) -> MemorySearchResults:
        """Memories about `q`, best first: by meaning and by words (the agents' recall)."""
        return await recall.search_for_user(db_session, current_user.id, q, limit)

    @get("/{memory_id:uuid}", operation_id="GetMemory", responses=problems(404))
    async def get_memory(
        self, memory_id: UUID, db_session: AsyncSession, current_user: User
    ) -> MemoryRead:
        """One memory (a `memory` frame too big to carry names it only by id)."""
        memory = await services.get_owned_memory(db_session, current_user.id, memory_id)
        return await services.memory_with_agent(db_session, memory)

    @patch("/{memory_id:uuid}", operation_id="UpdateMemory", responses=problems(404))
    async def update_memory(
        self, memory_id: UUID, data: MemoryUpdate, db_session: AsyncSession, current_user: User
    ) -> MemoryRead:
        """Correct what is remembered (content, tags)."""
        memory = await services.get_owned_memory(db_session, current_user.id, memory_id)
        return await services.update_memory(db_session, memory, data.sent_fields())

    @delete("/{memory_id:uuid}", operation_id="DeleteMemory", responses=problems(404))
    async def delete_memory(
        self, memory_id: UUID, db_session: AsyncSession, current_user: User
    ) -> None:
        """Forget one memory."""
        memory = await services.get_owned_memory(db_session, current_user.id, memory_id)
        await services.delete_memory(db_session, memory)

    @delete("/", operation_id="DeleteAllMemories", responses=problems(), status_code=200)
    async def delete_all_memories(
        self, db_session: AsyncSession, current_user: User
    ) -> MemoriesDeleted:
        """Forget everything remembered about you."""
        deleted = await services.delete_all_memories(db_session, current_user.id)
        return MemoriesDeleted(deleted=deleted)
