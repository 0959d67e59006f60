"""Runner wake-ups between processes through PostgreSQL LISTEN/NOTIFY (no Redis).

One connection per process, outside the pools: it LISTENs on the deployment's wake-up
channel and sends this process's wake-ups with `pg_notify` (after the writing
transaction committed: a NOTIFY inside it would serialise every commit of the database).
The connection is checked every few seconds and replaced when it died; wake-ups lost
meanwhile cost latency only (the runner polls), and a reconnect wakes the runner once.
Litestar's asyncpg channels backend is not used: it opens a connection per publish and
never reconnects its listener (docs/architecture.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg
from sqlalchemy import make_url

from app.lib.background import BackgroundService
from app.orchestrator.scheduling import notify
from app.settings import Settings

logger = logging.getLogger(__name__)
RETRY_SECONDS = 1.0
CHECK_SECONDS = 5.0


def asyncpg_dsn(database_url: str) -> str:
    return make_url(database_url).set(drivername="postgresql").render_as_string(False)


class PgWakeups:
    def __init__(self, settings: Settings) -> None:
        self._dsn = asyncpg_dsn(settings.database_url)
        self.channel = f"{settings.channels_prefix}wake"
        self._outgoing: asyncio.Queue[str] = asyncio.Queue()
        self.connected = asyncio.Event()  # tests wait for it
        self._first = True
        self._service = BackgroundService(
            "pg-wakeups",
            self._connection,
            period=RETRY_SECONDS,
            logger=logger,
            failure="wake-up listener lost its connection; reconnecting",
            level=logging.WARNING,
            immediately=True,
        )

    async def start(self) -> None:
        self._service.start()
        notify.add_relay(self._outgoing.put_nowait)

    async def stop(self) -> None:
        notify.remove_relay(self._outgoing.put_nowait)
        await self._service.stop()

    async def _connection(self) -> None:
        """One connection, until it fails (then the next, `RETRY_SECONDS` later)."""
        try:
            await self._session(wake=not self._first)
        finally:
            self._first = False
            self.connected.clear()

    async def _session(self, wake: bool) -> None:
        """Listen and send on one connection until it fails."""
        conn: asyncpg.Connection = await asyncpg.connect(self._dsn, timeout=10)
        try:
            closed = asyncio.Event()
            conn.add_termination_listener(lambda _: closed.set())
            await conn.add_listener(self.channel, self._on_notification)
            self.connected.set()
            if wake:
                notify.wake_all()  # wake-ups sent while we were away are lost
            while not closed.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(CHECK_SECONDS):
                        payloads = [await self._outgoing.get()]
                        while not self._outgoing.empty():
                            payloads.append(self._outgoing.get_nowait())
                        await self._send(conn, payloads)
                        continue
                await conn.execute("SELECT 1", timeout=CHECK_SECONDS)  # a dead peer shows
        finally:
            with contextlib.suppress(Exception):
                await conn.close(timeout=2)

    async def _send(self, conn: asyncpg.Connection, payloads: list[str]) -> None:
        await conn.execute(
            "SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p",
            self.channel,
            payloads,
            timeout=CHECK_SECONDS,
        )

    def _on_notification(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        notify.receive(payload)
