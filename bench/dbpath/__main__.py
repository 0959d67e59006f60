"""What one database transaction costs in CPU, by the path it takes to the driver.

`uv run python -m bench.dbpath [--dialects sqlite,postgresql] [--transactions 2000]`

A turn writes through SQLAlchemy's AsyncSession: a handful of short transactions, each a
few statements (docs/benchmarks.md: bench.realistic counts them). This prices one such
transaction on each path, in this process's CPU (user + system, threads included:
aiosqlite's worker thread does SQLite's part), on a fresh database:

- session: `async_sessionmaker()`, the statements, `commit()` (how the app writes);
- connection: `engine.begin()`, the statements (SQLAlchemy Core, no ORM session);
- driver: the pooled connection's driver (`AsyncConnection.get_raw_connection()`, public
  API) used directly: asyncpg's `transaction()` / aiosqlite's `commit()`; no SQLAlchemy.

Each transaction runs 1 or 3 copies of a hot statement's shape (`UPDATE … SET n = n + 1
WHERE id = … RETURNING n`, as the thread bump); "per statement" is the difference between
the two over 2. Rounds alternate the paths (three rounds, the median printed): the
machine's speed drifts, so compare paths within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
from collections.abc import Awaitable, Callable

from sqlalchemy import BigInteger, Column, Integer, MetaData, Table, bindparam, update
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from app.db.config import install_sqlite_pragmas
from bench.turn.setup import fresh_database

_metadata = MetaData()
_counters = Table(
    "bench_counters", _metadata, Column("id", Integer, primary_key=True), Column("n", BigInteger)
)
BUMP = (
    update(_counters)
    .where(_counters.c.id == bindparam("b_id"))
    .values(n=_counters.c.n + 1)
    .returning(_counters.c.n)
)
RAW_BUMP = {
    "postgresql": "UPDATE bench_counters SET n = n + 1 WHERE id = $1 RETURNING n",
    "sqlite": "UPDATE bench_counters SET n = n + 1 WHERE id = ? RETURNING n",
}

Transaction = Callable[[int], Awaitable[None]]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _paths(engine: AsyncEngine, driver: object) -> dict[str, Transaction]:
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    dialect = engine.dialect.name
    raw = RAW_BUMP[dialect]

    async def session(statements: int) -> None:
        async with sessions() as s:
            for _ in range(statements):
                (await s.execute(BUMP, {"b_id": 1})).scalar_one()
            await s.commit()

    async def connection(statements: int) -> None:
        async with engine.begin() as c:
            for _ in range(statements):
                (await c.execute(BUMP, {"b_id": 1})).scalar_one()

    async def asyncpg_driver(statements: int) -> None:
        async with driver.transaction():  # type: ignore[attr-defined]
            for _ in range(statements):
                await driver.fetchval(raw, 1)  # type: ignore[attr-defined]

    async def aiosqlite_driver(statements: int) -> None:
        for _ in range(statements):
            async with driver.execute(raw, (1,)) as cursor:  # type: ignore[attr-defined]
                await cursor.fetchall()
        await driver.commit()  # type: ignore[attr-defined]

    chosen = asyncpg_driver if dialect == "postgresql" else aiosqlite_driver
    return {"session": session, "connection": connection, "driver": chosen}


async def _cost(transaction: Transaction, statements: int, count: int) -> float:
    """CPU microseconds per transaction of `statements` statements."""
    for _ in range(count // 10):  # warm: caches, prepared statements
        await transaction(statements)
    before = _cpu()
    for _ in range(count):
        await transaction(statements)
    return (_cpu() - before) / count * 1e6


async def measure(url: str, count: int) -> dict[str, tuple[float, float]]:
    """Per path: (µs per 1-statement transaction, µs per further statement)."""
    engine = create_async_engine(url, pool_size=2, max_overflow=0)
    install_sqlite_pragmas(engine)  # WAL, synchronous=NORMAL: as the app's (SQLite only)
    async with engine.begin() as c:
        await c.run_sync(_metadata.create_all)
        await c.execute(_counters.insert().values(id=1, n=0))
    async with engine.connect() as held:  # the driver path's own pooled connection
        driver = (await held.get_raw_connection()).driver_connection
        rounds: dict[str, list[tuple[float, float]]] = {}
        for _ in range(3):
            for name, transaction in _paths(engine, driver).items():
                one = await _cost(transaction, 1, count)
                three = await _cost(transaction, 3, count)
                rounds.setdefault(name, []).append((one, (three - one) / 2))
    await engine.dispose()
    return {
        name: (
            statistics.median(r[0] for r in results),
            statistics.median(r[1] for r in results),
        )
        for name, results in rounds.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialects", default="sqlite,postgresql")
    parser.add_argument("--transactions", type=int, default=2000)
    args = parser.parse_args()
    print("dialect     path        µs/transaction (1 statement)  µs per further statement")
    for dialect in args.dialects.split(","):
        with fresh_database(dialect) as url:
            costs = asyncio.run(measure(url, args.transactions))
        for name, (one, further) in costs.items():
            print(f"{dialect:<11} {name:<11} {one:>28.0f}  {further:>24.0f}")


if __name__ == "__main__":
    main()
