from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from app.lib.schema import Input, Schema

Platform = Literal["ios"]
Environment = Literal["sandbox", "production"]
# An APNs device token as the app gets it: hex (32 bytes today; Apple says it may grow).
DeviceToken = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-fA-F]{32,200}$")]
BundleId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9.-]{1,155}$")]
Locale = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z]{2,8}([_-][A-Za-z0-9]{1,8}){0,3}$")]


class DeviceCreate(Input, kw_only=True):
    token: DeviceToken
    environment: Environment
    bundle_id: BundleId
    platform: Platform = "ios"
    locale: Locale | None = None


class DeviceRead(Schema):
    id: UUID
    platform: Platform
    environment: Environment
    bundle_id: str
    locale: str | None
    created_at: datetime
    updated_at: datetime


class DeviceList(Schema):
    items: list[DeviceRead]
