"""Bench load: websocket clients that time frames, and a writer at a fixed rate."""

from __future__ import annotations

import asyncio
import itertools
import statistics
import time
from dataclasses import dataclass, field
from uuid import UUID

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from app.db.models import ThreadMessage
from app.threads.writer import update_message


class _Head(msgspec.Struct):
    type: str
    thread_id: str | None = None
    seq: int | None = None
    last_seq: int | None = None


_decode_head = msgspec.json.Decoder(_Head).decode


@dataclass
class Step:
    """One measured rate: commit times by (thread, seq), and when clients received them."""

    commit_at: dict[tuple[str, int], float] = field(default_factory=dict)
    receipts: list[tuple[tuple[str, int], float]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    commits: int = 0
    write_seconds: float = 0.0
    server_cpu: float = 0.0
    clients_cpu: float = 0.0
    writer_cpu: float = 0.0
    machine_busy: float = 0.0

    def received(self, key: tuple[str, int], now: float) -> None:
        self.receipts.append((key, now))

    def join(self) -> None:
        self.latencies = [
            now - self.commit_at[key] for key, now in self.receipts if key in self.commit_at
        ]

    def percentile(self, q: float) -> float:
        if len(self.latencies) < 2:
            return float("nan")
        return statistics.quantiles(self.latencies, n=1000)[int(q * 1000) - 1] * 1000


class Clients:
    """Websocket clients, each subscribed to one thread; frames are timed into `step`."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.connections: list[ClientConnection] = []
        self.readers: list[asyncio.Task[None]] = []
        self.step = Step()

    async def open(self, thread_ids: list[UUID], count: int, *, timed: bool) -> None:
        gate = asyncio.Semaphore(100)
        threads = itertools.cycle(thread_ids)
        await asyncio.gather(*(self._open_one(next(threads), gate, timed) for _ in range(count)))

    async def _open_one(self, thread_id: UUID, gate: asyncio.Semaphore, timed: bool) -> None:
        async with gate:
            conn = await connect(
                self.url,
                additional_headers={"Authorization": f"Bearer {self.token}"},
                ping_interval=None,
                max_queue=None,
                compression=None,
            )
            await conn.send(
                msgspec.json.encode(
                    {"type": "subscribe", "thread_id": str(thread_id), "after_seq": 10**6}
                )
            )
            # after_seq far ahead gets `reset` with the thread's last_seq: subscribe from there
            head = _decode_head(await conn.recv())
            assert head.type == "reset", head
            await conn.send(
                msgspec.json.encode(
                    {"type": "subscribe", "thread_id": str(thread_id), "after_seq": head.last_seq}
                )
            )
            while _decode_head(await conn.recv()).type != "subscribed":
                pass
        self.connections.append(conn)
        if timed:
            self.readers.append(asyncio.create_task(self._read(conn)))

    async def _read(self, conn: ClientConnection) -> None:
        try:
            async for raw in conn:
                now = time.monotonic()
                head = _decode_head(raw)
                if head.type == "message" and head.thread_id and head.seq is not None:
                    self.step.received((head.thread_id, head.seq), now)
        except ConnectionClosed:
            pass

    async def close(self) -> None:
        for reader in self.readers:
            reader.cancel()
        await asyncio.gather(*(c.close() for c in self.connections), return_exceptions=True)
        self.connections.clear()
        self.readers.clear()


async def write_at_rate(
    factory: async_sessionmaker[AsyncSession],
    tool_messages: dict[UUID, UUID],
    rate: float,
    seconds: float,
    workers: int = 24,
) -> tuple[int, float]:
    """Tool-activity progress updates, one transaction each, on a fixed schedule."""
    total = int(rate * seconds)
    threads = list(tool_messages)
    counter = itertools.count()
    commits = 0
    loaded: dict[UUID, ThreadMessage] = {}
    start = time.perf_counter()

    async def worker() -> None:
        nonlocal commits
        while (index := next(counter)) < total:
            delay = start + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            thread_id = threads[index % len(threads)]
            async with factory() as session:
                # Like the runner, which holds the tool message it updates: no reload.
                held = loaded.get(thread_id)
                if held is None:
                    message = await session.get(ThreadMessage, tool_messages[thread_id])
                else:
                    message = await session.merge(held, load=False)
                assert message is not None and message.tool_activity is not None
                activity = {**message.tool_activity, "display_message": f"Step {index}",
                            "data": {"progress": index}}  # fmt: skip
                await update_message(session, message, tool_activity=activity)
                await session.commit()
                loaded[thread_id] = message
                commits += 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return commits, time.perf_counter() - start
