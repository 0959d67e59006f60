"""A phone: one websocket client that stays subscribed to a thread across hosts.

It applies `message` frames to its state (tests/realtime/support.py's ThreadState) and,
whenever its socket dies or cannot be opened, resumes on the next host with the last
`seq` it holds, as the iOS app does. It pings every second and gives a socket up after
two seconds without an answer, so a silent partition is noticed at once. Each frame's
`seq` must be above the last one applied: a frame seen twice (a duplicate push) or out
of order is recorded, and the tests assert there is none.
"""

# ruff: noqa: ASYNC109 - a wait bounded by the caller
from __future__ import annotations

import asyncio
import contextlib
import json
import time
from itertools import cycle
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from tests.realtime.support import ThreadState


class Phone:
    def __init__(self, thread_id: str, token: str, ws_urls: list[str]) -> None:
        self.thread_id, self.token, self.ws_urls = thread_id, token, ws_urls
        self.state = ThreadState()
        self.out_of_order: list[tuple[int, int]] = []  # (seq received, last applied)
        self.connections: list[str] = []  # the URL of every socket opened, in order
        self.changed = asyncio.Event()
        self._conn: ClientConnection | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Phone:
        self._task = asyncio.create_task(self._keep_connected())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    @property
    def host_url(self) -> str | None:
        """The URL of the socket open now (or last opened)."""
        return self.connections[-1] if self.connections else None

    async def resume(self) -> None:
        """Drop the socket; the phone resumes on the next host (a foregrounded app)."""
        if self._conn is not None:
            await self._conn.close()

    async def _keep_connected(self) -> None:
        for url in cycle(self.ws_urls):
            with contextlib.suppress(OSError, ConnectionClosed, InvalidHandshake, TimeoutError):
                await self._session(url)
            await asyncio.sleep(0.2)  # a reconnect backoff

    async def _session(self, url: str) -> None:
        headers = {"Authorization": f"Bearer {self.token}"}
        async with connect(
            url,
            additional_headers=headers,
            open_timeout=3,
            ping_interval=1,
            ping_timeout=2,
            close_timeout=0.5,  # a dead link answers no close frame either
        ) as conn:
            self._conn = conn
            self.connections.append(url)
            await conn.send(
                json.dumps(
                    {
                        "type": "subscribe",
                        "thread_id": self.thread_id,
                        "after_seq": self.state.last_seq,
                    }
                )
            )
            async for raw in conn:
                self._apply(json.loads(raw))

    def _apply(self, frame: dict[str, Any]) -> None:
        if frame.get("type") != "message":
            return
        if frame["seq"] <= self.state.last_seq:
            self.out_of_order.append((frame["seq"], self.state.last_seq))
            return
        self.state.apply(frame)
        self.changed.set()

    async def matches(self, fresh: dict[str, Any], timeout: float) -> bool:
        """Whether the state reaches `fresh` (a fetch) within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not self._equal(fresh):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))
        return True

    def _equal(self, fresh: dict[str, Any]) -> bool:
        return self.state.last_seq == fresh["last_seq"] and self.state.messages == fresh["messages"]
