"""Memory rows as the memory tool returns them."""

from __future__ import annotations

from typing import Any

from app.db.models import Memory


def memory_data(memory: Memory) -> dict[str, Any]:
    return {
        "memory_id": str(memory.id),
        "key": memory.key,
        "content": memory.content,
        "tags": memory.tags or [],
        "updated_at": memory.updated_at.isoformat() if memory.updated_at else None,
    }
