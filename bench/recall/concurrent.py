"""Many users recalling at once: recall's times and the event loop's lag meanwhile.

`uv run python -m bench.recall --users 20 [--memories 10000] [--recalls 30]
[--dialects sqlite,postgresql] [--cache-mib 256]`

`--users` users, each with `--memories` memories and vectors (as `bench.recall` fills
one), in a fresh database per dialect. Each user is a task of its own that recalls
`--recalls` times back to back, every recall with words of its own (as users' messages
are: each query is embedded, none is found among the latest queries' vectors), all the
users at once on this process's one event loop, as a server's turns run them. A probe on
the same loop asks to be woken every 1 ms and records how late it is woken
(bench/looplag/server.py): the work recall does on the loop's thread, not off it.

Phases:
- baseline: one row read in a session of its own per user and round, at once: what any
  request costs the loop, queued as 20 requests at once queue (the floor under recall's);
- cold: nothing kept (a cache that keeps nothing), every recall reads and unpacks its
  user's vectors: after a deploy, or when every user's vectors changed;
- kept: this process's cache as it is (app/memories/vector_cache.py), after one recall
  per user to fill it. A cache smaller than all the users' vectors evicts as it goes:
  the line before the table says how many users' vectors it holds (`--cache-mib`: the
  `memory_vector_cache_mib` setting);
- each of those two on the server's loop (recall's statements run where it is called:
  the code before the database lane, and a server whose budget has no lane) and on the
  lane (app/db/lane.py, its pool the default budget's share: what a server does);
- kept, query known, on the lane: each user asking its one question again (its vector
  is among the latest queries': no embedding), to tell the embedding's share of the lag;
- embedding alone: the users' queries embedded at once, no database.

Goal (issue 44): loop lag p99 <= 5 ms while the users recall.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from app.db.lane import DatabaseLane, lane_for
from app.memories import embedding, recall, vector_cache, vectors
from app.settings import Settings
from bench.common import freeze_heap
from bench.looplag.server import Probe

TOPICS = ("what do I like to drink", "where does my sister live", "what food should I avoid")


@dataclass
class Phase:
    times_ms: list[float] = field(default_factory=list)  # each recall's (or embedding's)
    lag_ms: list[float] = field(default_factory=list)


Worker = Callable[[Phase], Awaitable[None]]


def _query(user: int, turn: int) -> str:
    return f"{TOPICS[(user + turn) % len(TOPICS)]}, asks user {user} at turn {turn}"


def recaller(sessions: async_sessionmaker[AsyncSession], user: int, owner: uuid.UUID,
             turns: list[int]) -> Worker:  # fmt: skip
    async def work(phase: Phase) -> None:
        for turn in turns:
            started = time.perf_counter()
            async with sessions() as session:
                await recall.recall(session, owner, _query(user, turn), 5)
            phase.times_ms.append((time.perf_counter() - started) * 1000)

    return work


def one_query(
    sessions: async_sessionmaker[AsyncSession], owner: uuid.UUID, turns: list[int]
) -> Worker:
    """The baseline: a request that reads one row (the user's vector version) in a
    session of its own, what any endpoint costs the loop at least."""

    async def work(phase: Phase) -> None:
        for _ in turns:
            started = time.perf_counter()
            async with sessions() as session:
                await vectors.version(session, owner)
            phase.times_ms.append((time.perf_counter() - started) * 1000)

    return work


def embedder_of(embedder: embedding.Embedder, user: int, turns: list[int]) -> Worker:
    async def work(phase: Phase) -> None:
        for turn in turns:
            started = time.perf_counter()
            await embedder.embed([_query(user, turn)])
            phase.times_ms.append((time.perf_counter() - started) * 1000)

    return work


async def measured(workers: list[Worker]) -> Phase:
    """The workers all at once, the loop's lag recorded meanwhile."""
    phase, probe = Phase(), Probe()
    probe.start()
    try:
        await asyncio.gather(*(work(phase) for work in workers))
    finally:
        phase.lag_ms = probe.take()
        if probe.task is not None:
            probe.task.cancel()
    return phase


async def run(
    url: str, embedder: embedding.Embedder, owners: list[uuid.UUID], recalls: int, cache_bytes: int
) -> dict[str, Phase]:
    # One connection per user, as a server's pool serves its turns.
    engine = create_async_engine(url, pool_size=len(owners), max_overflow=0)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    users = list(enumerate(owners))
    embedding.install(embedder)
    kept_before = vector_cache.cache
    lane = _lane(url)
    freeze_heap()  # as the server does once started (app/lib/heap.py)
    turns = iter(range(6 * recalls + 3))  # every round's queries new: each is embedded

    async def recalling(rounds: list[int]) -> Phase:
        return await measured([recaller(sessions, i, owner, rounds) for i, owner in users])

    def new_rounds() -> list[int]:
        return [next(turns) for _ in range(recalls)]

    phases: dict[str, Phase] = {}
    try:
        phases["baseline: one row read"] = await measured(
            [one_query(sessions, owner, list(range(recalls))) for _, owner in users]
        )
        for where in ("the server's loop", "the lane"):
            if where == "the lane":
                lane.start()  # recall.recall finds it by the database it reads
            vector_cache.cache = vector_cache.VectorCache(max_bytes=0)
            phases[f"cold, on {where}"] = await recalling(new_rounds())
            vector_cache.cache = vector_cache.VectorCache(cache_bytes)
            await recalling([next(turns)])  # fills the cache
            phases[f"kept, on {where}"] = await recalling(new_rounds())
        # Where the lag comes from: kept recalls of a known query (no embedding), then
        # the queries' embeddings alone (no database).
        known = next(turns)
        await recalling([known])
        phases["kept, query known, on the lane"] = await recalling([known] * recalls)
        fresh = new_rounds()
        phases["embedding alone"] = await measured(
            [embedder_of(embedder, i, fresh) for i, _ in users]
        )
    finally:
        await lane.stop()
        vector_cache.cache = kept_before
        embedding.uninstall(embedder)
        await engine.dispose()
    return phases


def _lane(url: str) -> DatabaseLane:
    """The lane a server with the default connection budget runs."""
    lane = lane_for(Settings(database_url=url))
    assert lane is not None, "the default budget has a share for the lane"
    return lane


def users_kept(users: int, memories: int, dimensions: int, cache_bytes: int) -> str:
    each = memories * dimensions * 4
    held = min(users, cache_bytes // each) if each else users
    return (
        f"the cache holds {held} of {users} users' vectors "
        f"({each / 2**20:.1f} MiB each, memory_vector_cache_mib {cache_bytes >> 20})"
    )


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


HEADER = (
    "| dialect | phase | recalls | recall p50 | recall p99 | lag samples | lag p50 | lag p99 "
    "| lag max |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
)


def row(dialect: str, name: str, phase: Phase) -> str:
    recalls, lags = phase.times_ms, phase.lag_ms
    return (
        f"| {dialect} | {name} | {len(recalls)} | {pct(recalls, 0.5):.1f} ms "
        f"| {pct(recalls, 0.99):.1f} ms | {len(lags)} | {pct(lags, 0.5):.2f} ms "
        f"| {pct(lags, 0.99):.2f} ms | {max(lags, default=float('nan')):.1f} ms |"
    )
