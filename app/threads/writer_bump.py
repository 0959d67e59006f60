"""What every write of the message writer (app/threads/writer.py) shares: the tables, the
columns a write may give, and the thread bump, fenced by the writer's lease if it holds one.

The bump is an UPDATE … RETURNING of `threads.last_seq` (and `message_count` for new rows):
it row-locks the thread on PostgreSQL and takes SQLite's write lock, so the writers of one
thread take turns until commit.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Update, bindparam, update
from sqlalchemy.exc import NoResultFound
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import direct
from app.db.models import Thread, ThreadMessage
from app.lib.time import utcnow
from app.threads import fence
from app.threads.fence import Fenced, Lease

threads = Thread.__table__
messages = ThreadMessage.__table__
# The columns a write may give (an update sets some; a create every one, or its default).
MESSAGE_COLUMNS = frozenset(messages.c.keys()) - {"id", "thread_id", "seq", "updated_at"}


def the_thread(fenced: bool) -> Any:
    """The bumped thread's WHERE: the thread, and, `fenced`, the writer's lease holding."""
    thread = threads.c.id == bindparam("b_thread")
    return thread & fence.holds() if fenced else thread


def lease_params(params: dict[str, Any]) -> tuple[dict[str, Any], Lease | None]:
    """`params` with the current lease's (if any), and that lease."""
    lease = fence.held()
    return (params if lease is None else params | fence.params(lease)), lease


def nothing_written(lease: Lease | None, missing: str) -> Exception:
    """What a write that changed no row raises: `Fenced` under a lease (the thread gone
    takes its runs with it, so that lease is gone too), else NoResultFound."""
    return NoResultFound(missing) if lease is None else Fenced(lease, "a message write")


# Bind names must differ from column names (SQLAlchemy reserves those for SET values).
def _bump_statement(fenced: bool) -> Update:
    return (
        update(threads)
        .where(the_thread(fenced))
        .values(
            last_seq=threads.c.last_seq + bindparam("b_seqs"),
            message_count=threads.c.message_count + bindparam("b_messages"),
            last_activity_at=bindparam("b_now"),
            updated_at=bindparam("b_now"),
        )
        .returning(threads.c.last_seq, threads.c.message_count)
    )


_BUMPS = {fenced: _bump_statement(fenced) for fenced in (False, True)}
BUMP = _BUMPS[False]
_LOCK = (
    update(threads).where(threads.c.id == bindparam("b_thread")).values(last_seq=threads.c.last_seq)
)


async def lock_thread(session: AsyncSession, thread_id: UUID) -> None:
    """Serialise writers of one thread until this transaction ends (no seq is used)."""
    await session.execute(_LOCK, {"b_thread": thread_id})


async def bump(session: AsyncSession, thread_id: UUID, count: int, *, new: bool) -> tuple[int, int]:
    """The thread's seq moved on by `count` (and its message count, `new` rows): the last
    seq and message count, as bumped."""
    now = utcnow()
    params, lease = lease_params(
        {"b_thread": thread_id, "b_seqs": count, "b_messages": count if new else 0, "b_now": now}
    )
    row = (await direct.execute(session, _BUMPS[lease is not None], params)).first()
    if row is None:
        raise nothing_written(lease, f"no thread {thread_id}")
    last_seq, message_count = row
    return int(last_seq), int(message_count)
