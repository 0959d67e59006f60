from __future__ import annotations

from uuid import UUID

from litestar import delete, get, post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import User
from app.devices import services
from app.devices.schemas import DeviceCreate, DeviceList, DeviceRead
from app.devices.serializers import device_read
from app.lib.problems import problems


class DeviceController(SignedInController):
    path = "/api/devices"
    tags = ["devices"]

    @post("/", operation_id="RegisterDevice", responses=problems())
    async def register_device(
        self, data: DeviceCreate, db_session: AsyncSession, current_user: User
    ) -> DeviceRead:
        """Register this phone's APNs token for push notifications (idempotent by token;
        a token registered by another account moves to yours)."""
        device = await services.register_device(db_session, current_user, data)
        return device_read(device)

    @get("/", operation_id="ListDevices", responses=problems())
    async def list_devices(self, db_session: AsyncSession, current_user: User) -> DeviceList:
        """Your registered devices, newest first (at most 20; older ones are dropped)."""
        devices = await services.list_devices(db_session, current_user)
        return DeviceList(items=[device_read(d) for d in devices])

    @delete("/{device_id:uuid}", operation_id="DeleteDevice", responses=problems(404))
    async def delete_device(
        self, device_id: UUID, db_session: AsyncSession, current_user: User
    ) -> None:
        """Stop pushes to a device (sign-out on the phone)."""
        await services.delete_owned_device(db_session, current_user, device_id)
