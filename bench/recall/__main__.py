"""Recall for a user with many memories: reading the vectors each time against keeping them.

`uv run python -m bench.recall [--dialects sqlite,postgresql] [--memories 10000] [--recalls 50]`

With `--users N` (N > 1): N users recalling at once, recall's times and the event loop's
lag meanwhile (bench/recall/concurrent.py). With `--save N`: what saving N memories costs,
without and with their vectors (bench/recall/saving.py).

One user with N memories, each with a vector of the embedded model's size (random unit
vectors: the scan's cost does not depend on what they mean), on a fresh database per
dialect. Each recall is what a turn does ahead of the model call (app/memories/recall.py:
the query's embedding, the vector scan, the full-text search, the fused rows read):

- cold: the user's vectors read and unpacked on every recall (the code before the cache:
  a new, empty `VectorCache` each time);
- kept: this process's cache (app/memories/vector_cache.py), read again only when the
  user's vectors changed (its one version row says so).

The query's embedding (the embedded model, on a thread) is timed alone too: it is most of
what a kept recall costs. Rounds alternate the two ways; p50 and p99 over all recalls.
The tables are vacuumed and analyzed after the fill, as a server's are by autovacuum.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
import uuid
from datetime import timedelta

import numpy as np
from sqlalchemy import insert, text
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from app.db.models import Memory, User, memory_vectors
from app.lib.time import utcnow
from app.memories import embedding, recall, vector_cache
from app.settings.memory import MemorySettings
from bench.recall import concurrent, saving
from bench.turn.setup import fresh_database

QUERIES = ("what do I like to drink", "where does my sister live", "what food should I avoid")
BATCH = 1000


async def _fill(sessions: async_sessionmaker[AsyncSession], count: int, dims: int) -> uuid.UUID:
    rng = np.random.default_rng(7)
    async with sessions() as session:
        user = User(email=f"bench-{uuid.uuid4().hex[:8]}@example.com", password_hash="x")
        session.add(user)
        await session.flush()
        start = utcnow() - timedelta(days=1)
        for first in range(0, count, BATCH):
            rows = []
            for i in range(first, min(count, first + BATCH)):
                at = start + timedelta(seconds=i)
                rows.append(
                    {"id": uuid.uuid4(), "owner_id": user.id, "content": f"memory {i} about "
                     f"topic {i % 97}", "created_at": at, "updated_at": at}
                )  # fmt: skip
            await session.execute(insert(Memory), rows)
            vectors = rng.standard_normal((len(rows), dims)).astype("<f4")
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            await session.execute(
                insert(memory_vectors),
                [
                    {"memory_id": r["id"], "owner_id": user.id, "model": EMBEDDER.model,
                     "memory_updated_at": r["updated_at"], "vector": v.tobytes()}
                    for r, v in zip(rows, vectors, strict=True)
                ],
            )  # fmt: skip
        await session.commit()
        return user.id


async def _as_autovacuum_leaves(engine: AsyncEngine) -> None:
    """The tables as a server's are once autovacuum has passed after the fill: with
    statistics (without, PostgreSQL's planner takes the user's 10,000 memories for a few
    and runs the full-text match on every row), and PostgreSQL's full-text index merged
    (rows inserted go to the GIN index's pending list, read linearly by every search until
    a vacuum merges it: a search of this fill cost ten times as much before)."""
    autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
    async with autocommit.connect() as connection:
        vacuum = "VACUUM ANALYZE" if engine.dialect.name == "postgresql" else "ANALYZE"
        await connection.execute(text(vacuum))


EMBEDDER = embedding.EmbeddedEmbedder()


async def _timed(work) -> float:
    started = time.perf_counter()
    await work()
    return (time.perf_counter() - started) * 1000


async def _run(dialect: str, url: str, memories: int, recalls: int) -> dict[str, list[float]]:
    engine = create_async_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    dims = (await EMBEDDER.embed(["warm up"])).shape[1]
    owner = await _fill(sessions, memories, dims)
    await _as_autovacuum_leaves(engine)
    embedding.install(EMBEDDER)
    times: dict[str, list[float]] = {"cold": [], "kept": [], "query embedding alone": []}

    async def one(query: str) -> None:
        async with sessions() as session:
            found, _ = await recall.recall(session, owner, query, 5)
            assert found is not None

    try:
        for round_ in range(recalls):
            query = QUERIES[round_ % len(QUERIES)]
            vector_cache.cache = vector_cache.VectorCache()  # cold: nothing kept
            times["cold"].append(await _timed(lambda q=query: one(q)))
            times["kept"].append(await _timed(lambda q=query: one(q)))  # kept from cold's
            times["query embedding alone"].append(await _timed(lambda q=query: EMBEDDER.embed([q])))
    finally:
        embedding.uninstall(EMBEDDER)
        await engine.dispose()
    return times


def _row(dialect: str, name: str, samples: list[float]) -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return f"| {dialect} | {name} | {statistics.median(samples):.1f} ms | {p99:.1f} ms |"


async def _run_users(url: str, users: int, memories: int, recalls: int, cache_mib: int) -> dict:
    engine = create_async_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    dims = (await EMBEDDER.embed(["warm up"])).shape[1]
    try:
        owners = [await _fill(sessions, memories, dims) for _ in range(users)]
        await _as_autovacuum_leaves(engine)
    finally:
        await engine.dispose()
    print(concurrent.users_kept(users, memories, dims, cache_mib << 20), flush=True)
    return await concurrent.run(url, EMBEDDER, owners, recalls, cache_mib << 20)


def main_users(args: argparse.Namespace) -> None:
    print(f"{args.users} users recalling at once, {args.memories} memories and {args.recalls} "
          "recalls each")  # fmt: skip
    rows = []
    for dialect in args.dialects.split(","):
        with fresh_database(dialect) as url:
            phases = asyncio.run(
                _run_users(url, args.users, args.memories, args.recalls, args.cache_mib)
            )
        rows += [concurrent.row(dialect, name, phase) for name, phase in phases.items()]
    print(concurrent.HEADER)
    print("\n".join(rows), flush=True)


def main_save(args: argparse.Namespace) -> None:
    print(f"one user saving {args.save} memories, then the keeper embedding them")
    print(saving.HEADER)
    for dialect in args.dialects.split(","):
        with fresh_database(dialect) as url:
            phases = asyncio.run(saving.run(url, EMBEDDER, args.save))
        for name, phase in phases.items():
            print(saving.row(dialect, name, phase, args.save), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dialects", default="sqlite,postgresql")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--recalls", type=int, default=50)
    parser.add_argument("--users", type=int, default=1, help="> 1: recalling at once")
    parser.add_argument("--cache-mib", type=int, default=MemorySettings.memory_vector_cache_mib)
    parser.add_argument("--save", type=int, default=0, help="> 0: what saving N costs")
    args = parser.parse_args()
    if args.save > 0:
        main_save(args)
        return
    if args.users > 1:
        main_users(args)
        return
    print(f"recall for one user with {args.memories} memories, {args.recalls} recalls each")
    print("| dialect | recall | p50 | p99 |\n| --- | --- | --- | --- |")
    for dialect in args.dialects.split(","):
        with fresh_database(dialect) as url:
            times = asyncio.run(_run(dialect, url, args.memories, args.recalls))
        for name, samples in times.items():
            print(_row(dialect, name, samples), flush=True)


if __name__ == "__main__":
    main()
