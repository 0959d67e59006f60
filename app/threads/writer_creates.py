"""Creating messages: the writer's creates (app/threads/writer.py says the contract).

Messages form a tree (`parent_id`): a create without a `parent_id` goes below the
thread's current leaf, read under the thread's lock, and becomes the leaf (the rows of
one create follow each other); with one (an edited question: a new version beside the
old one), it goes there and the leaf stays, for the caller to move
(app/threads/branches.py).

Core statements, every column given (the columns' Python defaults filled in here, so the
StoredMessage handed back is the row as stored). On PostgreSQL a create is one statement
(the bump as a CTE, the rows INSERTed from it); on SQLite the bump, then one INSERT per row.
`create_message_with` adds another data-modifying statement to a PostgreSQL create (a
run's end with its answer: one round trip, atomic without BEGIN/COMMIT).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any
from uuid import UUID

from sqlalchemy import (
    Boolean,
    Column,
    Insert,
    Integer,
    Select,
    bindparam,
    case,
    exists,
    insert,
    literal,
    select,
    true,
    union_all,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from app.db import direct
from app.db.base import GUID
from app.db.direct import flush_pending
from app.lib.time import utcnow
from app.threads import fence
from app.threads.changes import message_changed
from app.threads.records import StoredMessage, stored_message
from app.threads.writer_bump import (
    BUMP,
    MESSAGE_COLUMNS,
    lease_params,
    messages,
    nothing_written,
    the_thread,
    threads,
)

_CREATE_FIELDS = MESSAGE_COLUMNS | {"id"}  # a message's id may be chosen by its creator


def creates_alone(rows: list[dict[str, Any]]) -> bool:
    """Whether `create_messages(rows)`, with nothing else in its session, is atomic by
    itself and may run without BEGIN/COMMIT (`RunnerDeps.write_alone`): on PostgreSQL it
    is one statement (SQLite's sessions keep their transactions)."""
    return all(fields.keys() <= _CREATE_FIELDS for fields in rows)


async def insert_messages(
    session: AsyncSession, thread_id: UUID, rows: list[dict[str, Any]]
) -> tuple[list[StoredMessage], bool]:
    """Several new messages (each a dict of fields incl. `role`) with one thread bump and
    one write of the rows: consecutive seqs and positions, as if created one by one; and
    whether the first is a new version (its parent had children already, or was named)."""
    if not rows:
        return [], False
    unknown = {key for fields in rows for key in fields} - _CREATE_FIELDS
    if unknown:
        raise TypeError(f"not fields of a new message: {sorted(unknown)}")
    await flush_pending(session)
    created, forked = await _insert(session, thread_id, rows)
    for message in created:
        message_changed(session, message)
    return created, forked


_INSERTED = tuple(c.key for c in messages.c if c.key not in ("seq", "position"))
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


_GIVEN_MARK = "_parent_given"  # a key of the first row's values: its parent was named


def _row_values(thread_id: UUID, fields: dict[str, Any], now: Any) -> dict[str, Any]:
    """Every column of a new row as SQLAlchemy would write it (seq and position: later)."""
    given = {"created_at": now, "updated_at": now, **fields, "thread_id": thread_id}
    values = {
        column.key: given[column.key] if column.key in given else _python_default(column)
        for column in messages.c
    }
    if "parent_id" in fields:
        values[_GIVEN_MARK] = True
    return values


# The leaf before the create: an UPDATE's RETURNING gives new values only, so the thread
# row is also read in its FROM, locked (FOR UPDATE returns the row as a concurrent writer
# committed it, the version the UPDATE then changes: no two creates take the same leaf).
_OLD_LEAF = (
    select(threads.c.id.label("old_thread"), threads.c.current_leaf_id.label("old_leaf"))
    .where(threads.c.id == bindparam("b_thread"))
    .with_for_update()
    .subquery("old")
)
_PARENT_GIVEN = bindparam("b_parent_given", type_=Boolean)
_version = messages.alias("version")
_NEW_LEAF = bindparam("b_leaf", type_=GUID)


def _forked(bumped: Any) -> Any:
    """Whether the first new row's parent (the one named, else the old leaf) had children
    before it (RETURNING's subquery sees the rows as they were before the statement): a new
    version, whose siblings the writer then records. The rows after it are below it."""
    named = bindparam("r0_parent_id", type_=messages.c.parent_id.type)
    leaf = select(bumped.c.old_leaf).correlate(None).scalar_subquery()
    parent = case((_PARENT_GIVEN, named), else_=leaf)
    siblings = (_version.c.thread_id == bindparam("b_thread")) & (_version.c.parent_id == parent)
    return exists().where(siblings).label("forked")


def _row_value(i: int, key: str, bumped: Any) -> Any:
    value = bindparam(f"r{i}_{key}", type_=messages.c[key].type)
    if i == 0 and key == "parent_id":  # below the leaf, unless the creator named a parent
        return case((_PARENT_GIVEN, value), else_=bumped.c.old_leaf).label(key)
    return value


def _insert_rows(count: int, fenced: bool, gate: Any = None) -> Insert:
    """WITH bump AS (UPDATE threads … RETURNING) INSERT INTO thread_messages SELECT … FROM
    bump, one SELECT per row: seqs and positions consecutive up to the bumped ones.
    `gate`: a further condition of the bump (create_message_with)."""
    statement = _inserts.get((count, fenced)) if gate is None else None
    if statement is None:
        where = the_thread(fenced) & (threads.c.id == _OLD_LEAF.c.old_thread)
        bumped = (
            update(threads)
            .where(where if gate is None else where & gate)
            .values(
                last_seq=threads.c.last_seq + count,
                message_count=threads.c.message_count + count,
                last_activity_at=bindparam("b_now"),
                # given, not the column's onupdate: under a SELECT (create_message_with)
                # nothing would compute it
                updated_at=bindparam("b_now"),
                current_leaf_id=case((_PARENT_GIVEN, threads.c.current_leaf_id), else_=_NEW_LEAF),
            )
            .returning(threads.c.last_seq, threads.c.message_count, _OLD_LEAF.c.old_leaf)
            .cte("bump")
        )
        selects = [
            select(
                *(_row_value(i, key, bumped) for key in _INSERTED),
                (bumped.c.last_seq - (count - 1 - i)).label("seq"),
                (bumped.c.message_count - (count - 1 - i)).label("position"),
            ).select_from(bumped)
            for i in range(count)
        ]
        rows = selects[0] if count == 1 else union_all(*selects)
        statement = (
            insert(messages)
            .from_select([*_INSERTED, "seq", "position"], rows)
            .returning(
                messages.c.id,
                messages.c.seq,
                messages.c.position,
                messages.c.parent_id,
                _forked(bumped),
            )
        )
        statement = statement.add_cte(bumped) if count > 1 else statement
        if gate is None:
            _inserts[(count, fenced)] = statement
    return statement


async def _insert(
    session: AsyncSession, thread_id: UUID, rows: list[dict[str, Any]]
) -> tuple[list[StoredMessage], bool]:
    now = utcnow()
    values = _chained([_row_values(thread_id, fields, now) for fields in rows], rows)
    if session.get_bind().dialect.name == "postgresql":
        placed, forked = await _insert_after_bump(session, thread_id, values, now)
    else:
        placed, forked = await _insert_then_bump(session, thread_id, values)
    created = [_stored(row, *placed[row["id"]]) for row in values]
    return created, forked or _parent_given(values)


def _chained(values: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row below the one before it, unless its creator named a parent (the first
    row's parent, when not named, is the thread's leaf: read in the statement)."""
    for before, row, fields in zip(values, values[1:], rows[1:], strict=False):
        if "parent_id" not in fields:
            row["parent_id"] = before["id"]
    return values


def _parent_given(values: list[dict[str, Any]]) -> bool:
    return values[0].get(_GIVEN_MARK, False)


def _insert_params(thread_id: UUID, values: list[dict[str, Any]], now: Any) -> dict[str, Any]:
    """The parameters of `_insert_rows(len(values))`."""
    params: dict[str, Any] = {
        "b_thread": thread_id,
        "b_now": now,
        "b_parent_given": _parent_given(values),
        "b_leaf": values[-1]["id"],
    }
    for i, row in enumerate(values):
        params.update({f"r{i}_{key}": row[key] for key in _INSERTED})
    return params


async def _insert_after_bump(
    session: AsyncSession, thread_id: UUID, values: list[dict[str, Any]], now: Any
) -> tuple[dict[UUID, tuple[int, int, UUID | None]], bool]:
    """PostgreSQL: one statement. Each new row's (seq, position, parent) by id, and
    whether the first row's parent had children."""
    params, lease = lease_params(_insert_params(thread_id, values, now))
    inserted = await direct.execute(session, _insert_rows(len(values), lease is not None), params)
    placed = {row[0]: (int(row[1]), int(row[2]), row[3]) for row in inserted.rows}
    if len(placed) != len(values):
        raise nothing_written(lease, f"no thread {thread_id}")
    forked = any(row[4] for row in inserted.rows if row[0] == values[0]["id"])
    return placed, forked


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
    place = (inserted.c.id, inserted.c.seq, inserted.c.position, inserted.c.parent_id)
    place += (inserted.c.forked,)
    statement = select(*place, *columns)
    return statement.select_from(inserted.join(other, true()))


async def insert_message_with(
    session: AsyncSession,
    thread_id: UUID,
    fields: dict[str, Any],
    also: Any,
    params: dict[str, Any],
) -> tuple[StoredMessage | None, dict[str, Any] | None, bool]:
    """A new message if `also` (a data-modifying statement with RETURNING, built once;
    its parameters in `params`) changes a row: on PostgreSQL, with `fields` as
    `creates_alone` takes them, one statement, atomic by itself, whose message is written
    only with `also`'s change; otherwise the create, then `also`, in the session's
    transaction (the caller rolls it back if `also` changed nothing). `also`'s row by
    column key, None if it changed no row (and then, in one statement, no message); and
    whether the message is a new version (as insert_messages says)."""
    if session.get_bind().dialect.name != "postgresql" or not creates_alone([fields]):
        [message], forked = await insert_messages(session, thread_id, [fields])
        others = (await direct.execute(session, also, params)).mappings()
        return message, others[0] if others else None, forked
    await flush_pending(session)
    now = utcnow()
    row = _row_values(thread_id, fields, now)
    values = _insert_params(thread_id, [row], now) | params
    results = (await direct.execute(session, _insert_with(also), values)).mappings()
    if not results:
        return None, None, False  # `also` changed nothing (or the thread is gone)
    result = results[0]
    seq, position = int(result["seq"]), int(result["position"])
    message = _stored(row, seq, position, result["parent_id"])
    message_changed(session, message)
    also_row = {key[5:]: value for key, value in result.items() if key.startswith("also_")}
    return message, also_row, bool(result["forked"]) or _parent_given([row])


# -- SQLite: the rows, then the bump ------------------------------------------------------
# Each row placed from the thread's row as it is (its seq and position the thread's last
# plus its offset; the first, unless its parent is named, below the leaf): the first INSERT
# takes SQLite's write lock, and checks the writer's lease. Then one bump moves the thread
# on by them all and moves the leaf: two statements fewer than reading the leaf and moving
# it on their own. The new rows are visible to the bump's version check: it leaves them out.
_NOW = threads.alias("thread_now")


@lru_cache(maxsize=4)
def _insert_placed(below_leaf: bool, fenced: bool) -> Insert:
    offset = bindparam("b_offset", type_=Integer)
    columns = [key for key in _INSERTED if key != "parent_id"]
    parent = _NOW.c.current_leaf_id if below_leaf else bindparam("r_parent_id", type_=GUID)
    placed = select(
        *(bindparam(f"r_{key}", type_=messages.c[key].type) for key in columns),
        parent,
        _NOW.c.last_seq + offset,
        _NOW.c.message_count + offset,
    ).where(_NOW.c.id == bindparam("b_thread"))
    if fenced:
        placed = placed.where(fence.holds())
    statement = insert(messages).from_select([*columns, "parent_id", "seq", "position"], placed)
    return statement.returning(messages.c.seq, messages.c.position, messages.c.parent_id)


_BUMP_AFTER = BUMP.values(
    current_leaf_id=case((_PARENT_GIVEN, threads.c.current_leaf_id), else_=_NEW_LEAF)
).returning(
    exists()
    .where(
        _version.c.thread_id == bindparam("b_thread"),
        _version.c.parent_id == bindparam("b_parent"),
        _version.c.id != bindparam("b_first"),  # the rows after it are below it
    )
    .label("forked")
)


async def _insert_then_bump(
    session: AsyncSession, thread_id: UUID, values: list[dict[str, Any]]
) -> tuple[dict[UUID, tuple[int, int, UUID | None]], bool]:
    """SQLite: the rows (no unit of work), then the bump and the new leaf."""
    given = _parent_given(values)
    params, lease = lease_params({"b_thread": thread_id})
    placed: dict[UUID, tuple[int, int, UUID | None]] = {}
    for offset, row in enumerate(values, start=1):
        first = offset == 1
        statement = _insert_placed(first and not given, first and lease is not None)
        fields = {f"r_{key}": value for key, value in row.items() if key != _GIVEN_MARK}
        found = await direct.execute(session, statement, {**params, **fields, "b_offset": offset})
        result = found.first()
        if result is None:  # only the first can miss: the thread gone, or the lease
            raise nothing_written(lease, f"no thread {thread_id}")
        seq, position, parent_id = result
        row["parent_id"] = parent_id
        placed[row["id"]] = (int(seq), int(position), parent_id)
    bump = {
        "b_thread": thread_id,
        "b_seqs": len(values),
        "b_messages": len(values),
        "b_now": utcnow(),
        "b_parent_given": given,
        "b_leaf": values[-1]["id"],
        "b_parent": values[0]["parent_id"],
        "b_first": values[0]["id"],
    }
    bumped = (await direct.execute(session, _BUMP_AFTER, bump)).first()
    return placed, bool(bumped and bumped[-1])


def _stored(row: dict[str, Any], seq: int, position: int, parent_id: UUID | None) -> StoredMessage:
    """The row as stored, in its place."""
    return stored_message({**row, "seq": seq, "position": position, "parent_id": parent_id})
