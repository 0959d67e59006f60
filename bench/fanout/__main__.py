"""Fan-out benchmark: `uv run python -m bench.fanout` (loopback only, about 1-2 minutes).

One server process (uvicorn, the app's defaults) with REDIS_URL set, on a scratch
PostgreSQL database. A writer process (bench/fanout/writer.py) writes tool-activity
updates through app/threads/writer.py and publishes them after commit through Redis, as a
second server process would; this process's websocket clients time each frame from
commit to receipt (CLOCK_MONOTONIC is shared by processes).

Figures: RSS per idle socket (2,000 sockets, each subscribed to a thread), then with
1,000 clients over 100 threads: commit-to-receive latency p50/p99 at 200 updates/s, and
the highest rate (of a ramp) that the writer sustains with every frame delivered and
p99 under 250 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid

from sqlalchemy.ext.asyncio import async_sessionmaker

from app.db.config import build_sqlalchemy_config
from app.settings import Settings
from bench.fanout.load import Clients, Step
from bench.fanout.setup import (
    REDIS_URL,
    ServerProcess,
    cpu_seconds,
    create_database,
    drop_database,
    raise_fd_limit,
    seed,
    system_busy,
)

THREADS = 100
RAMP = [400, 700, 1000, 1400, 2000]
SUSTAINED_P99_MS = 250.0


async def idle_rss(server: ServerProcess, clients: Clients, thread_ids: list, count: int) -> float:
    await clients.open(thread_ids, 100, timed=False)  # warm-up: first-use allocations
    await clients.close()
    before = server.rss_kib()
    await clients.open(thread_ids, count, timed=False)
    after = server.rss_kib()
    await clients.close()
    return (after - before) * 1024 / count


class WriterProcess:
    """bench/fanout/writer.py: commands on stdin, commit stamps on stdout."""

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.step = Step()
        self._done: asyncio.Queue[tuple[int, float]] = asyncio.Queue()

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bench.fanout.writer", *self.args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=2**20,
        )  # fmt: skip
        assert self.process.stdout is not None
        assert (await self.process.stdout.readline()).strip() == b"ready"
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for line in self.process.stdout:
            kind, *fields = line.split()
            if kind == b"c":
                self.step.commit_at[(fields[0].decode(), int(fields[1]))] = float(fields[2])
            elif kind == b"done":
                self._done.put_nowait((int(fields[0]), float(fields[1])))

    async def write(self, step: Step, rate: float, seconds: float) -> tuple[int, float]:
        assert self.process.stdin is not None
        self.step = step
        self.process.stdin.write(f"{rate} {seconds}\n".encode())
        return await self._done.get()

    async def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        await self.process.wait()
        self._reader.cancel()


async def measure(
    server: ServerProcess,
    writers: list[WriterProcess],
    clients: Clients,
    rate: float,
    seconds: float,
) -> Step:
    step = clients.step = Step()
    server_cpu, own_cpu = server.cpu_seconds(), time.process_time()
    writer_cpu = sum(cpu_seconds(w.process.pid) for w in writers)
    busy, total = system_busy()
    done = await asyncio.gather(*(w.write(step, rate / len(writers), seconds) for w in writers))
    step.commits = sum(commits for commits, _ in done)
    step.write_seconds = max(elapsed for _, elapsed in done)
    busy_after, total_after = system_busy()
    step.machine_busy = (busy_after - busy) / (total_after - total)
    step.server_cpu = (server.cpu_seconds() - server_cpu) / step.write_seconds
    step.clients_cpu = (time.process_time() - own_cpu) / step.write_seconds
    step.writer_cpu = (
        sum(cpu_seconds(w.process.pid) for w in writers) - writer_cpu
    ) / step.write_seconds
    expected = step.commits * (len(clients.connections) // THREADS)
    deadline = time.perf_counter() + 3
    while len(step.receipts) < expected and time.perf_counter() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)  # a bench polling its counters for the last frames
    step.join()
    return step


def report(rate: float, step: Step, subscribers: int) -> bool:
    expected = step.commits * subscribers
    delivered = len(step.latencies) / expected if expected else 0.0
    achieved = step.commits / step.write_seconds
    p50, p99 = step.percentile(0.5), step.percentile(0.99)
    ok = achieved >= 0.95 * rate and delivered >= 0.999 and p99 <= SUSTAINED_P99_MS
    print(
        f"  target {rate:6.0f}/s  written {achieved:7.1f}/s  delivered {delivered:7.2%}"
        f"  p50 {p50:6.1f} ms  p99 {p99:6.1f} ms  cpu server {step.server_cpu:4.0%}"
        f" clients {step.clients_cpu:4.0%} writer {step.writer_cpu:4.0%}"
        f" machine {step.machine_busy:4.0%}  {'ok' if ok else 'NOT sustained'}",
        flush=True,
    )
    return ok


async def main(args: argparse.Namespace) -> None:
    fd_limit = raise_fd_limit()
    url, name = await create_database()
    prefix = f"bench-{uuid.uuid4().hex[:8]}:"
    settings = Settings(
        database_url=url, redis_url=REDIS_URL, channels_prefix=prefix, runner_enabled=False
    )
    db_config = build_sqlalchemy_config(settings)
    engine = db_config.get_engine()
    factory = async_sessionmaker(engine, expire_on_commit=False)
    env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": REDIS_URL, "CHANNELS_PREFIX": prefix,
           "RUNNER_ENABLED": "0", "WS_IDLE_TIMEOUT": "600"}  # fmt: skip
    server = ServerProcess(env)
    try:
        data = await seed(factory, THREADS)
        await server.start()
        clients = Clients(f"ws://127.0.0.1:{server.port}/api/ws", data.token)
        print(f"fd limit {fd_limit}; server pid {server.pid}; database {name}", flush=True)

        per_socket = await idle_rss(server, clients, data.thread_ids, args.idle)
        print(f"idle sockets: {args.idle}, server RSS per idle socket {per_socket / 1024:.1f} KiB")

        tools = list(data.tool_message_ids.items())
        writers = [
            WriterProcess(
                [
                    url,
                    REDIS_URL,
                    prefix,
                    json.dumps({str(k): str(v) for k, v in tools[i :: args.writers]}),
                ]
            )
            for i in range(args.writers)
        ]
        await asyncio.gather(*(w.start() for w in writers))
        try:
            await clients.open(data.thread_ids, args.clients, timed=True)
            subscribers = args.clients // THREADS
            print(f"fan-out: {args.clients} clients over {THREADS} threads ({subscribers} each)")
            await measure(server, writers, clients, 100, 2)  # warm-up
            step = await measure(server, writers, clients, 200, 10)
            best = 200 if report(200, step, subscribers) else 0
            for rate in RAMP:
                step = await measure(server, writers, clients, rate, 5)
                if not report(rate, step, subscribers):
                    break
                best = rate
            print(f"highest sustained rate: {best} updates/s "
                  f"({best * subscribers} frames/s delivered)")  # fmt: skip
            await clients.close()
        finally:
            await asyncio.gather(*(w.stop() for w in writers))
    finally:
        await server.stop()
        await engine.dispose()
        await drop_database(name)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--idle", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=1, help="writer processes")
    asyncio.run(main(parser.parse_args()))
