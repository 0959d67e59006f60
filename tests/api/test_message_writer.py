"""The single writer's creates (app/threads/writer.py): on PostgreSQL one statement with
the thread's bump, on SQLite the bump and one INSERT per row, Core statements either way;
the rows, the Structs handed back and the thread counters are what a flush would have
left."""

from __future__ import annotations

from uuid import UUID

from httpx import AsyncClient
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Thread, ThreadMessage
from app.threads import activity as cell
from app.threads.records import StoredMessage
from app.threads.writer import create_message, create_messages, update_message
from app.tools.base import ToolResult
from tests.api.support import create_thread
from tests.conftest import ApiUser
from tests.support.statements import statements_everywhere


async def test_created_messages_are_complete_stored_and_counted(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    thread_id = UUID((await create_thread(client, alice))["id"])
    started = cell.started("call_1", "tasks", {"action": "list"})
    first = await create_message(db, thread_id, role="user", content="hi")
    calls = [{"id": "call_1", "type": "function", "function": {"name": "tasks", "arguments": "{}"}}]
    rows = [
        {"role": "assistant", "content": None, "is_user_facing": False, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "call_1", "tool_activity": started},
    ]
    created = await create_messages(db, thread_id, rows)
    messages = [first, *created]
    assert [m.seq for m in messages] == [1, 2, 3]
    assert [m.position for m in messages] == [1, 2, 3]
    bumped = await db.execute(
        select(Thread.last_seq, Thread.message_count).where(Thread.id == thread_id)
    )
    assert bumped.one() == (3, 3)
    for message in messages:  # the rows as stored, every column given
        assert isinstance(message, StoredMessage)
        assert message.id.version == 7 and None not in (message.created_at, message.updated_at)
    assert first.is_user_facing and not created[0].is_user_facing  # the column default
    # usable in the same transaction like any flushed row, and kept current
    finished = cell.finished(started, ToolResult.success({"count": 0}))
    await update_message(db, created[1], tool_activity=finished)
    assert created[1].seq == 4 and created[1].tool_activity == finished
    await db.commit()

    db.expire_all()
    stored = list(
        await db.scalars(
            select(ThreadMessage).where(ThreadMessage.thread_id == thread_id).order_by("seq")
        )
    )
    assert [(m.role, m.position) for m in stored] == [("user", 1), ("assistant", 2), ("tool", 3)]
    assert stored[1].tool_calls == calls and stored[2].tool_call_id == "call_1"
    assert stored[2].tool_activity == finished and stored[2].seq == 4
    assert [m.id for m in stored] == [m.id for m in messages]
    stored_thread = await db.get(Thread, thread_id)
    assert stored_thread is not None
    assert (stored_thread.last_seq, stored_thread.message_count) == (4, 3)


async def test_a_create_records_versions_only_below_a_message_with_children(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    """A new message is a new version only when its parent already had a child: then
    every version's `sibling_ids` is written; below the leaf of a line, the create is the
    one statement on PostgreSQL (on SQLite: the row, then the bump, which moves the leaf)."""
    thread_id = UUID((await create_thread(client, alice))["id"])
    question = await create_message(db, thread_id, role="user", content="a number?")
    first = await create_message(db, thread_id, role="assistant", content="one")
    with statements_everywhere() as seen:
        more = await create_message(db, thread_id, role="user", content="and one more?")
    postgres = db.get_bind().dialect.name == "postgresql"
    assert len(seen) == (1 if postgres else 2), seen
    assert first.sibling_ids is None and more.sibling_ids is None
    second = await create_message(
        db, thread_id, role="assistant", content="two", parent_id=question.id
    )
    assert second.sibling_ids == [str(first.id), str(second.id)]
    await db.commit()
    stored = await db.get(ThreadMessage, first.id)
    assert stored is not None and stored.sibling_ids == [str(first.id), str(second.id)]
