"""Device queries: statement builders that services and the push sender execute."""

from __future__ import annotations

from uuid import UUID

from sqlalchemy import Delete, Select, delete, select

from app.db.models import Device

MAX_DEVICES_PER_USER = 20


def user_devices(user_id: UUID) -> Select[tuple[Device]]:
    return (
        select(Device)
        .where(Device.user_id == user_id)
        .order_by(Device.created_at.desc(), Device.id.desc())
        .limit(MAX_DEVICES_PER_USER)
    )


def user_device(user_id: UUID, device_id: UUID) -> Select[tuple[Device]]:
    return select(Device).where(Device.user_id == user_id, Device.id == device_id)


def by_token(token: str) -> Select[tuple[Device]]:
    return select(Device).where(Device.token == token)


def beyond_limit(user_id: UUID) -> Delete:
    """A user's devices past the newest MAX_DEVICES_PER_USER (reinstalls leave old tokens)."""
    keep = select(Device.id).where(Device.user_id == user_id)
    keep = keep.order_by(Device.updated_at.desc(), Device.id.desc()).limit(MAX_DEVICES_PER_USER)
    return delete(Device).where(Device.user_id == user_id, Device.id.not_in(keep.scalar_subquery()))


def delete_ids(device_ids: list[UUID]) -> Delete:
    return delete(Device).where(Device.id.in_(device_ids))
