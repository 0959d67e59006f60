"""The load generator: the users of one row, in this process or spread over `--client-procs`
processes (when one process's CPU is the bottleneck, its own lateness would be counted as
the server's). Each process reports the CPU it used (`Samples.cpu`).

Users start spread over `ramp` seconds (a thousand sockets opened in the same
millisecond measure the accept queue, not a turn), turn back to back until `deadline`,
then finish the turn in flight.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import resource
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from bench.common import freeze_heap
from bench.realistic.samples import Samples
from bench.realistic.setup import Account
from bench.realistic.users import Phone, Window, langgraph_user


@dataclass(frozen=True)
class Plan:
    """Users `first` .. `first + count - 1` of `total`; `accounts` is None for LangGraph
    (no accounts there). User i talks to `bases[i % len(bases)]`."""

    bases: list[str]
    accounts: list[Account] | None
    first: int
    count: int
    total: int
    start: float
    ramp: float
    duration: float
    timeout: float

    def split(self, parts: int) -> list[Plan]:
        size = -(-self.count // parts)
        plans = []
        for first in range(self.first, self.first + self.count, size):
            count = min(size, self.first + self.count - first)
            plans.append(Plan(**{**self.__dict__, "first": first, "count": count}))
        return plans


def raise_fd_limit() -> None:
    """As many sockets as the hard limit allows (two per user here, more in the server);
    processes started afterwards (servers, the fake model) inherit it."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def drive(plan: Plan) -> Samples:
    samples = Samples()
    before = _cpu()
    users = []
    for i in range(plan.first, plan.first + plan.count):
        start = plan.start + plan.ramp * i / plan.total
        steady = plan.start + plan.ramp
        window = Window(start, steady, steady + plan.duration, plan.timeout)
        base = plan.bases[i % len(plan.bases)]
        if plan.accounts is None:
            users.append(langgraph_user(base, window, samples))
        else:
            users.append(Phone(base, plan.accounts[i], samples).run(window))
    probe = asyncio.create_task(_probe_lag(samples.loop_lag))
    try:
        await asyncio.gather(*users)
    finally:
        probe.cancel()
    samples.cpu = _cpu() - before
    return samples


async def _probe_lag(lags: list[float], interval: float = 0.01) -> None:
    """Ask to be woken every `interval`, record how late: this process's own delay in
    reading frames, which its timestamps would otherwise count against the server."""
    while True:
        asked = time.monotonic()
        await asyncio.sleep(interval)
        lags.append(time.monotonic() - asked - interval)


def _drive_in_process(plan: Plan) -> Samples:
    freeze_heap()
    return asyncio.run(drive(plan))


def _ready() -> float:
    return time.monotonic()


class LoadProcesses:
    """`count` load processes, started once for the whole benchmark (spawned: a fresh
    interpreter each, no copy of this one's loop)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.pool = (
            ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"))
            if count > 1
            else None
        )
        if self.pool is not None:  # start them all now, not during the first row
            for future in [self.pool.submit(_ready) for _ in range(count * 2)]:
                future.result()

    async def run(self, plan: Plan) -> Samples:
        if self.pool is None:
            return await drive(plan)
        futures = [
            asyncio.wrap_future(self.pool.submit(_drive_in_process, part))
            for part in plan.split(self.count)
        ]
        total = Samples()
        for samples in await asyncio.gather(*futures):
            total.merge(samples)
        return total

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()
