"""Reading the current branch of a long thread vs reading it as before branches.

`uv run python -m bench.branches [--messages 5000] [--requests 500] [--fork-every 50]
[--dialect sqlite|postgresql]` (one dialect a process: the app's settings are read once)

Per dialect: a fresh migrated database with two threads of `--messages` messages on the
branch shown (bench/branches/seed.py): `linear` (no siblings) and `branched` (an older
version beside every `--fork-every`-th message). The app (bench/branches/server.py: with
the pre-branches read by position as a baseline) is driven in-process through ASGI, one
request at a time (robust on a busy machine, as bench.rest.cpu): process CPU time and the
median wall time per request, for
- `latest`: `GET messages` as a phone polls it (its pre-encoded page, cache hit),
- `latest (query)`: the same with the page cache emptied before each request,
- `deep`: `GET messages?before_position=` a page about 100 messages from the start,
each on both threads, and `by position` (the baseline) on the linear thread.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx

from bench.branches.seed import TOKEN, seed
from bench.common import freeze_heap
from tests.support.databases import (
    create_postgres_database,
    drop_postgres_database,
    migrate,
    sqlite_url,
)

DEEP_INDEX = 100  # the deep page ends just before the branch's 100th message


async def _deep_position(http: httpx.AsyncClient, thread_id: UUID, messages: int) -> int:
    """The position of the branch's DEEP_INDEX-th message, found by paging back (which
    checks the branch shown has all its messages)."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    url = f"/api/threads/{thread_id}/messages"
    items: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 100}
    while True:
        page = (await http.get(url, params=params, headers=auth)).json()
        assert "items" in page, page
        items = page["items"] + items
        if not page["has_more"]:
            break
        params["before_position"] = page["items"][0]["position"]
    assert len(items) == messages, len(items)
    return items[min(DEEP_INDEX, len(items) - 1)]["position"]


async def _measure(
    http: httpx.AsyncClient, url: str, params: dict[str, Any], requests: int, fresh: bool
) -> tuple[float, float]:
    """µs of process CPU per request, and the median wall time (µs)."""
    from app.threads.message_reads import latest_pages

    auth = {"Authorization": f"Bearer {TOKEN}"}
    for _ in range(max(20, requests // 10)):  # warm-up
        assert (await http.get(url, params=params, headers=auth)).status_code == 200
    walls = []
    cpu = 0.0
    for _ in range(requests):
        if fresh:
            latest_pages.clear()
        started_cpu, started = time.process_time(), time.perf_counter()
        response = await http.get(url, params=params, headers=auth)
        walls.append(time.perf_counter() - started)
        cpu += time.process_time() - started_cpu
        assert response.status_code == 200, response.text
    return 1e6 * cpu / requests, 1e6 * statistics.median(walls)


async def run(url: str, messages: int, requests: int, fork_every: int, dialect: str) -> None:
    os.environ.update(DATABASE_URL=url, RUNNER_ENABLED="0", ACCESS_LOG="false")
    from bench.branches.server import create_bench_app

    logging.getLogger("httpx").setLevel(logging.WARNING)
    threads = await seed(url, messages, fork_every)
    app = create_bench_app()
    transport = httpx.ASGITransport(app=app)
    async with app.lifespan(), httpx.AsyncClient(transport=transport, base_url="http://b") as http:
        deep = {name: await _deep_position(http, tid, messages) for name, tid in threads.items()}
        cases = []
        for name, tid in threads.items():
            page = f"/api/threads/{tid}/messages"
            cases += [
                (f"{name} latest", page, {}, False),
                (f"{name} latest (query)", page, {}, True),
                (f"{name} deep", page, {"before_position": deep[name]}, False),
            ]
        by_position = f"/bench/by-position/{threads['linear']}"
        cases += [
            ("by position latest", by_position, {}, False),
            ("by position deep", by_position, {"before_position": deep["linear"]}, False),
        ]
        freeze_heap()
        for label, path, params, fresh in cases:
            cpu, wall = await _measure(http, path, params, requests, fresh)
            print(f"{dialect:<11} {label:<24} {cpu:8.0f} µs CPU {wall:8.0f} µs p50", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--fork-every", type=int, default=50)
    parser.add_argument("--dialect", choices=["sqlite", "postgresql"], default="sqlite")
    args = parser.parse_args()
    name = None
    if args.dialect == "sqlite":
        url = sqlite_url(Path(tempfile.mkdtemp(prefix="bench-")))
    else:
        url, name = create_postgres_database()
    try:
        migrate(url)
        asyncio.run(run(url, args.messages, args.requests, args.fork_every, args.dialect))
    finally:
        if name:
            drop_postgres_database(name)


if __name__ == "__main__":
    main()
