"""Writer CPU per durable update: `uv run python -m bench.fanout.profile_writer [--profile]`.

A loop of tool-activity updates through app/threads/writer.py on a scratch PostgreSQL
database, one transaction each, as bench/fanout's writer does (held message, merged
without a reload). Reports this process's CPU (time.process_time) per update, which
holds up while other processes load the machine, and wall time for reference.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import time

from sqlalchemy.ext.asyncio import async_sessionmaker

from app.db.config import build_sqlalchemy_config
from app.db.models import ThreadMessage
from app.settings import Settings
from app.threads.writer import update_message
from bench.fanout.setup import create_database, drop_database, seed


async def loop(factory: async_sessionmaker, tools: dict, count: int) -> None:
    threads = list(tools)
    held: dict = {}
    for index in range(count):
        thread_id = threads[index % len(threads)]
        async with factory() as session:
            message = held.get(thread_id)
            if message is None:
                message = await session.get(ThreadMessage, tools[thread_id])
            else:
                message = await session.merge(message, load=False)
            activity = {**message.tool_activity, "display_message": f"Step {index}",
                        "data": {"progress": index}}  # fmt: skip
            await update_message(session, message, tool_activity=activity)
            await session.commit()
            held[thread_id] = message


async def main(args: argparse.Namespace) -> None:
    url, name = await create_database()
    try:
        config = build_sqlalchemy_config(Settings(database_url=url, runner_enabled=False))
        factory = async_sessionmaker(config.get_engine(), expire_on_commit=False)
        data = await seed(factory, 10)
        await loop(factory, data.tool_message_ids, 300)  # warm-up: caches, pool
        for _ in range(args.rounds):
            cpu, wall = time.process_time(), time.perf_counter()
            await loop(factory, data.tool_message_ids, args.count)
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            print(f"{args.count} updates: cpu {cpu / args.count * 1e3:.3f} ms/update, "
                  f"wall {wall / args.count * 1e3:.3f} ms/update")  # fmt: skip
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            await loop(factory, data.tool_message_ids, args.count)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
        await config.get_engine().dispose()
    finally:
        await drop_database(name)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    asyncio.run(main(parser.parse_args()))
