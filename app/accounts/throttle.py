"""Failed-login throttling per account and per client address (429 with Retry-After).

Each login attempt first takes a slot in a fixed window (an atomic increment, so a burst
of parallel guesses cannot all slip past one read of the count); a successful login gives
the address's slot back and clears the account's count. Past the limit, a 429 answers
before the password is even checked. Counts live in Redis when `REDIS_URL` is set, so
every server process shares them, and in this process's memory otherwise.

Litestar's RateLimitMiddleware counts every request per client with a read-then-write on
its store, so it can neither key on the account in the body nor hold under a parallel
burst; hence this small counter.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from litestar.config.app import AppConfig
from litestar.datastructures import State
from litestar.exceptions import ServiceUnavailableException, TooManyRequestsException
from litestar.plugins import InitPlugin

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from app.settings import Settings


logger = logging.getLogger(__name__)
STATE_KEY = "login_throttle"


class WindowCounter(Protocol):
    async def hit(self, key: str, window_seconds: float) -> tuple[int, float]:
        """Count one attempt: the count in the key's window and seconds until it ends."""
        ...

    async def give_back(self, key: str) -> None: ...

    async def clear(self, key: str) -> None: ...

    async def close(self) -> None: ...


@dataclass
class MemoryCounter:
    """One process's counts; every operation is synchronous, so atomic on the loop."""

    windows: dict[str, tuple[int, float]] = field(default_factory=dict)
    max_keys: int = 100_000

    async def hit(self, key: str, window_seconds: float) -> tuple[int, float]:
        now = time.monotonic()
        count, ends = self.windows.get(key, (0, 0.0))
        if ends <= now:
            count, ends = 0, now + window_seconds
            if len(self.windows) >= self.max_keys:
                self._forget_ended(now)
        self.windows[key] = (count + 1, ends)
        return count + 1, ends - now

    async def give_back(self, key: str) -> None:
        if key in self.windows:
            count, ends = self.windows[key]
            self.windows[key] = (max(count - 1, 0), ends)

    async def clear(self, key: str) -> None:
        self.windows.pop(key, None)

    async def close(self) -> None:
        self.windows.clear()

    def _forget_ended(self, now: float) -> None:
        # Bounded memory under a flood of distinct addresses or emails.
        for key in [k for k, (_, ends) in self.windows.items() if ends <= now]:
            del self.windows[key]


@dataclass
class RedisCounter:
    """Counts shared by every process: INCR, and the window's expiry set on first hit."""

    redis: Redis

    async def hit(self, key: str, window_seconds: float) -> tuple[int, float]:
        try:
            async with self.redis.pipeline(transaction=True) as pipe:
                # SET NX starts the window with its expiry (INCR keeps it); any Redis version.
                pipe.set(key, 0, ex=math.ceil(window_seconds), nx=True)
                pipe.incr(key)
                pipe.ttl(key)
                _, count, ttl = await pipe.execute()
        except _redis_errors() as exc:
            # Without the shared counts no login can be checked: a 503, not a 500.
            logger.warning("login throttle: Redis unavailable: %s", exc)
            raise ServiceUnavailableException(
                "Login is unavailable for a moment; try again.", headers={"Retry-After": "5"}
            ) from exc
        return int(count), float(max(ttl, 1))

    async def give_back(self, key: str) -> None:
        # Never below zero, never creating a key without an expiry.
        await self._after_login(
            self.redis.eval(
                "if (tonumber(redis.call('GET', KEYS[1]) or '0') > 0) then "
                "return redis.call('DECR', KEYS[1]) end return 0",
                1,
                key,
            )
        )

    async def clear(self, key: str) -> None:
        await self._after_login(self.redis.delete(key))

    async def _after_login(self, command: Awaitable[Any]) -> None:
        # The password was right: a lost count must not turn the login into an error.
        try:
            await command
        except _redis_errors() as exc:
            logger.warning("login throttle: Redis unavailable: %s", exc)

    async def close(self) -> None:
        await self.redis.aclose()


def _redis_errors() -> type[Exception]:
    """Redis's error class, imported with the client: a process without Redis never
    imports the package (a good part of a second of every start)."""
    from redis.exceptions import RedisError

    return RedisError


def _digest(value: str) -> str:
    # Keys carry no email or address in clear (Redis may be shared or inspected).
    return hashlib.sha256(value.encode()).hexdigest()[:32]


@dataclass
class LoginThrottle:
    counter: WindowCounter
    max_per_account: int
    max_per_address: int
    window_seconds: float
    prefix: str = "tc:"

    def _keys(self, email: str, address: str) -> tuple[str, str]:
        return (
            f"{self.prefix}login:account:{_digest(email.strip().lower())}",
            f"{self.prefix}login:address:{_digest(address)}",
        )

    async def attempt(self, email: str, address: str) -> None:
        """Take a slot for one login attempt, or raise a 429 with Retry-After."""
        account_key, address_key = self._keys(email, address)
        address_count, address_left = await self.counter.hit(address_key, self.window_seconds)
        account_count, account_left = await self.counter.hit(account_key, self.window_seconds)
        refused = [
            left
            for count, limit, left in (
                (account_count, self.max_per_account, account_left),
                (address_count, self.max_per_address, address_left),
            )
            if count > limit
        ]
        if refused:
            raise TooManyRequestsException(
                detail="Too many failed logins; try again later.",
                headers={"Retry-After": str(math.ceil(max(refused)))},
            )

    async def succeeded(self, email: str, address: str) -> None:
        """A right password: the account starts afresh, the address gets its slot back."""
        account_key, address_key = self._keys(email, address)
        await self.counter.clear(account_key)
        await self.counter.give_back(address_key)


def build_login_throttle(settings: Settings) -> LoginThrottle:
    counter: WindowCounter
    if settings.redis_url:
        from redis.asyncio import Redis

        counter = RedisCounter(Redis.from_url(settings.redis_url))
    else:
        counter = MemoryCounter()
    return LoginThrottle(
        counter=counter,
        max_per_account=settings.login_max_failures_per_account,
        max_per_address=settings.login_max_failures_per_address,
        window_seconds=settings.login_failure_window_seconds,
        prefix=settings.channels_prefix,
    )


class LoginThrottlePlugin(InitPlugin):
    """Puts the app's LoginThrottle in its state and closes its counter on shutdown."""

    def __init__(self, settings: Settings) -> None:
        self.throttle = build_login_throttle(settings)

    def on_app_init(self, app_config: AppConfig) -> AppConfig:
        app_config.state[STATE_KEY] = self.throttle
        app_config.on_shutdown.append(self._close)
        return app_config

    async def _close(self) -> None:
        await self.throttle.counter.close()


def provide_login_throttle(state: State) -> LoginThrottle:
    return state[STATE_KEY]
