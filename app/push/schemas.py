from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from app.lib.schema import Input, Schema

# ActivityKit's push token (Activity.pushTokenUpdates), hex-encoded as the app sends it.
PushToken = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-fA-F]{32,400}$")]


class LiveActivityCreate(Input, kw_only=True):
    push_token: PushToken
    # The token's APNs environment (a debug build: sandbox); APNS_ENVIRONMENT if omitted.
    environment: Literal["sandbox", "production"] | None = None


class LiveActivityRead(Schema):
    id: UUID
    thread_id: UUID
    run_id: UUID | None  # None: it follows the thread's next run
    created_at: datetime
