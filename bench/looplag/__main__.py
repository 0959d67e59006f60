"""Event-loop lag under the heaviest database work: `uv run python -m bench.looplag
[--seconds 10] [--dialects sqlite,postgresql]
[--scenarios idle,backfill,memory,turns,all,hostile]
[--hostile-limit BYTES] [--baseline-tree DIR]`

A probe task in the server's loop asks to be woken every 1 ms and records how late it is
woken (`bench/looplag/server.py`). Whatever runs on the loop's thread in one piece (a
statement executed there, a long encode) delays it, and every socket and run of the
process with it. Per dialect: a fresh database with one thread of 5,000 messages and
10,000 memories (`seed.py`), the fake model in a process of its own, the app under
uvicorn; then each scenario for `--seconds`, the probe's lags read at its end:
- idle: nothing but the probe (the baseline of this run);
- backfill: 2 sockets subscribing to the long thread from `after_seq=0` (each a
  5,000-message replay), over and over;
- memory: 2 clients sending turns whose one tool call searches every memory;
- turns: 8 clients sending turns of 2 parallel `tasks` calls (`bench.turn`'s turn);
- all: the three at once;
- hostile: 2 clients whose turns' one tool call (an MCP server's, `hostile.py`) answers
  5 MB of structured content, beside the 8 clients of `turns`: refused unread past the
  server's `max_message_bytes` (default 1 MiB), or, with `--hostile-limit` above it, read,
  parsed (by the MCP SDK, on the loop) and cut; the other users' turns and the loop keep
  their pace (goal: p99 <= 25 ms).
Goal: lag p99 <= 5 ms and max <= 25 ms in every scenario but hostile.

`--baseline-tree DIR`: first the same run from another checkout (its own lock file and
environment, through `uv run`), e.g. the code before a change: `git worktree add
/tmp/old <ref>`. Its rows are labelled `old`, this tree's `new`.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import msgspec
from websockets.asyncio.client import connect

from bench.common import freeze_heap, start_url_process
from bench.looplag.hostile import hostile_agent_types
from bench.looplag.seed import seed_heavy
from bench.rest.__main__ import free_port
from bench.turn.__main__ import pct, stop_model
from bench.turn.client import TurnClient, TurnTimes
from bench.turn.server import server_env, servers
from bench.turn.setup import TOKEN, database

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.encode
HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@dataclass(frozen=True)
class Load:
    backfills: int = 0
    searchers: int = 0
    turners: int = 0
    flooders: int = 0


SCENARIOS = {
    "idle": Load(),
    "backfill": Load(backfills=2),
    "memory": Load(searchers=2),
    "turns": Load(turners=8),
    "all": Load(backfills=2, searchers=2, turners=8),
    "hostile": Load(turners=8, flooders=2),
}


@dataclass
class Done:
    backfills: int = 0
    times: TurnTimes = field(default_factory=TurnTimes)


async def backfill_over_and_over(
    base: str, thread_id: str, expected: int, stop: asyncio.Event, done: Done
) -> None:
    """Subscribe from the start, read the whole replay, leave; again until `stop`."""
    url = base.replace("http://", "ws://") + "/api/ws"
    async with connect(url, additional_headers=HEADERS, max_queue=None, max_size=None) as ws:
        while not stop.is_set():
            await ws.send(_encode({"type": "subscribe", "thread_id": thread_id, "after_seq": 0}))
            received = 0
            async for raw in ws:
                frame = _decode(raw)
                if frame["type"] == "message":
                    received += 1
                elif frame["type"] == "subscribed":
                    break
                elif frame["type"] in ("error", "reset"):
                    raise RuntimeError(f"server said: {frame}")
            if received < expected:
                raise RuntimeError(f"a replay of {received} messages, {expected} expected")
            await ws.send(_encode({"type": "unsubscribe", "thread_id": thread_id}))
            done.backfills += 1


async def run_scenario(
    base: str, agent_id: str, thread_id: str, load: Load, seconds: float, messages: int
) -> tuple[list[float], Done]:
    done, stop = Done(), asyncio.Event()
    workers = [
        backfill_over_and_over(base, thread_id, messages, stop, done) for _ in range(load.backfills)
    ]
    turners = [TurnClient(base, TOKEN, agent_id) for _ in range(load.turners)]
    turners += [TurnClient(base, TOKEN, agent_id, "search") for _ in range(load.searchers)]
    turners += [TurnClient(base, TOKEN, agent_id, "flood") for _ in range(load.flooders)]
    workers += [client.run(10**9, done.times, stop) for client in turners]
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        await http.get("/bench/loop-lag")  # start afresh
        tasks = [asyncio.create_task(worker) for worker in workers]
        await asyncio.sleep(seconds)
        stop.set()
        lags = (await http.get("/bench/loop-lag")).json()["lags_ms"]
        # A client whose turn did not end in time stops there: a failure, not a crash.
        ended = await asyncio.gather(*tasks, return_exceptions=True)
        done.times.failed += sum(isinstance(end, Exception) for end in ended)
    return lags, done


HEADER = "tree dialect    scenario  samples  p50 ms  p99 ms  max ms  replays/s  turns/s  failed"


def row(label: str, dialect: str, name: str, lags: list[float], done: Done, seconds: float) -> str:
    top = max(lags) if lags else float("nan")
    return (
        f"{label:<4} {dialect:<10} {name:<9} {len(lags):>7} {pct(lags, 0.5) / 1000:>7.2f} "
        f"{pct(lags, 0.99) / 1000:>7.2f} {top:>7.1f} {done.backfills / seconds:>10.1f} "
        f"{len(done.times.turn) / seconds:>8.1f} {done.times.failed:>7}"
    )


def bench(args: argparse.Namespace, dialect: str) -> None:
    model, model_url = start_url_process("bench.looplag.model")
    try:
        with database(dialect) as (url, agent_id):
            thread_id = asyncio.run(seed_heavy(url, agent_id, args.messages, args.memories))
            folder = Path(tempfile.mkdtemp(prefix="looplag-"))
            with hostile_agent_types(folder, args.hostile_limit) as agent_types:
                env = server_env(
                    url,
                    model_url,
                    WS_FRAME_RATE="100000",
                    WS_FRAME_BURST="100000",
                    AGENT_TYPES_FILE=str(agent_types),
                )
                asyncio.run(_run_all(args, dialect, env, agent_id, thread_id))
    finally:
        stop_model(model)


async def _run_all(
    args: argparse.Namespace, dialect: str, env: dict[str, str], agent_id: str, thread_id: str
) -> None:
    factory = "bench.looplag.server:create"
    async with servers(env, [free_port()], factory=factory) as [server]:
        freeze_heap()
        for name in args.scenarios.split(","):
            load = SCENARIOS[name]
            lags, done = await run_scenario(
                server.base, agent_id, thread_id, load, args.seconds, args.messages
            )
            print(row(args.label, dialect, name, lags, done, args.seconds), flush=True)


def run_baseline(tree: str) -> None:
    """This benchmark, same arguments, from the checkout at `tree` (its own environment)."""
    argv = [a for a in sys.argv[1:] if a != tree and not a.startswith("--baseline-tree")]
    command = ["uv", "run", "--locked", "python", "-m", "bench.looplag", *argv]
    subprocess.run([*command, "--label", "old", "--no-header"], cwd=tree, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10, help="per scenario")
    parser.add_argument("--dialects", default="sqlite,postgresql")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--messages", type=int, default=5000, help="in the long thread")
    parser.add_argument("--memories", type=int, default=10000)
    parser.add_argument("--hostile-limit", type=int, help="the hostile server's max_message_bytes")
    parser.add_argument("--baseline-tree", metavar="DIR", help="first run the code at DIR")
    parser.add_argument("--label", default="new", help=argparse.SUPPRESS)
    parser.add_argument("--no-header", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.no_header:
        print(HEADER, flush=True)
    if args.baseline_tree:
        run_baseline(args.baseline_tree)
    started = time.monotonic()
    for dialect in args.dialects.split(","):
        bench(args, dialect.strip())
    print(f"({time.monotonic() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
