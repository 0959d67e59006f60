"""Realistic benchmark: many users, each talking to a model with a real model's pacing.

`uv run python -m bench.realistic [--users 100,400,1000] [--processes 1,2]
[--dialects sqlite,postgresql] [--env KEY=VALUE ...] [--cpu-cap CORES]
[--duration 30] [--langgraph VENV] [--client-procs N]`

The fake model (`bench/realistic/model.py`, a process of its own): after a TTFT (`--ttft`,
0.3 s) it streams one `tasks` create call, its arguments in pieces at `--tokens-per-second`
(40); after the tool result, again after the TTFT, a `--answer-tokens` (120) answer, one
token per chunk. Every answer token carries its send time (`pacing.py`), so the client
measures each token's trip model -> server -> websocket exactly.

Each user (`users.py`) opens a websocket and, turn after turn: creates a thread,
subscribes, posts a message and reads `message`/`delta`/`run` frames until the run ends
(or `--timeout`: then it cancels the run). Users start spread over `--ramp` seconds, turn
back to back for `--duration` seconds, then finish their turn in flight. Each user is an
account of its own. Rows: per dialect, server process count (2: Redis carries frames
between them, users round-robin over them) and server configuration (`--env`), each user
count in turn on the same servers (fresh database per configuration); then LangGraph
(`--langgraph VENV`, how to make it: `bench/turn/__main__.py`) serving the same turn to
the same users, its `N_JOBS_PER_WORKER` raised to `--langgraph-jobs` (1000) so that it is
not held to 10 runs at once.

Per row:
- tok p50/p99: token -> client latency, ms (the model sent it -> the client read it);
- 1st p50/p99: first-token overhead, ms: message POST -> first answer token at the client,
  minus the time the model itself took before it (both calls' TTFT and the tool call's
  stream): queueing, tool, database, frames;
- turns/s: completed turns ended while every user was on, over `--duration`;
- done, fail (run failed or cancelled, HTTP error), t/o (no end in `--timeout`),
  closed (socket closed under a turn);
- CPU ms/turn: every server process's user + system CPU over the row / completed turns
  (failed and timed-out turns cost CPU too, and are not in the divisor);
- srv %: the server processes' CPU in % of one core over the row (far below 100 % per
  process with latencies high: the server waits, on a limit or for a core);
- RSS MB: peak resident memory of the server processes (summed), sampled every 0.5 s;
- load %, model %: CPU of the load generator (all its processes) and of the fake model,
  in % of one core over the row: on a small machine they share the cores with the server;
- lag p99/max, ms: how late the load generator's loop woke a 10 ms timer: its own delay,
  which its latencies count against the server (above a few ms: add `--client-procs`, or
  the machine is too busy for the latency columns to be the server's).

The server runs with its defaults (RUNNER_MAX_CONCURRENT_RUNS=1000, the model door's
LLM_MAX_CONNECTIONS_PER_PROVIDER=1000, DATABASE_MAX_CONNECTIONS=20): the rows show what
they cost. `--env` measures other settings: each occurrence is one configuration (space
separated KEY=VALUE pairs, or `defaults`), e.g. `--env defaults --env
RUNNER_MAX_CONCURRENT_RUNS=16` (the default before issue #30).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench.common import freeze_heap, start_url_process
from bench.langgraph.server import langgraph_server
from bench.realistic import procs
from bench.realistic.load import LoadProcesses, Plan, raise_fd_limit
from bench.realistic.pacing import Pacing
from bench.realistic.samples import Samples
from bench.realistic.setup import database
from bench.rest.__main__ import free_port
from bench.turn.__main__ import REDIS_URL, pct, stop_model
from bench.turn.server import ServerProcess, server_env, servers

HEADER = "target      procs config          users tok p50 tok p99 1st p50 1st p99 turns/s"
HEADER += "  done fail  t/o closed CPU ms/turn srv % RSS MB load % model % lag p99 lag max"


# the column is narrow: the settings a run of this benchmark is likely to raise
SHORT = {"RUNNER_MAX_CONCURRENT_RUNS": "runs", "DATABASE_MAX_CONNECTIONS": "db"}


@dataclass
class Row:
    target: str
    processes: int
    config: str
    users: int
    samples: Samples
    duration: float
    wall: float  # the row's whole time, drain included (CPU % are over it)
    server_cpu: float
    rss: int
    model_cpu: float

    def cells(self) -> str:
        s = self.samples
        cells = [
            f"{self.target:<11}",
            f"{self.processes:>5}",
            f"{self.config[:15]:<15}",
            f"{self.users:>5}",
            f"{pct(s.token_latency, 0.5):>7.0f}",
            f"{pct(s.token_latency, 0.99):>7.0f}",
            f"{pct(s.first_token_overhead, 0.5):>7.0f}",
            f"{pct(s.first_token_overhead, 0.99):>7.0f}",
            f"{s.in_window / self.duration:>7.1f}",
            f"{s.completed:>5}",
            f"{s.failed:>4}",
            f"{s.timeouts:>4}",
            f"{s.closed:>6}",
            f"{1000 * self.server_cpu / s.completed if s.completed else float('nan'):>11.1f}",
            f"{100 * self.server_cpu / self.wall:>5.0f}",
            f"{self.rss / 2**20:>6.0f}",
            f"{100 * s.cpu / self.wall:>6.0f}",
            f"{100 * self.model_cpu / self.wall:>7.0f}",
            f"{pct(s.loop_lag, 0.99):>7.0f}",
            f"{1000 * max(s.loop_lag, default=0):>7.0f}",
        ]
        return " ".join(cells)


def parse_config(text: str) -> tuple[str, dict[str, str]]:
    """`defaults` or `KEY=VALUE KEY2=VALUE2`: (label, environment overrides)."""
    if text.strip() in ("", "defaults"):
        return "defaults", {}
    pairs = dict(pair.split("=", 1) for pair in text.split())
    label = " ".join(f"{SHORT.get(k, k.lower())}={v}" for k, v in pairs.items())
    return label, pairs


@dataclass
class Bench:
    args: argparse.Namespace
    load: LoadProcesses
    model: ServerProcess

    def plan(self, bases: list[str], accounts: list | None, users: int, warmup: bool) -> Plan:
        args = self.args
        return Plan(
            bases=bases,
            accounts=accounts,
            first=0,
            count=users,
            total=users,
            start=time.monotonic() + 0.5,  # the load processes get the plan meanwhile
            ramp=0.0 if warmup else args.ramp,
            duration=0.1 if warmup else args.duration,  # warm-up: one turn per user
            timeout=args.timeout,
        )

    async def measure(
        self,
        plan: Plan,
        server_cpu: Callable[[], float],
        server_pids: Callable[[], list[int]],
    ) -> tuple[Samples, float, float, int, float]:
        """(samples, wall seconds, server CPU, peak server RSS, model CPU) of one row."""
        peak = 0

        async def sample_rss() -> None:
            nonlocal peak
            while True:
                peak = max(peak, procs.rss_bytes(server_pids()))
                await asyncio.sleep(0.5)

        cpu, model_cpu, began = server_cpu(), self.model.cpu_seconds(), time.monotonic()
        sampler = asyncio.create_task(sample_rss())
        try:
            samples = await self.load.run(plan)
        finally:
            sampler.cancel()
        return (
            samples,
            time.monotonic() - began,
            server_cpu() - cpu,
            peak,
            self.model.cpu_seconds() - model_cpu,
        )

    def row(self, target: str, count: int, config: str, users: int, measured: tuple) -> Row:
        samples, wall, cpu, rss, model_cpu = measured
        row = Row(
            target, count, config, users, samples, self.args.duration, wall, cpu, rss, model_cpu
        )
        print(row.cells(), flush=True)
        if samples.why_failed:  # what a user would be told
            print("  failed:", ", ".join(f"{n} {why}" for why, n in samples.why_failed.items()))
        return row

    def ours(self, dialect: str, count: int, config: str, overrides: dict[str, str]) -> None:
        users = [int(u) for u in self.args.users.split(",")]
        with database(dialect, max(users)) as (url, accounts):
            env = server_env(url, self.model_url, **overrides)
            if count > 1:
                env["REDIS_URL"] = REDIS_URL

            async def run_all() -> None:
                ports = [free_port() for _ in range(count)]
                async with servers(env, ports, self.args.cpu_cap) as processes:
                    bases = [p.base for p in processes]

                    def cpu() -> float:
                        return sum(p.cpu_seconds() for p in processes)

                    def pids() -> list[int]:
                        return [p.process.pid for p in processes]

                    await self.load.run(self.plan(bases, accounts, min(8, max(users)), True))
                    for n in users:
                        measured = await self.measure(
                            self.plan(bases, accounts, n, False), cpu, pids
                        )
                        self.row(dialect, count, config, n, measured)
                        await asyncio.sleep(2)  # runs the users cancelled end

            asyncio.run(run_all())

    def langgraph(self) -> None:
        users = [int(u) for u in self.args.users.split(",")]
        with langgraph_server(
            self.args.langgraph, self.model_url, jobs=self.args.langgraph_jobs
        ) as server:

            async def run_all() -> None:
                await self.load.run(self.plan([server.base], None, min(8, max(users)), True))
                for n in users:
                    measured = await self.measure(
                        self.plan([server.base], None, n, False),
                        server.cpu_seconds,
                        lambda: procs.tree(server.process.pid),
                    )
                    self.row("langgraph", 1, f"jobs={self.args.langgraph_jobs}", n, measured)
                    await asyncio.sleep(2)

            asyncio.run(run_all())

    @property
    def model_url(self) -> str:
        return self.model.base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="100,400,1000", help="user counts, one row each")
    parser.add_argument("--processes", default="1", help="server processes, e.g. 1,2 (2: Redis)")
    parser.add_argument("--dialects", default="sqlite,postgresql")
    parser.add_argument(
        "--env",
        action="append",
        metavar="'KEY=VALUE ...'",
        help="a server configuration (repeatable; `defaults`: none), e.g. RUNNER_MAX_CONCURRENT_RUNS=1000",
    )
    parser.add_argument(
        "--cpu-cap",
        type=float,
        metavar="CORES",
        help="hold each server process to this much of a core",
    )
    parser.add_argument("--duration", type=float, default=30.0, help="seconds every user is on")
    parser.add_argument("--ramp", type=float, default=2.0, help="seconds over which users start")
    parser.add_argument("--timeout", type=float, default=60.0, help="longest turn, seconds")
    parser.add_argument("--ttft", type=float, default=Pacing.ttft)
    parser.add_argument("--tokens-per-second", type=float, default=Pacing.tokens_per_second)
    parser.add_argument("--answer-tokens", type=int, default=Pacing.answer_tokens)
    parser.add_argument("--argument-pieces", type=int, default=Pacing.argument_pieces)
    parser.add_argument("--client-procs", type=int, default=1, help="load generator processes")
    parser.add_argument(
        "--langgraph",
        default=os.environ.get("BENCH_LANGGRAPH_VENV"),
        metavar="VENV",
        help="also measure `langgraph dev` from this venv",
    )
    parser.add_argument("--langgraph-jobs", type=int, default=1000, help="its N_JOBS_PER_WORKER")
    args = parser.parse_args()

    raise_fd_limit()  # before any process starts: the servers and the model inherit it
    pacing = Pacing(args.ttft, args.tokens_per_second, args.answer_tokens, args.argument_pieces)
    os.environ.update(pacing.to_env())  # read by the model's process
    model, model_url = start_url_process("bench.realistic.model")
    load = LoadProcesses(args.client_procs)
    bench = Bench(args, load, ServerProcess(model, model_url))  # type: ignore[arg-type]
    freeze_heap()
    print(
        f"model: TTFT {pacing.ttft} s, {pacing.tokens_per_second} tokens/s, "
        f"{pacing.answer_tokens}-token answer; {args.duration} s per row, "
        f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    if args.cpu_cap:
        print(f"each server process held to {args.cpu_cap} of a core (bench/cpu_cap.py)")
    print(HEADER, flush=True)
    try:
        for dialect in args.dialects.split(","):
            for count in (int(p) for p in args.processes.split(",")):
                for label, overrides in map(parse_config, args.env or ["defaults"]):
                    bench.ours(dialect.strip(), count, label, overrides)
        if args.langgraph:
            bench.langgraph()
    finally:
        load.close()
        stop_model(model)


if __name__ == "__main__":
    main()
