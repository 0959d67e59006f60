"""Cross-process wake-ups: how soon a cancel or an approval asked on one server process
takes effect in the run another process executes.

`uv run python -m bench.wakeups [--rounds 30] [--transports redis,postgres_notify]`

On PostgreSQL, two server processes A and B (runners on, the default 0.5 s poll), the
wake-ups carried by Redis's control channel or by PostgreSQL LISTEN/NOTIFY. The client's
websocket and messages go to B, whose runner claims the run; the decision goes to A:
- cancel: a run waiting on its model (which never answers) is cancelled through A; timed
  from the POST to the run's `cancelled` frame, which B writes once it has stopped the run;
- approval: a `memory` `forget` call waits for approval; approved through A; timed from
  the POST to the call's `success`/`failure` frame, which B writes after running it.
Prints p50 / p95 / max per transport, and on how many rounds the run was B's (the lease
owner read from the database). Without a wake-up, B would learn of either at its next
poll (up to 0.5 s) or lease renewal.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from websockets.asyncio.client import ClientConnection, connect

from bench.common import freeze_heap, start_url_process
from bench.rest.__main__ import free_port
from bench.turn.__main__ import REDIS_URL, stop_model
from bench.turn.server import ServerProcess, server_env, servers
from bench.turn.setup import TOKEN, database

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
Frame = dict[str, Any]


class Frames:
    """The frames of one websocket, waited for by predicate."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._seen: list[Frame] = []
        self._arrived = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self.ws:
            self._seen.append(msgspec.json.decode(raw))
            self._arrived.set()

    async def wait(self, matches: Callable[[Frame], bool], timeout: float = 30) -> Frame:  # noqa: ASYNC109
        async with asyncio.timeout(timeout):
            while True:
                for frame in self._seen:
                    if matches(frame):
                        self._seen.remove(frame)
                        return frame
                self._arrived.clear()
                await self._arrived.wait()

    def close(self) -> None:
        self._reader.cancel()


def run_frame(run_id: str, status: str) -> Callable[[Frame], bool]:
    return lambda f: (
        f["type"] == "run" and f["run"]["id"] == run_id and f["run"]["status"] == status
    )


def cell_frame(statuses: tuple[str, ...], message_id: str | None = None) -> Callable[[Frame], bool]:
    def matches(frame: Frame) -> bool:
        if frame["type"] != "message":
            return False
        message = frame["message"]
        activity = message.get("tool_activity") or {}
        return activity.get("status") in statuses and message_id in (None, message["id"])

    return matches


async def start_run(
    b: httpx.AsyncClient, frames: Frames, agent_id: str, content: str
) -> tuple[str, str]:
    thread_id = (await b.post("/api/threads", json={"agent_id": agent_id})).json()["id"]
    await frames.ws.send(msgspec.json.encode({"type": "subscribe", "thread_id": thread_id}))
    await frames.wait(lambda f: f["type"] == "subscribed" and f["thread_id"] == thread_id)
    posted = await b.post(f"/api/threads/{thread_id}/messages", json={"content": content})
    return thread_id, posted.raise_for_status().json()["run"]["id"]


async def unsubscribe(frames: Frames, thread_id: str) -> None:
    """As an app leaving the thread: a socket holds at most `ws_max_subscriptions`."""
    await frames.ws.send(msgspec.json.encode({"type": "unsubscribe", "thread_id": thread_id}))


async def cancel_round(
    a: httpx.AsyncClient, b: httpx.AsyncClient, frames: Frames, agent_id: str
) -> tuple[float, str]:
    thread_id, run_id = await start_run(b, frames, agent_id, "hang")
    await frames.wait(run_frame(run_id, "running"))
    await asyncio.sleep(0.05)  # the model call is under way
    started = time.perf_counter()
    (await a.post(f"/api/threads/{thread_id}/runs/{run_id}/cancel")).raise_for_status()
    await frames.wait(run_frame(run_id, "cancelled"))
    elapsed = time.perf_counter() - started
    await unsubscribe(frames, thread_id)
    return elapsed, run_id


async def approval_round(
    a: httpx.AsyncClient, b: httpx.AsyncClient, frames: Frames, agent_id: str
) -> tuple[float, str]:
    thread_id, run_id = await start_run(b, frames, agent_id, "forget")
    waiting = await frames.wait(cell_frame(("awaiting_approval",)))
    message_id = waiting["message"]["id"]
    started = time.perf_counter()
    url = f"/api/threads/{thread_id}/messages/{message_id}/approval"
    (await a.post(url, json={"approve": True})).raise_for_status()
    await frames.wait(cell_frame(("success", "failure"), message_id))
    elapsed = time.perf_counter() - started
    await frames.wait(run_frame(run_id, "completed"))
    await unsubscribe(frames, thread_id)
    return elapsed, run_id


async def measure(
    processes: list[ServerProcess], agent_id: str, url: str, rounds: int
) -> dict[str, tuple[list[float], int]]:
    a_process, b_process = processes
    results: dict[str, tuple[list[float], int]] = {}
    engine = create_async_engine(url)
    async with (
        httpx.AsyncClient(base_url=a_process.base, headers=HEADERS, timeout=30) as a,
        httpx.AsyncClient(base_url=b_process.base, headers=HEADERS, timeout=30) as b,
        connect(
            b_process.base.replace("http://", "ws://") + "/api/ws", additional_headers=HEADERS
        ) as ws,
    ):
        frames = Frames(ws)
        try:
            for name, one_round in (("cancel", cancel_round), ("approval", approval_round)):
                times, on_b = [], 0
                for _ in range(3):  # warm-up
                    await one_round(a, b, frames, agent_id)
                freeze_heap()
                for _ in range(rounds):
                    elapsed, run_id = await one_round(a, b, frames, agent_id)
                    times.append(elapsed)
                    on_b += await _ran_on(engine, run_id, b_process)
                results[name] = (times, on_b)
        finally:
            frames.close()
            await engine.dispose()
    return results


async def _ran_on(engine: Any, run_id: str, process: ServerProcess) -> bool:
    async with engine.connect() as connection:
        owner = await connection.scalar(
            text("SELECT lease_owner FROM runs WHERE id = :id"), {"id": uuid.UUID(run_id)}
        )
    return f":{process.process.pid}:" in (owner or "")


def bench(transport: str, rounds: int) -> None:
    model, model_url = start_url_process("bench.wakeups.model")
    try:
        with database("postgresql") as (url, agent_id):
            redis = REDIS_URL if transport == "redis" else ""
            # One socket carries every round (two frames each): past the default 20/s.
            env = server_env(url, model_url, REDIS_URL=redis, WS_FRAME_RATE="1000")

            async def run_all() -> dict[str, tuple[list[float], int]]:
                async with servers(env, [free_port(), free_port()]) as processes:
                    return await measure(processes, agent_id, url, rounds)

            for name, (times, on_b) in asyncio.run(run_all()).items():
                ms = sorted(t * 1000 for t in times)
                p95 = ms[min(len(ms) - 1, int(len(ms) * 0.95))]
                print(
                    f"{transport:<16} {name:<9} {statistics.median(ms):>7.1f} {p95:>7.1f}"
                    f" {ms[-1]:>7.1f}   {on_b}/{len(ms)}",
                    flush=True,
                )
    finally:
        stop_model(model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--transports", default="redis,postgres_notify")
    args = parser.parse_args()
    print(f"{'transport':<16} {'decision':<9} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}   run on B")
    for transport in args.transports.split(","):
        bench(transport.strip(), args.rounds)


if __name__ == "__main__":
    main()
