"""What saving memories costs: `uv run python -m bench.recall --save 1000 [--dialects …]`

One user saves N memories one after another, each in a transaction of its own, as the
`memory` tool saves one (app/memories/services.save_memory: the row, its full-text entry,
the change announced): the cost of a save without meaning, what keyword recall alone
needs. Then the keeper embeds them (app/memories/keeper.embed_pending: batches of
`keeper.BATCH` texts through the embedded model, each batch's vectors stored in one
statement), as it does after saves: the cost meaning adds, and the embedded model's share
of it (the same texts embedded alone, no database). The loop's lag is probed meanwhile
(bench/looplag/server.py), as the keeper runs on a server's loop beside its users.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from app.db.models import User
from app.memories import embedding, keeper, services
from bench.looplag.server import Probe
from bench.recall.concurrent import pct

TOPICS = ("drinks", "family", "food", "travel", "work", "health", "books", "music")


@dataclass
class Phase:
    seconds: float = 0.0
    each_ms: list[float] = field(default_factory=list)
    lag_ms: list[float] = field(default_factory=list)


def _text(i: int) -> str:
    return f"note {i} on {TOPICS[i % len(TOPICS)]}: the user mentioned detail number {i * 7919}"


async def _user(sessions: async_sessionmaker[AsyncSession]) -> uuid.UUID:
    async with sessions() as session:
        user = User(email=f"bench-{uuid.uuid4().hex[:8]}@example.com", password_hash="x")
        session.add(user)
        await session.commit()
        return user.id


async def _probed(phase: Phase, work) -> Phase:
    probe = Probe()
    probe.start()
    started = time.perf_counter()
    try:
        await work()
    finally:
        phase.seconds = time.perf_counter() - started
        phase.lag_ms = probe.take()
        if probe.task is not None:
            probe.task.cancel()
    return phase


async def run(url: str, embedder: embedding.Embedder, count: int) -> dict[str, Phase]:
    engine = create_async_engine(url)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    owner = await _user(sessions)
    await embedder.embed(["warm up"])  # the model loaded before anything is timed
    phases = {"save (no vectors)": Phase(), "embed and store (keeper)": Phase()}

    async def save_all() -> None:
        for i in range(count):
            started = time.perf_counter()
            async with sessions() as session:
                await services.save_memory(session, owner, content=_text(i), key=f"note-{i}")
                await session.commit()
            phases["save (no vectors)"].each_ms.append((time.perf_counter() - started) * 1000)

    async def embed_all() -> None:
        stored = await keeper.embed_pending(sessions, embedder)
        assert stored == count, stored

    async def model_alone() -> None:
        texts = [f"note-{i}: {_text(i)}" for i in range(count)]
        for first in range(0, count, keeper.BATCH):
            await embedder.embed(texts[first : first + keeper.BATCH])

    try:
        await _probed(phases["save (no vectors)"], save_all)
        await _probed(phases["embed and store (keeper)"], embed_all)
        phases["the model alone"] = await _probed(Phase(), model_alone)
    finally:
        await engine.dispose()
    return phases


HEADER = (
    "| dialect | phase | total | per memory | save p50 / p99 | lag p50 / p99 / max |\n"
    "| --- | --- | --- | --- | --- | --- |"
)


def row(dialect: str, name: str, phase: Phase, count: int) -> str:
    saves = (
        f"{pct(phase.each_ms, 0.5):.2f} / {pct(phase.each_ms, 0.99):.2f} ms"
        if phase.each_ms
        else "-"
    )
    lags = phase.lag_ms
    return (
        f"| {dialect} | {name} | {phase.seconds:.2f} s | {phase.seconds * 1000 / count:.2f} ms "
        f"| {saves} | {pct(lags, 0.5):.2f} / {pct(lags, 0.99):.2f} / "
        f"{max(lags, default=float('nan')):.1f} ms |"
    )
