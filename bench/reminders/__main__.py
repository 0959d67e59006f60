"""Reminders due in the same minute: `uv run python -m bench.reminders [--reminders 10000]
[--users 1000] [--dialects sqlite,postgresql]`

Per dialect: a fresh database with `--users` users, one device each, and `--reminders`
tasks spread over them; the fake APNs of the tests in a process of its own
(`apns.py`); the app under uvicorn with the loop-lag probe of `bench.looplag`
(`bench/looplag/server.py`). First the baseline: the probe's lags for a few seconds with
the scheduler and the push sender running and nothing due. Then every reminder is made
due at one instant a few seconds ahead (the worst minute: all at its first second), and
the bench waits until every delivery is recorded `sent` (APNs answered 200). Reported:
how long after the due instant the first and the last push went out, pushes per second,
the loop lag (p50, p99, max) at rest and during the burst, and what the fake APNs
accepted. Goal (issue 45): all pushed within the minute, burst lag p99 <= 25 ms.

The server's `REMINDER_POLL_SECONDS` is 1 s: the bench moves the reminders from another
process, which the server notices only by its poll (a change made through the server
wakes its scheduler at once).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
from sqlalchemy.pool import NullPool

from app.lib.time import utcnow
from bench.common import freeze_heap, start_url_process
from bench.reminders.seed import bring_due, seed, sent_so_far
from bench.rest.__main__ import free_port
from bench.turn.__main__ import pct
from bench.turn.server import server_env, servers
from bench.turn.setup import fresh_database
from tests.push.conftest import BUNDLE

IDLE_SECONDS = 5.0  # the baseline's length
LEAD_SECONDS = 3.0  # the due instant, this far ahead of the moment the rows are moved
WINDOW_SECONDS = 120.0  # the bench gives up waiting after this (the goal is 60)
HEADER = (
    "dialect     reminders  users  first s  last s  pushes/s  "
    "idle lag p50/p99/max ms  burst lag p50/p99/max ms  accepted  goal"
)


@dataclass
class Figures:
    sent: int
    first: float  # seconds after the due instant
    last: float
    idle: list[float]  # loop lags, ms
    burst: list[float]


def lags(values: list[float]) -> str:
    top = max(values) if values else float("nan")
    return f"{pct(values, 0.5) / 1000:.2f}/{pct(values, 0.99) / 1000:.2f}/{top:.1f}"


async def take_lags(http: httpx.AsyncClient) -> list[float]:
    return (await http.get("/bench/loop-lag")).json()["lags_ms"]


async def measure(base: str, url: str, reminders: int) -> Figures:
    engine = create_async_engine(url, poolclass=NullPool)
    sessions = async_sessionmaker(engine)
    try:
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await take_lags(http)  # start-up's lags: not measured
            await asyncio.sleep(IDLE_SECONDS)
            idle = await take_lags(http)
            due = utcnow() + timedelta(seconds=LEAD_SECONDS)
            await bring_due(url, due)
            await asyncio.sleep((due - utcnow()).total_seconds())
            await take_lags(http)  # the lead's: the burst's lags start at the due instant
            first: datetime | None = None
            while utcnow() < due + timedelta(seconds=WINDOW_SECONDS):
                async with sessions() as session:
                    sent, last = await sent_so_far(session)
                if sent and first is None:
                    first = last
                if sent >= reminders:
                    break
                await asyncio.sleep(0.25)  # polling the server's commits
            burst = await take_lags(http)
    finally:
        await engine.dispose()

    def after(at: datetime | None) -> float:
        return (at - due).total_seconds() if at else float("nan")

    return Figures(sent, after(first), after(last), idle, burst)


def row(dialect: str, args: argparse.Namespace, figures: Figures, accepted: dict) -> str:
    spread = max(figures.last, 1e-3)
    met = (
        figures.sent >= args.reminders and figures.last <= 60 and pct(figures.burst, 0.99) <= 25_000
    )
    return (
        f"{dialect:<11} {args.reminders:>9} {args.users:>6} {figures.first:>8.2f} "
        f"{figures.last:>7.2f} {figures.sent / spread:>9.0f}  {lags(figures.idle):>23}  "
        f"{lags(figures.burst):>24}  {accepted['reminders']:>8}  {'met' if met else 'MISSED'}"
        + (f" ({accepted['rejected']} refused)" if accepted["rejected"] else "")
    )


def bench(args: argparse.Namespace, dialect: str) -> None:
    with fresh_database(dialect) as url:
        asyncio.run(seed(url, args.reminders, min(args.users, args.reminders)))
        apns, first_line = start_url_process("bench.reminders.apns")
        try:
            env = server_env(
                url,
                "http://127.0.0.1:9",  # no model: nothing here asks one
                **json.loads(first_line),
                APNS_TOPIC=BUNDLE,
                REMINDER_POLL_SECONDS="1",
                MCP_DEMO_SERVER="0",
                LOG_LEVEL="warning",
            )
            figures = asyncio.run(_serve_and_measure(env, url, args.reminders))
        finally:
            accepted = _stop(apns)
    print(row(dialect, args, figures, accepted), flush=True)


async def _serve_and_measure(env: dict[str, str], url: str, reminders: int) -> Figures:
    async with servers(env, [free_port()], factory="bench.looplag.server:create") as [server]:
        freeze_heap()
        return await measure(server.base, url, reminders)


def _stop(apns: subprocess.Popen[str]) -> dict:
    assert apns.stdin is not None and apns.stdout is not None
    apns.stdin.close()
    counts = json.loads(apns.stdout.readline())
    apns.wait(timeout=30)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reminders", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=1_000, help="one device each")
    parser.add_argument("--dialects", default="sqlite,postgresql")
    args = parser.parse_args()
    print(HEADER, flush=True)
    for dialect in args.dialects.split(","):
        bench(args, dialect.strip())


if __name__ == "__main__":
    main()
