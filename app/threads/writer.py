"""The single writer of message changes.

Every create or update of a ThreadMessage goes through here. In the same transaction it
bumps `threads.last_seq` (an UPDATE … RETURNING that row-locks the thread on PostgreSQL and
takes SQLite's write lock), stamps the row's `seq`, and announces the change, delivered
after commit (app/threads/changes.py). Per thread, `seq` is therefore gap-free and in commit order.

One way to write a message: prebuilt Core statements through `session.execute`, the
stored row handed back as a `StoredMessage` Struct (app/threads/records.py), never an ORM
instance. Creates give every column (the columns' Python defaults filled in here, so the
Struct is the row as stored). On PostgreSQL a create is one statement (the bump as a CTE,
the rows INSERTed from it); on SQLite the bump, then one INSERT per row.
`create_message_with` adds another data-modifying statement to a PostgreSQL create (a
run's end with its answer: one round trip, atomic without BEGIN/COMMIT).

Updates are the hot path (a tool's progress, streamed text): a Core UPDATE, the Struct
then changed to match. On PostgreSQL the bump and the row update are one statement (a
data-modifying CTE): one round trip instead of two, and the thread row is still locked
until commit. A message loaded through the ORM (approvals, the reaper) is updated through
the ORM: its session's unit of work owns that instance.

A write made under a run's lease (app/threads/fence.py: a runner's, for its run) is
fenced in the thread bump itself: the bump's WHERE also asks that the lease still holds,
so a refused write bumps nothing, writes nothing and raises `Fenced` (statements: one more
variant each, the same count).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from uuid import UUID

from sqlalchemy import (
    Column,
    Insert,
    Select,
    Update,
    bindparam,
    exists,
    insert,
    literal,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.exc import NoResultFound
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import direct
from app.db.direct import flush_pending
from app.db.models import Thread, ThreadMessage
from app.lib.time import utcnow
from app.threads import fence
from app.threads.changes import message_changed
from app.threads.fence import Fenced, Lease
from app.threads.records import StoredMessage, stored_message

# What the writer hands back: a Struct of a row it wrote, or the ORM instance it was given.
Message = StoredMessage | ThreadMessage

_threads = Thread.__table__
_messages = ThreadMessage.__table__
_MESSAGE_COLUMNS = frozenset(_messages.c.keys()) - {"id", "thread_id", "seq", "updated_at"}
_CREATE_FIELDS = _MESSAGE_COLUMNS | {"id"}  # a message's id may be chosen by its creator


def _the_thread(fenced: bool) -> Any:
    """The bumped thread's WHERE: the thread, and, `fenced`, the writer's lease holding."""
    thread = _threads.c.id == bindparam("b_thread")
    return thread & fence.holds() if fenced else thread


def _lease_params(params: dict[str, Any]) -> tuple[dict[str, Any], Lease | None]:
    """`params` with the current lease's (if any), and that lease."""
    lease = fence.held()
    return (params if lease is None else params | fence.params(lease)), lease


def _nothing_written(lease: Lease | None, missing: str) -> Exception:
    """What a write that changed no row raises: `Fenced` under a lease (the thread gone
    takes its runs with it, so that lease is gone too), else NoResultFound."""
    return NoResultFound(missing) if lease is None else Fenced(lease, "a message write")


# Bind names must differ from column names (SQLAlchemy reserves those for SET values).
def _bump_statement(fenced: bool) -> Update:
    return (
        update(_threads)
        .where(_the_thread(fenced))
        .values(
            last_seq=_threads.c.last_seq + bindparam("b_seqs"),
            message_count=_threads.c.message_count + bindparam("b_messages"),
            last_activity_at=bindparam("b_now"),
            updated_at=bindparam("b_now"),
        )
        .returning(_threads.c.last_seq, _threads.c.message_count)
    )


_BUMPS = {fenced: _bump_statement(fenced) for fenced in (False, True)}
_BUMP = _BUMPS[False]
_LOCK = (
    update(_threads)
    .where(_threads.c.id == bindparam("b_thread"))
    .values(last_seq=_threads.c.last_seq)
)


async def lock_thread(session: AsyncSession, thread_id: UUID) -> None:
    """Serialise writers of one thread until this transaction ends (no seq is used)."""
    await session.execute(_LOCK, {"b_thread": thread_id})


async def _bump(
    session: AsyncSession, thread_id: UUID, count: int, *, new: bool
) -> tuple[int, int]:
    now = utcnow()
    params, lease = _lease_params(
        {"b_thread": thread_id, "b_seqs": count, "b_messages": count if new else 0, "b_now": now}
    )
    row = (await direct.execute(session, _BUMPS[lease is not None], params)).first()
    if row is None:
        raise _nothing_written(lease, f"no thread {thread_id}")
    last_seq, message_count = row
    return int(last_seq), int(message_count)


async def create_message(
    session: AsyncSession, thread_id: UUID, *, role: str, **fields: Any
) -> StoredMessage:
    [message] = await create_messages(session, thread_id, [{"role": role, **fields}])
    return message


def creates_alone(rows: list[dict[str, Any]]) -> bool:
    """Whether `create_messages(rows)`, with nothing else in its session, is atomic by
    itself and may run without BEGIN/COMMIT (`RunnerDeps.write_alone`): on PostgreSQL it
    is one statement (SQLite's sessions keep their transactions)."""
    return all(fields.keys() <= _CREATE_FIELDS for fields in rows)


async def create_messages(
    session: AsyncSession, thread_id: UUID, rows: list[dict[str, Any]]
) -> list[StoredMessage]:
    """Several new messages (each a dict of fields incl. `role`) with one thread bump and
    one write of the rows: consecutive seqs and positions, as if created one by one."""
    if not rows:
        return []
    unknown = {key for fields in rows for key in fields} - _CREATE_FIELDS
    if unknown:
        raise TypeError(f"not fields of a new message: {sorted(unknown)}")
    await flush_pending(session)
    messages = await _insert(session, thread_id, rows)
    for message in messages:
        message_changed(session, message)
    return messages


async def update_message(session: AsyncSession, message: Message, **changes: Any) -> Message:
    """A new version of `message` (a new seq); `message` itself brought up to date."""
    # Pending changes of this session are written first, in this transaction, as the ORM
    # would autoflush them before a query.
    await flush_pending(session)
    if isinstance(message, ThreadMessage) or not changes.keys() <= _MESSAGE_COLUMNS:
        return await _update_with_orm(session, message, changes)
    now = utcnow()
    params = {f"v_{name}": value for name, value in changes.items()}
    params |= {"b_thread": message.thread_id, "b_message": message.id, "b_now": now}
    if session.get_bind().dialect.name == "postgresql":
        params, lease = _lease_params(params)
        statement = _bump_and_update(tuple(changes), lease is not None)
        row = (await direct.execute(session, statement, params)).first()
        if row is None:
            missing = f"no thread message {message.id} in thread {message.thread_id}"
            raise _nothing_written(lease, missing)
        seq = int(row[0])
    else:
        seq, _ = await _bump(session, message.thread_id, 1, new=False)
        params["v_seq"] = seq
        if (await direct.execute(session, _update_row(tuple(changes)), params)).rowcount != 1:
            raise NoResultFound(f"no thread message {message.id}")
    for name, value in changes.items():
        setattr(message, name, value)
    message.seq = seq
    message.updated_at = now
    message_changed(session, message)
    return message


async def _update_with_orm(
    session: AsyncSession, message: Message, changes: dict[str, Any]
) -> Message:
    """An ORM instance through its unit of work (added to `session` if it is in none)."""
    if not isinstance(message, ThreadMessage):
        raise TypeError(f"not columns of a message: {sorted(changes.keys() - _MESSAGE_COLUMNS)}")
    seq, _ = await _bump(session, message.thread_id, 1, new=False)
    session.add(message)
    for name, value in changes.items():
        setattr(message, name, value)
    message.seq = seq
    message.updated_at = utcnow()
    await session.flush()
    message_changed(session, message)
    return message


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
        statement = update(_messages).where(_messages.c.id == bindparam("b_message")).values(values)
        _row_updates[names] = statement
    return statement


def _bump_and_update(names: tuple[str, ...], fenced: bool) -> Update:
    """UPDATE thread_messages SET seq = bump.last_seq, … FROM (UPDATE threads … RETURNING)."""
    statement = _combined_updates.get((names, fenced))
    if statement is None:
        bump = (
            update(_threads)
            .where(_the_thread(fenced))
            .values(
                last_seq=_threads.c.last_seq + 1,
                last_activity_at=bindparam("b_now"),
                updated_at=bindparam("b_now"),
            )
            .returning(_threads.c.id, _threads.c.last_seq)
            .cte("bump")
        )
        statement = (
            update(_messages)
            .where(_messages.c.id == bindparam("b_message"), _messages.c.thread_id == bump.c.id)
            .values(_set_values(names) | {"seq": bump.c.last_seq})
            .returning(_messages.c.seq)
        )
        _combined_updates[(names, fenced)] = statement
    return statement


# -- creates: Core statements, every column given ------------------------------------
_INSERTED = tuple(c.key for c in _messages.c if c.key not in ("seq", "position"))
_INSERT_ROW = insert(_messages)  # every column bound by its key (SQLite's creates)
_inserts: dict[tuple[int, bool], Insert] = {}


def _python_default(column: Column[Any]) -> Any:
    """What SQLAlchemy would write for a column left out of an INSERT: its Python
    default (a value, or a callable's value), else NULL. (A SQL-expression default or a
    server default is not expected on this table: the row is returned as written.)"""
    default = column.default
    if default is None or not (default.is_scalar or default.is_callable):
        return None  # none, or the ORM's insert sentinel
    if default.is_scalar:
        return default.arg  # type: ignore[attr-defined]
    return default.arg(None)  # type: ignore[attr-defined]  # wrapped to take a context


def _row_values(thread_id: UUID, fields: dict[str, Any], now: Any) -> dict[str, Any]:
    """Every column of a new row as SQLAlchemy would write it (seq and position: later)."""
    given = {"created_at": now, "updated_at": now, **fields, "thread_id": thread_id}
    return {
        column.key: given[column.key] if column.key in given else _python_default(column)
        for column in _messages.c
    }


def _insert_rows(count: int, fenced: bool, gate: Any = None) -> Insert:
    """WITH bump AS (UPDATE threads … RETURNING) INSERT INTO thread_messages SELECT … FROM
    bump, one SELECT per row: seqs and positions consecutive up to the bumped ones.
    `gate`: a further condition of the bump (create_message_with)."""
    statement = _inserts.get((count, fenced)) if gate is None else None
    if statement is None:
        where = _the_thread(fenced)
        bump = (
            update(_threads)
            .where(where if gate is None else where & gate)
            .values(
                last_seq=_threads.c.last_seq + count,
                message_count=_threads.c.message_count + count,
                last_activity_at=bindparam("b_now"),
                # given, not the column's onupdate: under a SELECT (create_message_with)
                # nothing would compute it
                updated_at=bindparam("b_now"),
            )
            .returning(_threads.c.last_seq, _threads.c.message_count)
            .cte("bump")
        )
        selects = [
            select(
                *(bindparam(f"r{i}_{key}", type_=_messages.c[key].type) for key in _INSERTED),
                (bump.c.last_seq - (count - 1 - i)).label("seq"),
                (bump.c.message_count - (count - 1 - i)).label("position"),
            ).select_from(bump)
            for i in range(count)
        ]
        rows = selects[0] if count == 1 else union_all(*selects)
        statement = (
            insert(_messages)
            .from_select([*_INSERTED, "seq", "position"], rows)
            .returning(_messages.c.id, _messages.c.seq, _messages.c.position)
        )
        statement = statement.add_cte(bump) if count > 1 else statement
        if gate is None:
            _inserts[(count, fenced)] = statement
    return statement


async def _insert(
    session: AsyncSession, thread_id: UUID, rows: list[dict[str, Any]]
) -> list[StoredMessage]:
    now = utcnow()
    values = [_row_values(thread_id, fields, now) for fields in rows]
    if session.get_bind().dialect.name == "postgresql":
        placed = await _insert_after_bump(session, thread_id, values, now)
    else:
        placed = await _bump_then_insert(session, thread_id, values)
    return [_stored(row, *placed[row["id"]]) for row in values]


def _insert_params(thread_id: UUID, values: list[dict[str, Any]], now: Any) -> dict[str, Any]:
    """The parameters of `_insert_rows(len(values))`."""
    params: dict[str, Any] = {"b_thread": thread_id, "b_now": now}
    for i, row in enumerate(values):
        params.update({f"r{i}_{key}": row[key] for key in _INSERTED})
    return params


async def _insert_after_bump(
    session: AsyncSession, thread_id: UUID, values: list[dict[str, Any]], now: Any
) -> dict[UUID, tuple[int, int]]:
    """PostgreSQL: one statement. Each new row's (seq, position) by id."""
    params, lease = _lease_params(_insert_params(thread_id, values, now))
    inserted = await direct.execute(session, _insert_rows(len(values), lease is not None), params)
    placed = {row_id: (int(seq), int(position)) for row_id, seq, position in inserted.rows}
    if len(placed) != len(values):
        raise _nothing_written(lease, f"no thread {thread_id}")
    return placed


# -- a create with another statement, in one round trip (PostgreSQL) ---------------------
@lru_cache(maxsize=8)  # keyed by the statement itself (DML statements hash by identity)
def _insert_with(also: Any) -> Select[Any]:
    """WITH also AS (<also>), bump AS (… WHERE EXISTS (SELECT FROM also)), ins AS (INSERT
    one message … RETURNING) SELECT the message's place and `also`'s row: no row if `also`
    changed none (nor is the message written). Built once per `also`."""
    other = also.cte("also")
    # not fenced by the lease: `also` (a run's end) carries it and locks the run row itself
    inserted = _insert_rows(1, False, exists(select(literal(1)).select_from(other))).cte("ins")
    columns = [c.label(f"also_{c.key}") for c in other.c]
    statement = select(inserted.c.id, inserted.c.seq, inserted.c.position, *columns)
    return statement.select_from(inserted.join(other, true()))


async def create_message_with(
    session: AsyncSession,
    thread_id: UUID,
    fields: dict[str, Any],
    also: Any,
    params: dict[str, Any],
) -> tuple[StoredMessage | None, dict[str, Any] | None]:
    """A new message if `also` (a data-modifying statement with RETURNING, built once;
    its parameters in `params`) changes a row: on PostgreSQL, with `fields` as
    `creates_alone` takes them, one statement, atomic by itself, whose message is written
    only with `also`'s change; otherwise the create, then `also`, in the session's
    transaction (the caller rolls it back if `also` changed nothing). `also`'s row by
    column key, None if it changed no row (and then, in one statement, no message)."""
    if session.get_bind().dialect.name != "postgresql" or not creates_alone([fields]):
        message = await create_message(session, thread_id, **fields)
        others = (await direct.execute(session, also, params)).mappings()
        return message, others[0] if others else None
    await flush_pending(session)
    now = utcnow()
    row = _row_values(thread_id, fields, now)
    values = _insert_params(thread_id, [row], now) | params
    results = (await direct.execute(session, _insert_with(also), values)).mappings()
    if not results:
        return None, None  # `also` changed nothing (or the thread is gone): nothing written
    result = results[0]
    seq, position = int(result["seq"]), int(result["position"])
    message = _stored(row, seq, position)
    message_changed(session, message)
    return message, {key[5:]: value for key, value in result.items() if key.startswith("also_")}


async def _bump_then_insert(
    session: AsyncSession, thread_id: UUID, values: list[dict[str, Any]]
) -> dict[UUID, tuple[int, int]]:
    """SQLite: the bump, then the rows (no unit of work)."""
    count = len(values)
    last_seq, last_position = await _bump(session, thread_id, count, new=True)
    placed = {
        row["id"]: (last_seq - count + 1 + i, last_position - count + 1 + i)
        for i, row in enumerate(values)
    }
    for row in values:  # one INSERT per row: the rows of one turn are few
        seq, position = placed[row["id"]]
        await direct.execute(session, _INSERT_ROW, {**row, "seq": seq, "position": position})
    return placed


def _stored(row: dict[str, Any], seq: int, position: int) -> StoredMessage:
    """The row as stored, in its place."""
    return stored_message({**row, "seq": seq, "position": position})
