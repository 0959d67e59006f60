"""Settings of push notifications (APNs): push is off unless the key, key id, team and
topic are set; the sender's retries, presence, Live Activities."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from msgspec import Meta

from app.settings.base import NonNegativeFloat, PositiveFloat, PositiveInt

ApnsEnvironment = Literal["sandbox", "production"]


@dataclass(frozen=True)
class PushSettings:
    apns_key_file: Annotated[
        str | None, Meta(description="APNs auth key (`.p8`, ES256) file; unset: push is off")
    ] = None
    apns_key_id: Annotated[str | None, Meta(description="the APNs auth key's id (JWT `kid`)")] = (
        None
    )
    apns_team_id: Annotated[str | None, Meta(description="Apple developer team id (JWT `iss`)")] = (
        None
    )
    apns_topic: Annotated[
        str | None,
        Meta(description="the app's bundle id: topic of test pushes and Live Activities"),
    ] = None
    apns_environment: Annotated[
        ApnsEnvironment,
        Meta(description="APNs environment of Live Activity tokens (devices say their own)"),
    ] = "production"
    apns_base_url: Annotated[
        str | None,
        Meta(description="send every push to this URL, whatever its environment (tests)"),
    ] = None
    apns_sandbox_base_url: Annotated[
        str, Meta(description="APNs endpoint of sandbox tokens (debug builds)")
    ] = "https://api.sandbox.push.apple.com"
    apns_production_base_url: Annotated[
        str, Meta(description="APNs endpoint of production tokens")
    ] = "https://api.push.apple.com"
    apns_ca_file: Annotated[
        str | None, Meta(description="CA bundle that verifies the APNs server (tests)")
    ] = None
    push_retry_base_seconds: Annotated[
        PositiveFloat,
        Meta(description="first backoff of a push answered 429/5xx, doubled each time"),
    ] = 2.0
    push_max_attempts: Annotated[
        PositiveInt, Meta(description="attempts of one push before it is given up")
    ] = 8
    push_poll_seconds: Annotated[
        PositiveFloat, Meta(description="the push sender's poll of its outbox when not woken")
    ] = 5.0
    presence_ttl_seconds: Annotated[
        PositiveFloat,
        Meta(description="a process's record of its sockets' threads lives this long unrenewed"),
    ] = 30.0
    live_activity_update_seconds: Annotated[
        PositiveFloat, Meta(description="at most one Live Activity update per this many seconds")
    ] = 5.0
    live_activity_dismiss_seconds: Annotated[
        NonNegativeFloat,
        Meta(description="an ended Live Activity stays on the lock screen this long"),
    ] = 900.0

    @property
    def push_enabled(self) -> bool:
        """APNs is configured: key file, key id, team id and topic are all set."""
        return all((self.apns_key_file, self.apns_key_id, self.apns_team_id, self.apns_topic))
