"""The port through which the memories domain announces committed changes.

A user's memories change from the memory API and from agents' `memory` tool; the user's
other devices hear of each change over `/api/ws` (app/realtime registers a sink), and the
vector keeper (app/memories/keeper.py) hears that a memory wants a new vector. Like the
threads' port (app/threads/changes.py), changes reach the sinks only after commit.
"""

from __future__ import annotations

import logging
from functools import partial
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.outbox import on_commit
from app.lib.listeners import Listeners
from app.memories.schemas import MemoryRead

logger = logging.getLogger(__name__)


class MemorySink:
    """Receives committed memory changes; override what you care about (no-ops here)."""

    def memory_saved(self, owner_id: UUID, memory: MemoryRead) -> None:
        """A memory was created or edited."""

    def memory_deleted(self, owner_id: UUID, memory_id: UUID) -> None:
        """One memory was deleted."""

    def memories_cleared(self, owner_id: UUID) -> None:
        """Every memory of the user was deleted."""


_sinks: Listeners[MemorySink] = Listeners("memory sink", logger=logger)


def register(sink: MemorySink) -> None:
    _sinks.add(sink)


def unregister(sink: MemorySink) -> None:
    _sinks.remove(sink)


def memory_saved(session: AsyncSession, owner_id: UUID, memory: MemoryRead) -> None:
    on_commit(session, partial(_sinks.emit, "memory_saved", owner_id, memory))


def memory_deleted(session: AsyncSession, owner_id: UUID, memory_id: UUID) -> None:
    on_commit(session, partial(_sinks.emit, "memory_deleted", owner_id, memory_id))


def memories_cleared(session: AsyncSession, owner_id: UUID) -> None:
    on_commit(session, partial(_sinks.emit, "memories_cleared", owner_id))
