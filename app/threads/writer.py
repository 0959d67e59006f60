"""The single writer of message changes.

Every create or update of a ThreadMessage goes through here. In the same transaction it
bumps `threads.last_seq` (an UPDATE … RETURNING that row-locks the thread on PostgreSQL and
takes SQLite's write lock: writer_bump.py), stamps the row's `seq`, and announces the
change, delivered after commit (app/threads/changes.py). Per thread, `seq` is therefore
gap-free and in commit order.

The writer works on one row type: prebuilt Core statements through `session.execute`, the
stored row handed back as a `StoredMessage` Struct (app/threads/records.py), never an ORM
instance. Creates (writer_creates.py) give every column, so the Struct is the row as stored.

Updates are the hot path (a tool's progress, streamed text): a Core UPDATE, the Struct
then changed to match. On PostgreSQL the bump and the row update are one statement (a
data-modifying CTE): one round trip instead of two, and the thread row is still locked
until commit. A message loaded through the ORM (approvals, the reaper) is converted at the
door: written as its StoredMessage, then given its new values as loaded ones, so its
session's unit of work has nothing left to write.

A write made under a run's lease (app/threads/fence.py: a runner's, for its run) is
fenced in the thread bump itself: the bump's WHERE also asks that the lease still holds,
so a refused write bumps nothing, writes nothing and raises `Fenced` (statements: one more
variant each, the same count).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import Update, bindparam, delete, select, update
from sqlalchemy.exc import NoResultFound
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from app.db import direct
from app.db.direct import flush_pending
from app.db.models import ThreadMessage
from app.lib.time import utcnow
from app.threads import fence
from app.threads.changes import branch_moved, message_changed
from app.threads.records import StoredMessage, stored_message
from app.threads.writer_bump import (
    BUMP,
    MESSAGE_COLUMNS,
    bump,
    lease_params,
    lock_thread,
    messages,
    nothing_written,
    the_thread,
    threads,
)
from app.threads.writer_creates import creates_alone, insert_message_with, insert_messages

_BUMP = BUMP  # the bump by itself (tests/test_direct.py runs it)


async def create_messages(
    session: AsyncSession, thread_id: UUID, rows: list[dict[str, Any]]
) -> list[StoredMessage]:
    """New messages, one after the other below the thread's current leaf (or the first
    below its `parent_id`), as writer_creates.insert_messages writes them; a new version
    (its parent had children) has every version's `sibling_ids` written with it."""
    created, forked = await insert_messages(session, thread_id, rows)
    if forked:
        await record_versions(session, created[0])
    return created


async def create_message(
    session: AsyncSession, thread_id: UUID, *, role: str, **fields: Any
) -> StoredMessage:
    [message] = await create_messages(session, thread_id, [{"role": role, **fields}])
    return message


async def create_message_with(
    session: AsyncSession,
    thread_id: UUID,
    fields: dict[str, Any],
    also: Any,
    params: dict[str, Any],
) -> tuple[StoredMessage | None, dict[str, Any] | None]:
    """writer_creates.insert_message_with, a new version's siblings recorded after it."""
    message, also_row, forked = await insert_message_with(session, thread_id, fields, also, params)
    if forked and message is not None and also_row is not None:
        with fence.released():  # `also` (a run's end) checked the lease, and ended it
            await record_versions(session, message)
    return message, also_row


_CHILDREN = (
    select(messages)
    .where(messages.c.thread_id == bindparam("thread_id"))
    .order_by(messages.c.position)
)
_CHILDREN_OF = _CHILDREN.where(messages.c.parent_id == bindparam("parent_id"))
_ROOTS = _CHILDREN.where(messages.c.parent_id.is_(None))


async def versions_of(
    session: AsyncSession, thread_id: UUID, parent_id: UUID | None
) -> list[StoredMessage]:
    """The children of `parent_id` (the thread's first messages: None), oldest first."""
    params = {"thread_id": thread_id, "parent_id": parent_id}
    rows = await direct.execute(session, _ROOTS if parent_id is None else _CHILDREN_OF, params)
    return [stored_message(row) for row in rows.mappings()]


async def record_versions(
    session: AsyncSession, message: StoredMessage, *, keep: StoredMessage | None = None
) -> list[StoredMessage]:
    """Write on each child of `message`'s parent the ids of them all (None when it is the
    only one): each gets a new seq, so every device hears of the new count. `message` is
    brought up to date when it is one of them. The versions, oldest first."""
    versions = await versions_of(session, message.thread_id, message.parent_id)
    ids = [str(version.id) for version in versions] if len(versions) > 1 else None
    for version in versions:
        if version.sibling_ids != ids:
            target = message if version.id == message.id else version
            await update_message(session, target, sibling_ids=ids)
    return versions


async def update_message(
    session: AsyncSession, message: StoredMessage | ThreadMessage, **changes: Any
) -> StoredMessage:
    """A new version of `message` (a new seq); `message` itself brought up to date. A
    ThreadMessage loaded through the ORM is written as its StoredMessage (returned)."""
    if isinstance(message, ThreadMessage):
        return await _update_loaded(session, message, changes)
    # Pending changes of this session are written first, in this transaction, as the ORM
    # would autoflush them before a query.
    await flush_pending(session)
    if not changes.keys() <= MESSAGE_COLUMNS:
        raise TypeError(f"not columns of a message: {sorted(changes.keys() - MESSAGE_COLUMNS)}")
    now = utcnow()
    params = {f"v_{name}": value for name, value in changes.items()}
    params |= {"b_thread": message.thread_id, "b_message": message.id, "b_now": now}
    if session.get_bind().dialect.name == "postgresql":
        params, lease = lease_params(params)
        statement = _bump_and_update(tuple(changes), lease is not None)
        row = (await direct.execute(session, statement, params)).first()
        if row is None:
            missing = f"no thread message {message.id} in thread {message.thread_id}"
            raise nothing_written(lease, missing)
        seq = int(row[0])
    else:
        seq, _ = await bump(session, message.thread_id, 1, new=False)
        params["v_seq"] = seq
        if (await direct.execute(session, _update_row(tuple(changes)), params)).rowcount != 1:
            raise NoResultFound(f"no thread message {message.id}")
    for name, value in changes.items():
        setattr(message, name, value)
    message.seq = seq
    message.updated_at = now
    message_changed(session, message)
    return message


async def _update_loaded(
    session: AsyncSession, row: ThreadMessage, changes: dict[str, Any]
) -> StoredMessage:
    """The door of an ORM row: its values as a StoredMessage (the session's pending
    changes, this row's included, are flushed first), written like any, and the new values
    set on the row as loaded ones (no history: the unit of work writes nothing more)."""
    await flush_pending(session)
    message = await update_message(session, _as_stored(row), **changes)
    for name in (*changes, "seq", "updated_at"):
        set_committed_value(row, name, getattr(message, name))
    return message


def _as_stored(row: ThreadMessage) -> StoredMessage:
    return StoredMessage(**{name: getattr(row, name) for name in StoredMessage.__struct_fields__})


# Statements by the set of changed columns: built once, then SQLAlchemy's compiled cache
# hits on the same object every time.
_row_updates: dict[tuple[str, ...], Update] = {}
_combined_updates: dict[tuple[tuple[str, ...], bool], Update] = {}


def _set_values(names: tuple[str, ...]) -> dict[str, Any]:
    values: dict[str, Any] = {name: bindparam(f"v_{name}") for name in names}
    values["updated_at"] = bindparam("b_now")
    return values


def _update_row(names: tuple[str, ...]) -> Update:
    statement = _row_updates.get(names)
    if statement is None:
        values = _set_values(names) | {"seq": bindparam("v_seq")}
        statement = update(messages).where(messages.c.id == bindparam("b_message")).values(values)
        _row_updates[names] = statement
    return statement


def _bump_and_update(names: tuple[str, ...], fenced: bool) -> Update:
    """UPDATE thread_messages SET seq = bump.last_seq, … FROM (UPDATE threads … RETURNING)."""
    statement = _combined_updates.get((names, fenced))
    if statement is None:
        bumped = (
            update(threads)
            .where(the_thread(fenced))
            .values(
                last_seq=threads.c.last_seq + 1,
                last_activity_at=bindparam("b_now"),
                updated_at=bindparam("b_now"),
            )
            .returning(threads.c.id, threads.c.last_seq)
            .cte("bump")
        )
        statement = (
            update(messages)
            .where(messages.c.id == bindparam("b_message"), messages.c.thread_id == bumped.c.id)
            .values(_set_values(names) | {"seq": bumped.c.last_seq})
            .returning(messages.c.seq)
        )
        _combined_updates[(names, fenced)] = statement
    return statement


_SET_LEAF = (
    update(threads)
    .where(threads.c.id == bindparam("b_thread"))
    .values(current_leaf_id=bindparam("b_leaf"))
)


async def move_leaf(
    session: AsyncSession,
    thread_id: UUID,
    leaf_id: UUID | None,
    deleted_ids: list[UUID] | None = None,
) -> None:
    """The thread shows the branch ending at `leaf_id` from now on (None: no message left).
    The move takes a seq of its own, which no message row holds: every device hears of it
    in order (a `branch` frame, with the ids of messages deleted with it), cached pages
    go stale, and a replay that finds a seq no row accounts for ends with the leaf."""
    seq, _ = await bump(session, thread_id, 1, new=False)
    await direct.execute(session, _SET_LEAF, {"b_thread": thread_id, "b_leaf": leaf_id})
    branch_moved(session, thread_id, seq, leaf_id, deleted_ids or [])


async def delete_messages(session: AsyncSession, thread_id: UUID, ids: list[UUID]) -> None:
    """Delete messages of a thread (a branch: the caller moves the leaf and rewrites the
    siblings left, both of which give new seqs)."""
    for start in range(0, len(ids), 500):  # bounded IN lists
        chunk = ids[start : start + 500]
        await session.execute(
            delete(messages).where(messages.c.thread_id == thread_id, messages.c.id.in_(chunk))
        )


__all__ = (
    "create_message",
    "create_message_with",
    "create_messages",
    "creates_alone",
    "delete_messages",
    "lock_thread",
    "move_leaf",
    "record_versions",
    "update_message",
    "versions_of",
)
