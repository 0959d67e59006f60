"""The app plus the page read as it was before branches: the thread's messages by
position (no walk up the tree), served like `GET messages` with `before_position`
(authenticated, ownership checked in the same statement, the same rows and page)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from litestar import Litestar, get
from sqlalchemy import bindparam
from sqlalchemy.ext.asyncio import AsyncSession

from app import create_app
from app.accounts.deps import SignedInController
from app.db.models import Thread, ThreadMessage, User
from app.threads import repository
from app.threads.message_reads import row_to_read, select_message_rows
from app.threads.schemas import MessagePage

_BY_POSITION = (
    repository.in_owned_thread(
        select_message_rows().add_columns(
            Thread.last_seq.label("thread_last_seq"), Thread.current_leaf_id.label("leaf")
        ),
        bindparam("thread_id"),
        bindparam("owner_id"),
    )
    .where(ThreadMessage.position < bindparam("bound"))
    .order_by(ThreadMessage.position.desc())
    .limit(bindparam("limit"))
)


class ByPosition(SignedInController):
    path = "/bench/by-position/{thread_id:uuid}"
    include_in_schema = False

    @get("/", operation_id="BenchByPosition")
    async def page(
        self,
        thread_id: UUID,
        db_session: AsyncSession,
        current_user: User,
        before_position: int = repository.NO_BOUND,
        limit: int = 50,
    ) -> MessagePage:
        params: dict[str, Any] = {
            "thread_id": thread_id,
            "owner_id": current_user.id,
            "limit": limit + 1,
            "bound": before_position,
        }
        rows = list((await db_session.execute(_BY_POSITION, params)).all())
        has_more = len(rows) > limit
        rows = rows[:limit]
        rows.reverse()
        return MessagePage(
            items=[row_to_read(row) for row in rows],
            last_seq=max(rows[0].thread_last_seq, *(row.seq for row in rows)),
            has_more=has_more,
            current_leaf_id=rows[0].leaf,
        )


def create_bench_app() -> Litestar:
    app = create_app()
    app.register(ByPosition)
    return app
