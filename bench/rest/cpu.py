"""CPU per request of the REST bench's endpoints, in-process (robust on a busy machine).

`uv run python -m bench.rest.cpu [--requests 2000] [--dialect sqlite] [--profile out.prof]`

The app of bench/rest/server.py on a fresh seeded database, driven through ASGI directly
(no sockets), one request at a time: the process CPU time per request, per endpoint.
`--profile` writes a cProfile of the page requests.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import os
import tempfile
import time
from pathlib import Path

import httpx

from bench.rest.seed import TOKEN, seed
from tests.support.databases import (
    create_postgres_database,
    drop_postgres_database,
    migrate,
    sqlite_url,
)


async def run(url: str, requests: int, profile: str | None) -> None:
    os.environ.update(DATABASE_URL=url, RUNNER_ENABLED="0")
    from bench.rest.server import create_bench_app

    # the client's line per request would be measured with the server: it shares the process
    logging.getLogger("httpx").setLevel(logging.WARNING)

    thread_id = await seed(url)
    app = create_bench_app()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    paths = {
        "bare": ("/bench/bare", {}),
        "select1": ("/bench/select1", {}),
        "me": ("/api/me", auth),
        "page": (f"/api/threads/{thread_id}/messages", auth),
    }
    async with (
        app.lifespan(),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://b") as http,
    ):
        for name, (path, headers) in paths.items():
            for _ in range(200):  # warm-up
                assert (await http.get(path, headers=headers)).status_code == 200
            profiler = (
                cProfile.Profile()
                if profile and name == os.environ.get("BENCH_PROFILE_PATH", "page")
                else None
            )
            if profiler:
                profiler.enable()
            started = time.process_time()
            for _ in range(requests):
                await http.get(path, headers=headers)
            cpu = time.process_time() - started
            if profiler:
                profiler.disable()
                profiler.dump_stats(profile)
            print(f"{name:<8} {1e6 * cpu / requests:8.0f} µs CPU per request", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--dialect", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--profile")
    args = parser.parse_args()
    name = None
    if args.dialect == "sqlite":
        url = sqlite_url(Path(tempfile.mkdtemp()))
    else:
        url, name = create_postgres_database()
    try:
        migrate(url)
        asyncio.run(run(url, args.requests, args.profile))
    finally:
        if name:
            drop_postgres_database(name)


if __name__ == "__main__":
    main()
