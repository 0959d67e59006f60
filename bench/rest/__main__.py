"""REST benchmark: the latest page of a 50-message thread vs a bare JSON endpoint.

`uv run python -m bench.rest [--duration 5] [--connections 32] [--dialects sqlite,postgresql]`

Per dialect: a fresh migrated database, seeded; the real app under uvicorn (one worker)
with a bare endpoint mounted; wrk (one thread) on the same machine measures both in the
same run. Prints requests/s, p99 latency and the ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from app.settings import PROJECT_ROOT
from bench.rest.seed import TOKEN, seed
from tests.support.databases import (
    create_postgres_database,
    drop_postgres_database,
    migrate,
    sqlite_url,
)


@dataclass
class Result:
    rps: float
    p99: str


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(database_url: str, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "RUNNER_ENABLED": "0",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
    command = [sys.executable, "-m", "uvicorn", "bench.rest.server:create_bench_app", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    command += ["--log-level", "warning"]
    return subprocess.Popen(command, cwd=PROJECT_ROOT, env=env)


def wait_ready(base: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("server did not become ready")


def wrk(url: str, duration: int, connections: int, token: str | None) -> Result:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency"]
    if token:
        command += ["-H", f"Authorization: Bearer {token}"]
    out = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"99%\s+(\S+)", out).group(1)  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non_2xx:
        raise RuntimeError(f"{url}: {non_2xx.group(1)} error responses\n{out}")
    return Result(rps, p99)


def bench_dialect(dialect: str, duration: int, connections: int) -> tuple[Result, Result, Result]:
    cleanup = None
    tmp = None
    if dialect == "sqlite":
        tmp = tempfile.mkdtemp(prefix="bench-")
        url = sqlite_url(Path(tmp))
    else:
        url, name = create_postgres_database()
        cleanup = name
    try:
        migrate(url)
        thread_id = asyncio.run(seed(url))
        port = free_port()
        server = start_server(url, port)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_ready(base)
            page_url = f"{base}/api/threads/{thread_id}/messages"
            page = httpx.get(page_url, headers={"Authorization": f"Bearer {TOKEN}"}).json()
            assert len(page["items"]) == 50, page
            # Warm both paths (connection pools, caches) before measuring.
            wrk(f"{base}/bench/bare", 1, connections, None)
            wrk(page_url, 1, connections, TOKEN)
            bare = wrk(f"{base}/bench/bare", duration, connections, None)
            # GET /api/me is authentication alone (one indexed query): the floor any
            # authenticated endpoint pays, for context.
            me = wrk(f"{base}/api/me", duration, connections, TOKEN)
            latest = wrk(page_url, duration, connections, TOKEN)
            return bare, me, latest
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        if cleanup:
            drop_postgres_database(cleanup)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--dialects", default="sqlite,postgresql")
    args = parser.parse_args()
    if not shutil.which("wrk"):
        sys.exit("wrk is required (apt-get install wrk)")
    header = ("dialect", "bare req/s", "p99", "/api/me req/s", "p99", "latest page req/s")
    print("{:<11} {:>11} {:>8} {:>14} {:>8} {:>18}".format(*header), "p99".rjust(8), "ratio")
    for dialect in args.dialects.split(","):
        bare, me, latest = bench_dialect(dialect.strip(), args.duration, args.connections)
        print(
            f"{dialect:<11} {bare.rps:>11.0f} {bare.p99:>8} {me.rps:>14.0f} {me.p99:>8} "
            f"{latest.rps:>18.0f} {latest.p99:>8} {latest.rps / bare.rps:>6.1%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
