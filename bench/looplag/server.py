"""The server under test with a loop-lag probe: `uvicorn --factory bench.looplag.server:create`.

A task on the server's event loop asks to be woken every `PERIOD` and records how late
the wake-up came: whatever holds the loop's thread (a statement run on it, a long
encode, a full garbage collection) shows up as lag, and every socket and run of the
process waits as long. `GET /bench/loop-lag` answers the lags recorded since the last
call (in ms) and starts afresh, so the benchmark reads one scenario at a time.
"""

from __future__ import annotations

import asyncio
import time

from litestar import Litestar, get

from app import create_app

PERIOD = 0.001


class Probe:
    def __init__(self) -> None:
        self.lags_ms: list[float] = []
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self.run())

    async def run(self) -> None:
        clock = time.perf_counter
        while True:
            asked = clock()
            await asyncio.sleep(PERIOD)
            self.lags_ms.append((clock() - asked - PERIOD) * 1000)

    def take(self) -> list[float]:
        lags, self.lags_ms = self.lags_ms, []
        return lags


def create() -> Litestar:
    app = create_app()
    probe = Probe()

    @get("/bench/loop-lag", sync_to_thread=False, include_in_schema=False)
    def loop_lag() -> dict[str, list[float]]:
        return {"lags_ms": probe.take()}

    app.register(loop_lag)
    app.on_startup.append(probe.start)
    return app
