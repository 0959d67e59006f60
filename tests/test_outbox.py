"""The one outbox: work queued with on_commit runs after commit, never after a rollback."""

from __future__ import annotations

import logging

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import User
from app.db.outbox import on_commit
from tests.factories import UserFactory


async def test_callbacks_run_after_commit_in_order(
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    calls: list[str] = []
    async with session_factory() as session:
        await session.execute(select(1))
        on_commit(session, lambda: calls.append("first"))
        on_commit(session, lambda: calls.append("second"))
        assert calls == []
        await session.commit()
        assert calls == ["first", "second"]
        await session.commit()  # nothing queued any more
    assert calls == ["first", "second"]


async def test_a_rollback_drops_the_callbacks(
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    calls: list[str] = []
    async with session_factory() as session:
        await session.execute(select(1))
        on_commit(session, lambda: calls.append("rolled back"))
        await session.rollback()
        await session.execute(select(1))
        on_commit(session, lambda: calls.append("committed"))
        await session.commit()
    assert calls == ["committed"]


async def test_a_failing_callback_is_logged_and_breaks_nothing(
    session_factory: async_sessionmaker[AsyncSession], caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[str] = []
    user = UserFactory.build()

    def broken() -> None:
        raise RuntimeError("listener down")

    async with session_factory() as session:
        session.add(user)
        on_commit(session, broken)
        on_commit(session, lambda: calls.append("after the broken one"))
        with caplog.at_level(logging.ERROR, logger="app.db.outbox"):
            await session.commit()
    assert calls == ["after the broken one"]
    assert "listener down" in caplog.text
    async with session_factory() as session:
        assert await session.scalar(select(User.id).where(User.id == user.id)) == user.id
        await session.delete(await session.get(User, user.id))
        await session.commit()
