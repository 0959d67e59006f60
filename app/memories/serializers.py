"""Memory rows as the memory tool and the memory API return them."""

from __future__ import annotations

from typing import Any

from app.db.models import Memory
from app.memories.schemas import MemoryRead


def memory_data(memory: Memory) -> dict[str, Any]:
    return {
        "memory_id": str(memory.id),
        "key": memory.key,
        "content": memory.content,
        "tags": memory.tags or [],
        "updated_at": memory.updated_at.isoformat() if memory.updated_at else None,
    }


def memory_read(memory: Memory, agent_name: str | None) -> MemoryRead:
    return MemoryRead(
        id=memory.id,
        key=memory.key,
        content=memory.content,
        tags=list(memory.tags or []),
        agent_id=memory.agent_id,
        agent_name=agent_name,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
    )
