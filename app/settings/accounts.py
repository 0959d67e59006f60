"""Settings of accounts and their security: API tokens, login throttling, the proxies
trusted to name the client."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.lib.client_address import Network, parse_networks
from app.settings.base import NonNegativeFloat, PositiveFloat, PositiveInt, SettingsError


@dataclass(frozen=True)
class AccountSettings:
    token_ttl_days: Annotated[PositiveInt, Meta(description="lifetime of issued API tokens")] = 30
    auth_cache_seconds: Annotated[
        NonNegativeFloat,
        Meta(
            description="how long a process reuses a bearer token's lookup (0: off); "
            "a revocation through the API applies at once, one made in the database within this"
        ),
    ] = 5.0
    # Login throttling (app/accounts/throttle.py): failed logins in one window before a 429.
    login_max_failures_per_account: Annotated[
        PositiveInt, Meta(description="failed logins of one account per window before a 429")
    ] = 10
    login_max_failures_per_address: Annotated[
        PositiveInt, Meta(description="failed logins from one client address per window")
    ] = 50
    login_failure_window_seconds: Annotated[
        PositiveFloat, Meta(description="the login throttling window")
    ] = 900.0
    trusted_proxies: Annotated[
        tuple[str, ...],
        Meta(
            description="addresses or CIDR ranges of reverse proxies whose `X-Forwarded-For` "
            "names the client (login throttling per address); from any other peer it is ignored"
        ),
    ] = ()

    # The one check across a value: Settings inherits it (the only `__post_init__` of the
    # groups; a second one would have to call this).
    def __post_init__(self) -> None:
        try:
            parse_networks(self.trusted_proxies)
        except ValueError as error:
            raise SettingsError(f"Invalid setting TRUSTED_PROXIES: {error}") from None

    @property
    def trusted_networks(self) -> tuple[Network, ...]:
        return parse_networks(self.trusted_proxies)
