"""Settings of the realtime side: pub/sub across processes and the `/api/ws` socket."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import PositiveFloat, PositiveInt


@dataclass(frozen=True)
class RealtimeSettings:
    redis_url: Annotated[
        str | None, Meta(description="pub/sub across several server processes")
    ] = None
    channels_prefix: Annotated[
        str,
        Meta(description="prefix of pub/sub channels, to keep deployments sharing a Redis apart"),
    ] = "tc:"
    ws_idle_timeout_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="`/api/ws`: seconds without a client frame before closing (4408)",
            extra={"env": "WS_IDLE_TIMEOUT"},
        ),
    ] = 120.0
    ws_send_queue_size: Annotated[
        PositiveInt,
        Meta(
            description="`/api/ws`: frames queued per socket before a slow client is closed (4429)"
        ),
    ] = 512
    ws_max_subscriptions: Annotated[
        PositiveInt, Meta(description="`/api/ws`: thread subscriptions per socket")
    ] = 100
    ws_max_frame_bytes: Annotated[
        PositiveInt, Meta(description="`/api/ws`: largest client frame (larger: a `limit` error)")
    ] = 4096
    ws_frame_rate: Annotated[
        PositiveFloat, Meta(description="`/api/ws`: client frames per second, sustained")
    ] = 20.0
    ws_frame_burst: Annotated[
        PositiveInt, Meta(description="`/api/ws`: client frames allowed in a burst")
    ] = 60
    ws_token_check_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="`/api/ws`: how often each process checks its sockets' tokens "
            "(revoked or expired: closed with 4401)"
        ),
    ] = 5.0
