"""Close sockets whose token stopped being valid (revoked or expired) after they connected.

A token is checked once, when its socket connects; a socket can live for hours. Each
process checks the distinct tokens of its open sockets every `WS_TOKEN_CHECK_SECONDS`
in one query (not one per socket). A revocation (`DELETE /api/auth/token`) is also
announced on the channels' control channel, which closes the token's sockets in every
process at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import ApiToken
from app.lib.background import BackgroundService
from app.lib.time import utcnow

logger = logging.getLogger(__name__)
TOKEN_REVOKED = "token_revoked"  # the app event the revoke endpoint emits (a token digest)
CHECK_BATCH = 1000


async def live_digests(
    session_maker: async_sessionmaker[AsyncSession], digests: list[str]
) -> set[str]:
    """Those of `digests` whose token is neither revoked nor expired."""
    async with session_maker.begin() as session:
        rows = await session.scalars(
            select(ApiToken.token_hash).where(
                ApiToken.token_hash.in_(digests),
                ApiToken.revoked_at.is_(None),
                ApiToken.expires_at > utcnow(),
            )
        )
        return set(rows)


class TokenWatch:
    """The open sockets of this process by token digest, and their periodic check."""

    def __init__(
        self, session_maker: async_sessionmaker[AsyncSession], interval_seconds: float
    ) -> None:
        self._session_maker = session_maker
        self._interval = interval_seconds
        self._closers: dict[str, set[Callable[[], None]]] = {}

    @contextmanager
    def watch(self, digest: str, close: Callable[[], None]) -> Iterator[None]:
        """While inside, `close()` is called once the token is found revoked or expired."""
        closers = self._closers.setdefault(digest, set())
        closers.add(close)
        try:
            yield
        finally:
            closers.discard(close)
            if not closers:
                self._closers.pop(digest, None)

    def close_sockets(self, digest: str) -> None:
        for close in list(self._closers.get(digest, ())):
            close()

    async def check(self) -> None:
        digests = list(self._closers)
        # One query per interval; more only past CHECK_BATCH distinct tokens (drivers
        # cap the bound parameters of one statement).
        for start in range(0, len(digests), CHECK_BATCH):
            batch = digests[start : start + CHECK_BATCH]
            live = await live_digests(self._session_maker, batch)
            for digest in batch:
                if digest not in live:
                    self.close_sockets(digest)

    def service(self) -> BackgroundService:
        """The periodic check; the database unreachable keeps the sockets, for a retry later."""
        return BackgroundService(
            "socket token check",
            self._check_job,
            period=self._interval,
            logger=logger,
            failure="checking the tokens of open sockets failed",
        )

    async def _check_job(self) -> None:
        await self.check()
