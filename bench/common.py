"""What the benchmarks share: a user with a bearer token and one agent, helper processes
that print their URL (and the fake model's side of that), and waiting for a server to
answer."""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import time
from datetime import timedelta
from typing import TYPE_CHECKING

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent, ApiToken, User
from app.lib.security import token_digest
from app.lib.time import utcnow
from app.settings import PROJECT_ROOT

if TYPE_CHECKING:
    from tests.support.fake_llm import FakeLLM


async def add_user_with_agent(
    session: AsyncSession, *, email: str, password_hash: str, token: str, agent_type: str
) -> tuple[User, Agent]:
    """Flush a user, a day-long token for it and an agent named `bench`."""
    user = User(email=email, password_hash=password_hash)
    session.add(user)
    await session.flush()
    session.add(
        ApiToken(
            user_id=user.id, token_hash=token_digest(token), expires_at=utcnow() + timedelta(days=1)
        )
    )
    agent = Agent(owner_id=user.id, name="bench", agent_type=agent_type)
    session.add(agent)
    await session.flush()
    return user, agent


def freeze_heap() -> None:
    """Keep what this benchmark process holds so far (its imports: SQLAlchemy, the app)
    out of full garbage collections, as the server does (app/lib/heap.py). Otherwise one
    full collection, ~100 ms here, pauses the client's or the fake model's loop
    mid-measurement, and the pause is counted as the server's. Call it before measuring."""
    gc.collect()
    gc.freeze()


def start_url_process(module: str) -> tuple[subprocess.Popen[str], str]:
    """`python -m module` (a fake model server): the process and the base URL it prints
    first. It runs until its stdin is closed."""
    process = subprocess.Popen(
        [sys.executable, "-m", module],
        cwd=PROJECT_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


async def serve_until_stdin_closes(llm: FakeLLM) -> None:
    """The fake model's side of `start_url_process`: print its base URL, serve until the
    benchmark closes our stdin."""
    async with llm:
        freeze_heap()
        print(llm.base_url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


def wait_ready(url: str, process: subprocess.Popen | None = None, timeout: float = 60) -> None:
    """Poll `url` until it answers 200 (a server starting up); fail at once if `process`
    (the server) exits first, or after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")
