"""Concurrent uploads: `uv run python -m bench.uploads [--dialects sqlite,postgresql]
[--uploads 50] [--megabytes 10] [--kinds bare,document,photo]`

Per dialect and kind, a fresh server (`bench/uploads/server.py`: the app under uvicorn
with the loop-lag probe of `bench.looplag`, a fresh database, a user of
`bench.turn.setup` with no quota, local storage in a temporary directory), one upload of
the kind to warm it, then `--uploads` uploads at once, each on its own connection:
- bare: the photo to `POST /bench/upload-bare`, which only parses the multipart body into
  a spooled temporary file (the baseline: what the framework costs);
- document: a scanned PDF of `--megabytes` (4 pages) to `POST /api/attachments`;
- photo: a 4000×3000 JPEG of `--megabytes` to `POST /api/attachments` (cleaned,
  re-encoded, a model copy, a thumbnail, a BlurHash).
Printed per row: wall time and throughput (MB sent / wall time), per-upload latency
p50/p99, the server's RSS (VmRSS, sampled every 50 ms) before, at its peak and 1 s
after, and the probe's loop lag p50/p99/max during the uploads.
Goal (issue 42): RSS growth (peak - before) <= 100 MB, lag p99 <= 25 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

import httpx

from bench.common import freeze_heap
from bench.rest.__main__ import free_port
from bench.turn.__main__ import pct
from bench.turn.server import ServerProcess, server_env, servers
from bench.turn.setup import TOKEN, database
from bench.uploads import samples

KINDS = {  # kind: (path, file name, content type)
    "bare": ("/bench/upload-bare", "photo.jpg", "image/jpeg"),
    "document": ("/api/attachments", "scan.pdf", "application/pdf"),
    "photo": ("/api/attachments", "photo.jpg", "image/jpeg"),
}
MB = 1024 * 1024
SAMPLE_SECONDS = 0.05
SETTLE_SECONDS = 1.0


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class RssSampler:
    """The process's RSS every `SAMPLE_SECONDS` on a thread of ours: its peak."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak = pid, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            self.stop.wait(SAMPLE_SECONDS)

    def __enter__(self) -> RssSampler:
        self.peak = rss_bytes(self.pid)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


@dataclass
class Result:
    wall: float
    latencies: list[float]
    rss_before: int
    rss_peak: int
    rss_after: int
    lags_ms: list[float]
    failed: int


async def upload_once(base: str, kind: str, body: bytes) -> float:
    """One upload on a connection of its own; its latency in seconds."""
    path, name, content_type = KINDS[kind]
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=base, timeout=600) as http:
        started = time.perf_counter()
        response = await http.post(
            path, files={"file": (name, body, content_type)}, headers=headers
        )
        took = time.perf_counter() - started
    if response.status_code != 201:
        raise RuntimeError(f"{kind}: {response.status_code} {response.text[:200]}")
    return took


async def run_kind(server: ServerProcess, kind: str, body: bytes, uploads: int) -> Result:
    await upload_once(server.base, kind, body)  # warm: imports, pools, first allocations
    await asyncio.sleep(SETTLE_SECONDS)
    pid = server.process.pid
    async with httpx.AsyncClient(base_url=server.base, timeout=30) as http:
        await http.get("/bench/loop-lag")  # start afresh
        with RssSampler(pid) as sampler:
            before = sampler.peak
            started = time.perf_counter()
            ended = await asyncio.gather(
                *(upload_once(server.base, kind, body) for _ in range(uploads)),
                return_exceptions=True,
            )
            wall = time.perf_counter() - started
            lags = (await http.get("/bench/loop-lag")).json()["lags_ms"]
            await asyncio.sleep(SETTLE_SECONDS)
        after = rss_bytes(pid)
    failures = [end for end in ended if isinstance(end, BaseException)]
    for failure in failures[:3]:
        print(f"  {kind}: {failure!r}", file=sys.stderr)
    latencies = [end for end in ended if isinstance(end, float)]
    return Result(wall, latencies, before, sampler.peak, after, lags, len(failures))


HEADER = (
    "dialect    kind      uploads  wall s   MB/s  p50 s  p99 s  RSS before/peak/after MB"
    "  growth MB  lag p50/p99/max ms  failed"
)


def row(dialect: str, kind: str, result: Result, megabytes: float) -> str:
    done = len(result.latencies)
    lags = result.lags_ms
    rss = f"{result.rss_before / MB:.0f}/{result.rss_peak / MB:.0f}/{result.rss_after / MB:.0f}"
    lag = f"{pct(lags, 0.5) / 1000:.2f}/{pct(lags, 0.99) / 1000:.1f}/{max(lags, default=0):.1f}"
    return (
        f"{dialect:<10} {kind:<9} {done:>7} {result.wall:>6.1f} "
        f"{done * megabytes / result.wall:>6.1f} {pct(result.latencies, 0.5) / 1000:>6.2f} "
        f"{pct(result.latencies, 0.99) / 1000:>6.2f} {rss:>24} "
        f"{(result.rss_peak - result.rss_before) / MB:>10.0f} {lag:>19} {result.failed:>7}"
    )


async def bench_kind(env: dict[str, str], kind: str, body: bytes, args: argparse.Namespace) -> str:
    factory = "bench.uploads.server:create"
    async with servers(env, [free_port()], factory=factory) as [server]:
        result = await run_kind(server, kind, body, args.uploads)
    return row(env["BENCH_DIALECT"], kind, result, len(body) / MB)


def bench(args: argparse.Namespace, dialect: str, bodies: dict[str, bytes]) -> None:
    with database(dialect) as (url, _agent_id):
        for kind in args.kinds.split(","):
            folder = tempfile.mkdtemp(prefix="bench-uploads-")
            env = server_env(
                url,
                "http://127.0.0.1:9",  # no model: no turn runs here
                ATTACHMENTS_DIR=folder,
                USER_ATTACHMENT_QUOTA_BYTES="0",
                RUNNER_ENABLED="0",
                BENCH_DIALECT=dialect,
            )
            try:
                print(asyncio.run(bench_kind(env, kind, bodies[kind], args)), flush=True)
            finally:
                shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dialects", default="sqlite,postgresql")
    parser.add_argument("--uploads", type=int, default=50, help="at once")
    parser.add_argument("--megabytes", type=float, default=10, help="of each file")
    parser.add_argument("--kinds", default=",".join(KINDS))
    args = parser.parse_args()
    photo = samples.photo(args.megabytes)
    bodies = {"bare": photo, "photo": photo, "document": samples.document(args.megabytes)}
    freeze_heap()
    print(HEADER, flush=True)
    started = time.monotonic()
    for dialect in args.dialects.split(","):
        bench(args, dialect.strip(), bodies)
    print(f"({time.monotonic() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
