"""Helpers for orchestrator tests: post through the API, wait on published frames."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import httpx
import msgspec
from litestar import Litestar
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent, Run, ThreadMessage
from app.realtime.events import Frame, MessageFrame, RunFrame
from app.realtime.sink import FrameSink
from app.threads import changes
from app.threads.activity import OPEN_STATUSES as OPEN
from tests.conftest import ApiUser, make_api_user
from tests.support.fake_llm import FakeLLM

TERMINAL = {"completed", "failed", "cancelled"}


class FrameRecorder:
    """Every frame published in this process, and a way to wait for one."""

    def __init__(self) -> None:
        self.frames: list[tuple[UUID, Frame]] = []
        self._changed = asyncio.Event()

    def __call__(self, thread_id: UUID, frame: Frame) -> None:
        self.frames.append((thread_id, frame))
        self._changed.set()

    @contextmanager
    def listening(self) -> Iterator[None]:
        sink = FrameSink(self)
        changes.register(sink)
        try:
            yield
        finally:
            changes.unregister(sink)

    def cells(self) -> list[dict]:
        """Every tool cell as a `message` frame carried it, in the order published."""
        return [
            msgspec.to_builtins(frame.message.tool_activity)
            for _, frame in self.frames
            if isinstance(frame, MessageFrame) and frame.message.tool_activity is not None
        ]

    def cell_ends(self, thread_id: str) -> dict[str, list[tuple[str, str | None]]]:
        """Per tool of the thread: each frame that showed its cell ended (status,
        error_type): exactly one per cell is the promise (a frame is a committed write)."""
        ends: dict[str, list[tuple[str, str | None]]] = {}
        for _, frame in self.frames:
            if not isinstance(frame, MessageFrame) or str(frame.message.thread_id) != thread_id:
                continue
            activity = frame.message.tool_activity
            if activity is not None and activity.status in ("success", "failure"):
                ends.setdefault(activity.name, []).append((activity.status, activity.error_type))
        return ends

    async def wait_for(self, predicate: Callable[[Frame], bool], timeout: float = 10) -> Frame:  # noqa: ASYNC109
        async with asyncio.timeout(timeout):
            seen = 0
            while True:
                for _, frame in self.frames[seen:]:
                    if predicate(frame):
                        return frame
                seen = len(self.frames)
                self._changed.clear()
                await self._changed.wait()


@dataclass
class OrchestratorApi:
    client: httpx.AsyncClient
    db: AsyncSession
    app: Litestar
    llm: FakeLLM
    frames: FrameRecorder
    user: ApiUser

    @classmethod
    async def create(cls, client, db, app, llm, frames) -> OrchestratorApi:
        user = await make_api_user(db)
        user.agent.agent_type = "tester"
        await db.commit()
        return cls(client, db, app, llm, frames, user)

    @property
    def headers(self) -> dict[str, str]:
        return self.user.headers

    async def add_agent(self, **fields: Any) -> Agent:
        agent = Agent(owner_id=self.user.user.id, **fields)
        self.db.add(agent)
        await self.db.commit()
        return agent

    async def new_thread(self, agent_id: UUID | None = None) -> str:
        body = {"agent_id": str(agent_id or self.user.agent.id)}
        response = await self.client.post("/api/threads", json=body, headers=self.headers)
        assert response.status_code == 201, response.text
        return response.json()["id"]

    async def post(self, thread_id: str, content: str, **extra: Any) -> httpx.Response:
        return await self.client.post(
            f"/api/threads/{thread_id}/messages",
            json={"content": content, **extra},
            headers=self.headers,
        )

    async def decide(self, thread_id: str, message_id: str, approve: bool) -> httpx.Response:
        """The user's approval decision on the waiting cell of `message_id`."""
        return await self.client.post(
            f"/api/threads/{thread_id}/messages/{message_id}/approval",
            json={"approve": approve},
            headers=self.headers,
        )

    async def turn(
        self, content: str, thread_id: str | None = None, **extra: Any
    ) -> tuple[str, dict]:
        """Post a message and wait for its run to end: (thread id, final run)."""
        thread_id = thread_id or await self.new_thread()
        response = await self.post(thread_id, content, **extra)
        assert response.status_code == 202, response.text
        return thread_id, await self.wait_run(thread_id, response.json()["run"]["id"])

    async def get_run(self, thread_id: str, run_id: str) -> dict:
        response = await self.client.get(
            f"/api/threads/{thread_id}/runs/{run_id}", headers=self.headers
        )
        return response.json()

    async def wait_run(self, thread_id: str, run_id: str, timeout: float = 10) -> dict:  # noqa: ASYNC109
        def ended(frame: Frame) -> bool:
            return (
                isinstance(frame, RunFrame)
                and str(frame.run.id) == run_id
                and frame.run.status in TERMINAL
            )

        run = await self.get_run(thread_id, run_id)
        if run["status"] not in TERMINAL:
            await self.frames.wait_for(ended, timeout)
            run = await self.get_run(thread_id, run_id)
        return run

    async def wait_activity(
        self,
        status: str,
        name: str | None = None,
        timeout: float = 10,  # noqa: ASYNC109
        display_message: str | None = None,
    ) -> dict:
        def match(frame: Frame) -> bool:
            if not isinstance(frame, MessageFrame) or frame.message.tool_activity is None:
                return False
            activity = frame.message.tool_activity
            if display_message is not None and activity.display_message != display_message:
                return False
            return activity.status == status and (name is None or activity.name == name)

        frame = await self.frames.wait_for(match, timeout)
        return msgspec.to_builtins(frame.message)  # type: ignore[attr-defined]

    async def messages(self, thread_id: str) -> list[dict]:
        response = await self.client.get(
            f"/api/threads/{thread_id}/messages?limit=100", headers=self.headers
        )
        assert response.status_code == 200, response.text
        return response.json()["items"]

    async def tool_messages(self, thread_id: str) -> list[dict]:
        return [m for m in await self.messages(thread_id) if m["role"] == "tool"]

    async def drain(self, timeout: float = 10) -> None:  # noqa: ASYNC109
        """End the test with nothing executing (cancel leftovers)."""
        worker = self.app.state.run_worker
        await self.db.execute(update(Run).where(Run.status == "queued").values(status="cancelled"))
        await self.db.commit()
        for execution in list(worker.executions.values()):
            execution.stop("cancelled")
        async with asyncio.timeout(timeout), worker.finished:
            await worker.finished.wait_for(lambda: not worker.executions)
        # the contract's invariant, checked after every test: no cell is left open
        self.db.expire_all()
        tools = await self.db.scalars(select(ThreadMessage).where(ThreadMessage.role == "tool"))
        still_open = [m.tool_activity for m in tools if m.tool_activity["status"] in OPEN]
        assert not still_open, still_open
