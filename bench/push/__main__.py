"""`uv run python -m bench.push [--devices 500] [--turns 300] [--dialect postgresql]`

1. Pushes per second: one test event fanned out to N devices and sent through the fake
   APNs server of the tests (HTTP/2, TLS, JWT checked), until every delivery is `sent`.
2. The extra cost per turn of push when no push is due (push on, the user has no device):
   a run's ending transaction with the push hook registered against the same without.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from app.db.models import Device, PushDelivery, PushEvent, Run, Thread
from app.lib.time import utcnow
from app.push.apns import ApnsClient
from app.push.events import PushHook
from app.push.sender import PushSender
from app.settings import Settings
from app.threads import changes
from bench.common import add_user_with_agent
from tests.push.conftest import BUNDLE, apns_overrides
from tests.support.databases import create_postgres_database, migrate, sqlite_url
from tests.support.fake_apns import FakeApns


async def pushes_per_second(sessions, settings, postgres: bool, devices: int) -> float:
    async with sessions() as session:
        user, _ = await add_user_with_agent(
            session,
            email="push@bench",
            password_hash="x",
            token=secrets.token_hex(8),
            agent_type="general",
        )
        for _ in range(devices):
            session.add(
                Device(
                    user_id=user.id,
                    token=secrets.token_hex(32),
                    environment="sandbox",
                    bundle_id=BUNDLE,
                )
            )
        session.add(PushEvent(kind="test", event_key="test:bench", user_id=user.id))
        await session.commit()
    client = ApnsClient(settings)
    sender = PushSender(settings, sessions, client, postgres=postgres)
    started = time.perf_counter()
    while await sender.cycle():
        pass
    elapsed = time.perf_counter() - started
    await client.aclose()
    async with sessions() as session:
        sent = await session.scalar(
            select(func.count()).select_from(PushDelivery).where(PushDelivery.status == "sent")
        )
    assert sent == devices, (sent, devices)
    return devices / elapsed


async def turn_end_cost(sessions, turns: int, hooked: bool) -> list[float]:
    async with sessions() as session:
        user, agent = await add_user_with_agent(
            session,
            email=f"turn-{hooked}@bench",
            password_hash="x",
            token=secrets.token_hex(8),
            agent_type="general",
        )
        thread = Thread(owner_id=user.id, agent_id=agent.id, last_activity_at=utcnow())
        session.add(thread)
        await session.commit()
    hook = PushHook()
    if hooked:
        changes.register_hook(hook)
    times = []
    try:
        for _ in range(turns):
            async with sessions() as session:
                run = Run(thread_id=thread.id, agent_id=agent.id, status="running")
                session.add(run)
                await session.commit()
                started = time.perf_counter()
                run.status = "completed"
                changes.run_changed(session, run)
                await session.commit()
                times.append(time.perf_counter() - started)
    finally:
        changes.unregister_hook(hook)
    return times


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as directory:
        if args.dialect == "postgresql":
            url, _ = create_postgres_database()
        else:
            url = sqlite_url(Path(directory))
        migrate(url)
        async with FakeApns(Path(directory)) as apns:
            settings = Settings(database_url=url, **apns_overrides(apns))
            engine = create_async_engine(url)
            sessions = async_sessionmaker(engine, expire_on_commit=False)
            postgres = args.dialect == "postgresql"
            rate = await pushes_per_second(sessions, settings, postgres, args.devices)
            print(f"{args.dialect}: {args.devices} pushes at {rate:.0f}/s through the fake APNs")
            plain = await turn_end_cost(sessions, args.turns, hooked=False)
            hooked = await turn_end_cost(sessions, args.turns, hooked=True)
            extra = (statistics.median(hooked) - statistics.median(plain)) * 1000
            print(
                f"{args.dialect}: run-ending commit p50 {statistics.median(plain) * 1000:.2f} ms "
                f"without push, {statistics.median(hooked) * 1000:.2f} ms with push on "
                f"(no device): {extra:+.2f} ms per turn"
            )
            await engine.dispose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--devices", type=int, default=500)
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--dialect", choices=("sqlite", "postgresql"), default="sqlite")
    asyncio.run(main(parser.parse_args()))
