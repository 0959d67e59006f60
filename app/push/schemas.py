from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from app.lib.schema import AwareDatetime, Input, NonNegativeInt, Schema
from app.threads.schemas import RunStatusName

# ActivityKit's push token (Activity.pushTokenUpdates), hex-encoded as the app sends it.
PushToken = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-fA-F]{32,400}$")]
Environment = Literal["sandbox", "production"]
Scope = Literal["thread", "run"]
Label = Annotated[str, msgspec.Meta(max_length=200)]


class _TokenCreate(Input, kw_only=True):
    # An ActivityKit token to register: an activity's, or an install's push-to-start one
    # (two bodies in the API, the same fields).
    push_token: PushToken
    # The token's APNs environment (a debug build: sandbox); APNS_ENVIRONMENT if omitted.
    environment: Environment | None = None


class LiveActivityCreate(_TokenCreate):
    pass  # the activity's token (Activity.pushTokenUpdates)


class LiveActivityRead(Schema):
    id: UUID
    thread_id: UUID
    run_id: UUID | None  # None: it follows the thread's next run
    scope: Scope  # thread: its current or next run; run: that run only
    environment: Environment
    created_at: datetime
    ended_at: datetime | None  # an `end` push was sent (the run ended, or the app ended it)


class LiveActivityList(Schema):
    items: list[LiveActivityRead]


class LiveActivityContentState(Input, kw_only=True, rename="camel"):
    """The widget's ContentState, keys as the Swift struct has them (camelCase): what the
    server sends in `content-state`, and what the app may give as an activity's last."""

    status: RunStatusName
    tool_name: Label | None = None
    tool_status: Label | None = None
    display_message: Annotated[str, msgspec.Meta(max_length=500)] | None = None
    cells_done: NonNegativeInt = 0
    cells_total: NonNegativeInt = 0
    elapsed_seconds: NonNegativeInt = 0

    def to_payload(self) -> dict[str, Any]:
        """As `content-state` carries it (camelCase keys)."""
        return msgspec.to_builtins(self)


class LiveActivityEnd(Input, kw_only=True):
    # The state the ended activity shows; omitted: the followed run's state now.
    content_state: LiveActivityContentState | msgspec.UnsetType = msgspec.UNSET
    # When the lock screen drops it; omitted: LIVE_ACTIVITY_DISMISS_SECONDS from now; a
    # time in the past: at once.
    dismiss_at: AwareDatetime | None = None


class StartTokenCreate(_TokenCreate):
    pass  # the push-to-start token (Activity<…>.pushToStartTokenUpdates), hex


class StartTokenRead(Schema):
    id: UUID
    environment: Environment
    created_at: datetime
