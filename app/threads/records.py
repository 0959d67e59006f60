"""Stored rows of the hot path as plain Structs ("Core in, Structs out").

The writer (app/threads/writer.py) and the run queue (app/orchestrator/scheduling/) run
prebuilt Core statements; what they stored comes back as these Structs, built from the
values written or the rows returned, never as ORM instances made by hand. They carry
every column under the ORM attribute's name, so the serializers (which read attributes)
and the change sinks take them as they take ORM rows. A field list that drifts from its
table fails `tests/test_records.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

import msgspec

from app.db.models.run import usage_of


class StoredMessage(msgspec.Struct, kw_only=True):
    """A `thread_messages` row as stored (the writer keeps it current after updates)."""

    id: UUID
    thread_id: UUID
    run_id: UUID | None
    position: int
    parent_id: UUID | None
    sibling_ids: list[str] | None
    seq: int
    role: str
    content: str | None
    is_user_facing: bool
    client_message_id: str | None
    tool_activity: dict[str, Any] | None
    tool_calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    plan: dict[str, Any] | None
    attachments: list[dict[str, Any]] | None = None
    created_at: datetime
    updated_at: datetime


class StoredRun(msgspec.Struct, kw_only=True):
    """A `runs` row as a claim or a run's end returned it."""

    id: UUID
    thread_id: UUID
    agent_id: UUID
    trigger_message_id: UUID | None
    status: str
    error: str | None
    options: dict[str, Any] | None
    started_at: datetime | None
    finished_at: datetime | None
    cancel_requested: bool
    lease_owner: str | None
    lease_expires_at: datetime | None
    lease_epoch: int
    push_due: bool | None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_nanousd: int | None = None
    created_at: datetime
    updated_at: datetime

    @property
    def usage(self) -> dict[str, Any]:
        return usage_of(self)


_RUN_FIELDS = frozenset(StoredRun.__struct_fields__)
_MESSAGE_FIELDS = frozenset(StoredMessage.__struct_fields__)


def stored_runs(rows: Iterable[Mapping[str, Any]]) -> list[StoredRun]:
    """Runs from rows of every `runs` column (extra keys, e.g. a sentinel, left out)."""
    return [StoredRun(**{k: v for k, v in row.items() if k in _RUN_FIELDS}) for row in rows]


def stored_message(values: Mapping[str, Any]) -> StoredMessage:
    """A message from the values of every `thread_messages` column."""
    return StoredMessage(**{k: v for k, v in values.items() if k in _MESSAGE_FIELDS})


__all__ = ("StoredMessage", "StoredRun", "stored_message", "stored_runs")
