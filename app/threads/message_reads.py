"""The message-page read path, kept lean because the app polls it.

The latest page and older history are the thread's current branch: a recursive walk up
by `parent_id` from the current leaf (or from the message before `before_position`), one
primary-key probe a row and at most a page of rows, as cheap on a 5,000-message thread as
on a short one. `after_seq` (sync) stays every change, of every branch.

One statement reads the page and checks ownership (joined with the thread, which also
gives `last_seq` from the same snapshot); only an empty result needs a second query to
tell "not yours / no such thread" (404) from "no messages". Rows are plain columns (no
ORM identity map), and a tool activity goes from the database's JSON text to its Struct
in one msgspec decode; the rest is `serializers.message_read_of`, as for ORM rows.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any
from uuid import UUID

import msgspec
from litestar.serialization import encode_json
from sqlalchemy import Select, Text, bindparam, case, cast, exists, select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from app.attachments.schemas import AttachmentRead
from app.db import direct
from app.db.models import Thread, ThreadMessage, User
from app.lib.problems import ProblemException
from app.threads import repository
from app.threads.plan import Plan
from app.threads.schemas import MessagePage, ThreadMessageRead, ToolActivity
from app.threads.serializers import message_read_of
from app.threads.services import get_owned_thread

_activity = msgspec.json.Decoder(ToolActivity)
_ids = msgspec.json.Decoder(list[UUID] | None)
_plan = msgspec.json.Decoder(Plan)
_attachments = msgspec.json.Decoder(list[AttachmentRead])
# SQL NULL, a JSON null and an empty object all mean "no tool activity".
_NO_ACTIVITY = {None, "null", "{}"}

COLUMNS = (
    ThreadMessage.id,
    ThreadMessage.thread_id,
    ThreadMessage.run_id,
    ThreadMessage.position,
    ThreadMessage.parent_id,
    cast(ThreadMessage.sibling_ids, Text).label("sibling_ids"),
    ThreadMessage.seq,
    ThreadMessage.role,
    ThreadMessage.content,
    ThreadMessage.is_user_facing,
    ThreadMessage.client_message_id,
    cast(ThreadMessage.tool_activity, Text).label("tool_activity"),
    cast(ThreadMessage.plan, Text).label("plan"),
    cast(ThreadMessage.attachments, Text).label("attachments"),
    ThreadMessage.created_at,
    ThreadMessage.updated_at,
)


def select_message_rows() -> Select[Any]:
    return select(*COLUMNS)


class _Row:
    """A page row with its stored sibling ids decoded (the JSON text of the column)."""

    __slots__ = ("row", "sibling_ids")

    def __init__(self, row: Any) -> None:
        self.row = row
        ids = row.sibling_ids
        self.sibling_ids = None if ids in _NO_ACTIVITY else _ids.decode(ids)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.row, name)


def row_to_read(row: Any) -> ThreadMessageRead:
    activity, plan = row.tool_activity, row.plan
    return message_read_of(
        _Row(row),
        None if activity in _NO_ACTIVITY else _activity.decode(activity),
        None if plan in _NO_ACTIVITY else _plan.decode(plan),
        None if row.attachments in _NO_ACTIVITY else _attachments.decode(row.attachments),
    )


_messages = ThreadMessage.__table__
_threads = Thread.__table__
_AT_BOUND = (_messages.c.thread_id == bindparam("thread_id")) & (
    _messages.c.position == bindparam("bound")
)
_LEAF = repository.current_leaf(bindparam("thread_id"))


def _branch_page() -> Select[Any]:
    """The current branch's page: before `bound` (the message there: from its parent,
    else from the current leaf), newest first."""
    at_bound = select(_messages.c.parent_id).where(_AT_BOUND).scalar_subquery()
    start = case((exists().where(_AT_BOUND), at_bound), else_=_LEAF)
    path = repository.branch(start)
    query = select_message_rows().add_columns(
        Thread.last_seq.label("thread_last_seq"), Thread.current_leaf_id.label("leaf")
    )
    query = query.join(path, path.c.id == ThreadMessage.id)
    query = repository.in_owned_thread(query, bindparam("thread_id"), bindparam("owner_id"))
    query = query.where(ThreadMessage.position < bindparam("bound"))
    return query.order_by(ThreadMessage.position.desc()).limit(bindparam("limit"))


def _changes_page() -> Select[Any]:
    query = repository.in_owned_thread(
        select_message_rows().add_columns(
            Thread.last_seq.label("thread_last_seq"), Thread.current_leaf_id.label("leaf")
        ),
        bindparam("thread_id"),
        bindparam("owner_id"),
    ).limit(bindparam("limit"))
    return repository.changed_after(query, bindparam("bound"))


# Built once: constructing a statement and its cache key costs more than running it.
_BRANCH = _branch_page()
_AFTER = _changes_page()
_NO_BOUND = repository.NO_BOUND


async def list_owned_messages(
    session: AsyncSession,
    user: User,
    thread_id: UUID,
    *,
    limit: int,
    after_seq: int | None,
    before_position: int | None,
) -> MessagePage:
    """`after_seq`: every message changed after it, ascending seq; otherwise the page
    before `before_position` (or the latest), ascending position."""
    params: dict[str, Any] = {"thread_id": thread_id, "owner_id": user.id, "limit": limit + 1}
    if after_seq is not None:
        statement, params["bound"] = _AFTER, after_seq
    else:
        statement, params["bound"] = _BRANCH, before_position or _NO_BOUND
    rows = list((await session.execute(statement, params)).all())
    if not rows:
        thread = await get_owned_thread(session, user, thread_id)  # 404 unless it is yours
        return MessagePage(
            items=[],
            last_seq=thread.last_seq,
            has_more=False,
            current_leaf_id=thread.current_leaf_id,
        )
    has_more = len(rows) > limit
    rows = rows[:limit]
    if after_seq is None:
        rows.reverse()
    return _page(rows, has_more)


def _page(rows: list[Any], has_more: bool) -> MessagePage:
    return MessagePage(
        items=[row_to_read(row) for row in rows],
        last_seq=max(rows[0].thread_last_seq, *(row.seq for row in rows)),
        has_more=has_more,
        current_leaf_id=rows[0].leaf,
    )


class LatestPageCache:
    """Encoded latest pages by (thread, limit), each valid for one `threads.last_seq`.

    Every message create/update bumps the thread's last_seq in the same transaction
    (app/threads/writer.py), so the committed page for a given last_seq never changes: a
    hit is as current as the last_seq just read. The caller checks ownership against
    the database on every request; the cache never decides who may read.
    """

    def __init__(self, max_entries: int = 512, max_bytes: int = 64 * 1024 * 1024) -> None:
        # Bounded by count and by size: pages of long messages can be megabytes.
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._size = 0
        self._pages: OrderedDict[tuple[UUID, int], tuple[int, bytes]] = OrderedDict()

    def get(self, thread_id: UUID, limit: int, last_seq: int) -> bytes | None:
        entry = self._pages.get((thread_id, limit))
        if entry is None or entry[0] != last_seq:
            return None
        self._pages.move_to_end((thread_id, limit))
        return entry[1]

    def put(self, thread_id: UUID, limit: int, last_seq: int, body: bytes) -> None:
        key = (thread_id, limit)
        current = self._pages.get(key)
        if current is not None and current[0] > last_seq:
            return  # a concurrent request already stored a newer page
        if len(body) > self.max_bytes // 16:
            return
        if current is not None:
            self._size -= len(current[1])
        self._pages[key] = (last_seq, body)
        self._pages.move_to_end(key)
        self._size += len(body)
        while len(self._pages) > self.max_entries or self._size > self.max_bytes:
            self._size -= len(self._pages.popitem(last=False)[1][1])

    def clear(self) -> None:
        self._pages.clear()
        self._size = 0


latest_pages = LatestPageCache()


async def latest_page_json(
    session: AsyncSession, user: User, thread_id: UUID, *, limit: int
) -> bytes:
    """The latest page, encoded: one indexed lookup (ownership and last_seq) and, when
    the thread changed since it was last read, the page query."""
    params = {"thread_id": thread_id, "owner_id": user.id}
    bind = session.bind
    assert isinstance(bind, AsyncEngine)
    owned = (await direct.read_alone(bind, repository.OWNED_LAST_SEQ, params)).first()
    last_seq = None if owned is None else owned[0]
    if last_seq is None:
        raise ProblemException(404, "Thread not found.")
    cached = latest_pages.get(thread_id, limit, last_seq)
    if cached is not None:
        return cached
    page_params = {**params, "limit": limit + 1, "bound": _NO_BOUND}
    rows = list((await session.execute(_BRANCH, page_params)).all())
    if not rows:  # no messages (or deleted meanwhile: the next request 404s)
        return encode_json(MessagePage(items=[], last_seq=last_seq, has_more=False))
    # Keyed by the last_seq read with the rows (same statement, same snapshot).
    snapshot_seq = rows[0].thread_last_seq
    has_more = len(rows) > limit
    rows = rows[:limit]
    rows.reverse()
    body = encode_json(_page(rows, has_more))
    latest_pages.put(thread_id, limit, snapshot_seq, body)
    return body
