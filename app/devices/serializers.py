from __future__ import annotations

from typing import Any, cast

from app.db.models import Device
from app.devices.schemas import DeviceRead


def device_read(device: Device) -> DeviceRead:
    """The token is never served back: it is a credential to reach the phone."""
    return DeviceRead(
        id=device.id,
        platform=cast(Any, device.platform),
        environment=cast(Any, device.environment),
        bundle_id=device.bundle_id,
        locale=device.locale,
        created_at=device.created_at,
        updated_at=device.updated_at,
    )
