"""The bench's rows: users with one device each, and their tasks, whose reminders wait a
day ahead until the bench brings them all to one instant."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from app.db.models import Device, PushDelivery, Task, User
from app.lib.time import utcnow
from tests.push.conftest import BUNDLE

BATCH = 1000  # rows per INSERT


async def seed(database_url: str, reminders: int, users: int) -> None:
    engine = create_async_engine(database_url, poolclass=NullPool)
    later = utcnow() + timedelta(days=1)
    try:
        async with AsyncSession(engine) as session:
            owners = []
            for i in range(users):
                user = User(email=f"reminders-{i}@bench", password_hash="x")
                session.add(user)
                owners.append(user)
            await session.flush()
            for user in owners:
                token = secrets.token_hex(32)
                session.add(
                    Device(user_id=user.id, token=token, bundle_id=BUNDLE, environment="sandbox")
                )
            rows = [
                {
                    "owner_id": owners[i % users].id,
                    "title": f"Reminder {i}",
                    "due_at": later,
                    "remind_at": later,
                }
                for i in range(reminders)
            ]
            for start in range(0, reminders, BATCH):
                await session.execute(insert(Task), rows[start : start + BATCH])
            await session.commit()
    finally:
        await engine.dispose()


async def bring_due(database_url: str, at: datetime) -> None:
    """Every reminder due at `at` (written by another process: the server's scheduler
    notices within REMINDER_POLL_SECONDS)."""
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with AsyncSession(engine) as session:
            await session.execute(update(Task).values(due_at=at, remind_at=at))
            await session.commit()
    finally:
        await engine.dispose()


async def sent_so_far(session: AsyncSession) -> tuple[int, datetime | None]:
    """Deliveries APNs accepted, and when the last one was recorded."""
    query = select(func.count(), func.max(PushDelivery.sent_at)).where(
        PushDelivery.status == "sent"
    )
    count, last = (await session.execute(query)).one()
    return count, last
