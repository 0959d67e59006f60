"""The bench's writer, in a process of its own so its CPU does not delay the clients.

Reads `<rate> <seconds>` lines on stdin; for each, writes tool-activity progress updates
through app/threads/writer.py at that rate (one transaction each) and publishes them
after commit through Redis (RealtimeChannels, as a server process would). It prints
`c <thread_id> <seq> <monotonic>` as each commit is handed to the change sinks, then
`done <commits> <seconds>`. CLOCK_MONOTONIC is system-wide, so times compare across processes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from uuid import UUID

from sqlalchemy.ext.asyncio import async_sessionmaker

from app.db.config import build_sqlalchemy_config
from app.realtime.channels import RealtimeChannels
from app.realtime.events import Frame, MessageFrame
from app.realtime.sink import FrameSink
from app.settings import Settings
from app.threads import changes
from bench.fanout.load import write_at_rate


def stamp(thread_id: UUID, frame: Frame) -> None:
    if isinstance(frame, MessageFrame):
        sys.stdout.write(f"c {thread_id} {frame.seq} {time.monotonic()}\n")


async def main(database_url: str, redis_url: str, prefix: str, tools_json: str) -> None:
    tools = {UUID(k): UUID(v) for k, v in json.loads(tools_json).items()}
    settings = Settings(
        database_url=database_url, redis_url=redis_url, channels_prefix=prefix, runner_enabled=False
    )
    db_config = build_sqlalchemy_config(settings)
    factory = async_sessionmaker(db_config.get_engine(), expire_on_commit=False)
    changes.register(FrameSink(stamp))  # before the relay's sink: the stamp is the commit time
    loop = asyncio.get_running_loop()
    async with RealtimeChannels(settings, db_config):
        print("ready", flush=True)
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            rate, seconds = (float(x) for x in line.split())
            commits, elapsed = await write_at_rate(factory, tools, rate, seconds)
            sys.stdout.write(f"done {commits} {elapsed}\n")
            sys.stdout.flush()
    await db_config.get_engine().dispose()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
