"""Turn benchmark over real server processes: HTTP + websocket, as a phone would.

`uv run python -m bench.turn [--turns 300] [--clients 1,8] [--dialects sqlite,postgresql]
[--processes 1] [--cpu-cap CORES] [--profile out.prof] [--langgraph VENV]`

Per dialect (and process count): a fresh migrated database; the fake OpenAI-compatible
model in a process of its own (each run: the model asks for 2 parallel `tasks` calls,
then answers; real loopback HTTP through litellm); the app under uvicorn (`--processes N`
server processes sharing the database; with N > 1 also Redis, which carries the frames
between them). Each client: its own HTTP client and websocket on one server (clients
round-robin over the servers), repeating: create a thread, subscribe, send a message,
wait for the run's `completed` frame.

Prints per row: p50/p99 turn latency (message POST -> `completed` frame), p50 of the
whole script (thread POST -> `completed`), runs/s over all clients, and server CPU ms
per run (user + system time of every server process, from /proc, over the measured runs).
`--cpu-cap 0.3`: each server process held to 0.3 of a core by a cgroup CPU quota (needs
root and a writable /sys/fs/cgroup): on 2 cores the load itself takes one, so without a cap
"2 processes vs 1" measures the machine, not whether the work spreads over processes.
`--profile PATH` profiles the (single) server with cProfile over the measured runs of the
last client count and writes PATH (read it with `python -m pstats PATH`).
`--instructions`: the server runs under valgrind's callgrind and the instructions it
executes per run over the last client count's measured runs are printed
(`bench/turn/instructions.py`), and the same beyond the idle server's count per second
(measured first, `IDLE_SECONDS`): its pollers and probes run per second, and under
valgrind a run takes tens of times longer. Repeatable where timings drift, for comparing
two versions of the code; its timing rows are valgrind's, not the server's.
`--answer-chunks 300 --answer-pause 0.002`: a long answer streamed word by word, as a
model emits it (by default the short answer arrives in one read).

`--langgraph VENV` (or env `BENCH_LANGGRAPH_VENV`): also the same turns, clients and fake
model (a process of its own) against the LangGraph Agent Server 0.16 (`langgraph dev`,
in-memory runtime) serving the same agent (`bench/langgraph/graph.py`), as rows with
dialect `langgraph`: our goals are stated relative to it. VENV holds langgraph-cli[inmem]
and langchain-openai (not dependencies of ours):
`python3 -m venv /tmp/lg && /tmp/lg/bin/pip install "langgraph-cli[inmem]==0.4.40"
"langgraph-api==0.16.7" "langchain-openai==1.7.3"`. Its turn: `bench/langgraph/client.py`;
how it is started and measured, and the settings: `bench/langgraph/server.py` (its queue,
which polls every 0.5 s, is woken when a run is created, as our goals were set;
`BENCH_LANGGRAPH_WAKE=0`: the poll as it ships).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bench.common import freeze_heap, start_url_process
from bench.langgraph.client import LangGraphClient, verify
from bench.langgraph.server import LangGraphServer, langgraph_server
from bench.rest.__main__ import free_port
from bench.turn import instructions
from bench.turn.client import TurnClient, TurnTimes
from bench.turn.server import ServerProcess, server_env, servers
from bench.turn.setup import TOKEN, database

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
IDLE_SECONDS = 10.0  # `--instructions`: the idle server counted this long first


@dataclass
class Row:
    dialect: str
    processes: int
    clients: int
    times: TurnTimes
    seconds: float
    cpu: float

    def cells(self) -> list[str]:
        runs = len(self.times.turn)
        return [
            f"{self.dialect:<11}",
            f"{self.processes:>5}",
            f"{self.clients:>7}",
            f"{pct(self.times.turn, 0.5):>7.1f}",
            f"{pct(self.times.turn, 0.99):>7.1f}",
            f"{pct(self.times.script, 0.5):>10.1f}",
            f"{runs / self.seconds:>7.1f}",
            f"{1000 * self.cpu / max(1, runs):>10.1f}",
            f"{self.times.failed:>6}",
        ]


HEADER = ["dialect    ", "procs", "clients", "p50 ms", "p99 ms", "script p50", "runs/s"]
HEADER += ["CPU ms/run", "failed"]


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def start_model() -> tuple[subprocess.Popen[str], str]:
    return start_url_process("bench.turn.model")


def stop_model(model: subprocess.Popen[str]) -> None:
    assert model.stdin is not None
    model.stdin.close()
    model.wait(timeout=10)


class Client(Protocol):
    async def run(self, turns: int, times: TurnTimes) -> None: ...


async def drive_clients(
    client: Callable[[int], Client], clients: int, turns: int
) -> tuple[TurnTimes, float]:
    """`clients` clients (`client(i)`) sharing `turns` turns, all at once."""
    times = TurnTimes()
    per_client = max(1, turns // clients)
    freeze_heap()
    started = time.perf_counter()
    await asyncio.gather(*(client(i).run(per_client, times) for i in range(clients)))
    return times, time.perf_counter() - started


async def drive(
    processes: list[ServerProcess], agent_id: str, clients: int, turns: int
) -> tuple[TurnTimes, float]:
    def client(i: int) -> TurnClient:  # clients round-robin over the servers
        return TurnClient(processes[i % len(processes)].base, TOKEN, agent_id)

    return await drive_clients(client, clients, turns)


async def measure(
    processes: list[ServerProcess], agent_id: str, clients: int, turns: int, warmup: int
) -> tuple[TurnTimes, float, float]:
    await drive(processes, agent_id, clients, warmup)
    before = sum(p.cpu_seconds() for p in processes)
    times, seconds = await drive(processes, agent_id, clients, turns)
    cpu = sum(p.cpu_seconds() for p in processes) - before
    return times, seconds, cpu


def bench(args: argparse.Namespace, dialect: str, count: int) -> list[Row]:
    rows = []
    model, model_url = start_model()
    try:
        with database(dialect) as (url, agent_id):
            # a client turning 50 times a second sends more frames than a phone may
            env = server_env(url, model_url, WS_FRAME_RATE="100000", WS_FRAME_BURST="100000")
            if count > 1 or args.redis:
                env["REDIS_URL"] = REDIS_URL
            if args.profile:
                env["BENCH_PROFILE"] = os.path.abspath(args.profile)
            clients = [int(c) for c in args.clients.split(",")]
            counting = args.instructions
            out_dir = Path(tempfile.mkdtemp(prefix="bench-callgrind-"))
            wrapper = instructions.wrapper(out_dir) if counting else []

            def watch_start(pid: int) -> None:
                if counting:
                    instructions.start(pid)
                else:
                    os.kill(pid, signal.SIGUSR1)

            idle: list[int] = []

            async def watch_idle(pid: int) -> None:
                if counting:
                    instructions.start(pid)
                    await asyncio.sleep(IDLE_SECONDS)
                    idle.append(instructions.stop(pid, out_dir))

            def watch_stop(pid: int, runs: int, seconds: float) -> None:
                if not counting:
                    os.kill(pid, signal.SIGUSR2)
                    time.sleep(1)  # the profile is written
                    return
                total = instructions.stop(pid, out_dir)
                counted = instructions.per_run(total, runs, idle[-1], IDLE_SECONDS, seconds)
                print(f"{dialect}: {counted}", flush=True)

            async def run_all() -> None:
                ports = [free_port() for _ in range(count)]
                async with servers(env, ports, args.cpu_cap, wrapper) as processes:
                    for index, n in enumerate(clients):
                        watched = index == len(clients) - 1 and (args.profile or counting)
                        if watched:  # warm up first: only the measured runs are watched
                            await drive(processes, agent_id, n, args.warmup)
                            await watch_idle(processes[0].process.pid)
                            watch_start(processes[0].process.pid)
                        times, seconds, cpu = await measure(
                            processes, agent_id, n, args.turns, 0 if watched else args.warmup
                        )
                        if watched:
                            watch_stop(processes[0].process.pid, len(times.turn), seconds)
                        rows.append(Row(dialect, count, n, times, seconds, cpu))
                        print(" ".join(rows[-1].cells()), flush=True)

            asyncio.run(run_all())
    finally:
        stop_model(model)
    return rows


async def measure_langgraph(
    server: LangGraphServer, clients: int, turns: int, warmup: int
) -> tuple[TurnTimes, float, float]:
    """As `measure`, against `langgraph dev` (CPU: its process and children)."""

    def client(i: int) -> LangGraphClient:
        return LangGraphClient(server.base)

    await drive_clients(client, clients, warmup)
    before = server.cpu_seconds()
    times, seconds = await drive_clients(client, clients, turns)
    return times, seconds, server.cpu_seconds() - before


def bench_langgraph(args: argparse.Namespace) -> list[Row]:
    """The same turns against `langgraph dev` from the venv `args.langgraph`, on a fake
    model of its own; a few turns are checked first (model called twice, answer kept)."""
    rows = []
    model, model_url = start_model()
    try:
        with langgraph_server(args.langgraph, model_url) as server:

            async def run_all() -> None:
                await verify(server.base)
                for n in (int(c) for c in args.clients.split(",")):
                    times, seconds, cpu = await measure_langgraph(
                        server, n, args.turns, args.warmup
                    )
                    rows.append(Row("langgraph", 1, n, times, seconds, cpu))
                    print(" ".join(rows[-1].cells()), flush=True)

            asyncio.run(run_all())
    finally:
        stop_model(model)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300, help="measured runs per row")
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--dialects", default="sqlite,postgresql")
    parser.add_argument("--processes", default="1", help="e.g. 1,2 (more than 1: Redis)")
    parser.add_argument("--redis", action="store_true", help="Redis also with one process")
    parser.add_argument(
        "--cpu-cap",
        type=float,
        metavar="CORES",
        help="hold each server process to this fraction of a core (a cgroup CPU quota)",
    )
    parser.add_argument("--profile", help="cProfile the server over the last row's runs")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count the server's instructions per run over the last row's runs (callgrind)",
    )
    parser.add_argument(
        "--answer-chunks", type=int, default=4, help="the answer as N words, one chunk each"
    )
    parser.add_argument(
        "--answer-pause", type=float, default=0.0, help="seconds between the answer's chunks"
    )
    parser.add_argument(
        "--langgraph",
        default=os.environ.get("BENCH_LANGGRAPH_VENV"),
        metavar="VENV",
        help="also measure `langgraph dev` from this venv (langgraph-cli[inmem], langchain-openai)",
    )
    args = parser.parse_args()
    # read by the fake model's process (model.py)
    os.environ["BENCH_ANSWER_CHUNKS"] = str(args.answer_chunks)
    os.environ["BENCH_ANSWER_PAUSE"] = str(args.answer_pause)
    if args.cpu_cap:
        print(f"each server process held to {args.cpu_cap} of a core (bench/cpu_cap.py)")
    print(" ".join(HEADER), flush=True)
    for dialect in args.dialects.split(","):
        for count in (int(p) for p in args.processes.split(",")):
            bench(args, dialect.strip(), count)
    if args.langgraph:
        bench_langgraph(args)


if __name__ == "__main__":
    main()
