"""Registering devices: idempotent by token; a token that changes hands moves with it."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession
from uuid_utils.compat import uuid7

from app.db.models import Device, User
from app.db.upsert import dialect_insert
from app.devices import repository
from app.devices.schemas import DeviceCreate
from app.lib.lookup import one_or_404
from app.lib.time import utcnow


async def register_device(session: AsyncSession, user: User, data: DeviceCreate) -> Device:
    """One row per token (an app install): a repeated registration updates it, and one made
    by another user takes it over (the phone changed accounts: pushes follow the login).
    An upsert, so two registrations racing for one token both succeed."""
    token = data.token.lower()
    now = utcnow()
    values = {
        "user_id": user.id,
        "platform": data.platform,
        "environment": data.environment,
        "bundle_id": data.bundle_id,
        "locale": data.locale,
        "updated_at": now,
    }
    insert = dialect_insert(session, Device.__table__)
    statement = insert.values(id=uuid7(), token=token, created_at=now, **values)
    statement = statement.on_conflict_do_update(index_elements=["token"], set_=values)
    await session.execute(statement)
    await session.execute(repository.beyond_limit(user.id))
    device = await session.scalar(
        repository.by_token(token).execution_options(populate_existing=True)
    )
    assert device is not None
    return device


async def list_devices(session: AsyncSession, user: User) -> list[Device]:
    return list(await session.scalars(repository.user_devices(user.id)))


async def delete_owned_device(session: AsyncSession, user: User, device_id: UUID) -> None:
    """Delete one of the user's devices (404 for another user's, as if it did not exist)."""
    device = await one_or_404(session, repository.user_device(user.id, device_id), "Device")
    await session.delete(device)
