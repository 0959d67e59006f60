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
from dataclasses import dataclass
from pathlib import Path

import httpx

from app.settings import PROJECT_ROOT
from bench.common import wait_ready
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
        "ACCESS_LOG": "false",  # uvicorn's --no-access-log, which the app's logging overrides
    }
    command = [sys.executable, "-m", "uvicorn", "bench.rest.server:create_bench_app", "--factory"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    command += ["--log-level", "warning"]
    return subprocess.Popen(command, cwd=PROJECT_ROOT, env=env)


def wrk(url: str, duration: int, connections: int, token: str | None) -> Result:
    command = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency"]
    if token:
        command += ["-H", f"Authorization: Bearer {token}"]
    out = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.MULTILINE).group(1)  # type: ignore[union-attr]
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if non_2xx:
        raise RuntimeError(f"{url}: {non_2xx.group(1)} error responses\n{out}")
    return Result(rps, p99)


def bench_dialect(dialect: str, duration: int, connections: int) -> dict[str, Result]:
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
            wait_ready(f"{base}/api/health")
            page_url = f"{base}/api/threads/{thread_id}/messages"
            page = httpx.get(page_url, headers={"Authorization": f"Bearer {TOKEN}"}).json()
            assert len(page["items"]) == 50, page
            # Warm both paths (connection pools, caches) before measuring.
            wrk(f"{base}/bench/bare", 1, connections, None)
            wrk(page_url, 1, connections, TOKEN)
            return {
                "bare": wrk(f"{base}/bench/bare", duration, connections, None),
                # Context: one trivial query through the request session, and GET /api/me
                # (authentication alone), the floors below the page's cost.
                "select1": wrk(f"{base}/bench/select1", duration, connections, None),
                "me": wrk(f"{base}/api/me", duration, connections, TOKEN),
                "latest": wrk(page_url, duration, connections, TOKEN),
            }
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
    columns = [("bare", "bare"), ("select1", "SELECT 1"), ("me", "/api/me"), ("latest", "page")]
    print(
        f"{'dialect':<11}", *(f"{label + ' req/s':>15} {'p99':>8}" for _, label in columns), "ratio"
    )
    for dialect in args.dialects.split(","):
        results = bench_dialect(dialect.strip(), args.duration, args.connections)
        cells = [f"{results[key].rps:>15.0f} {results[key].p99:>8}" for key, _ in columns]
        ratio = results["latest"].rps / results["bare"].rps
        print(f"{dialect:<11}", *cells, f"{ratio:.1%}", flush=True)


if __name__ == "__main__":
    main()
