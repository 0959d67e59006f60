"""Fixtures for driving tools directly: a real ToolContext on each database."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.settings import Settings
from app.tools import assembly
from app.tools.base import ToolContext, ToolResult
from app.tools.events import RecordingToolEvents
from app.tools.runtime.executor import ToolCallCache, execute_tool_call
from app.tools.runtime.toolsets import effective_tools
from tests.conftest import ApiUser
from tests.factories import ThreadFactory


@dataclass
class ProgressRecorder:
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, display_message: str | None = None, data: Any = None) -> None:
        self.calls.append({"display_message": display_message, "data": data})


@dataclass
class ToolHarness:
    """Calls tools like the orchestrator does: one context, one run cache, recorded events."""

    ctx: ToolContext
    progress: ProgressRecorder
    events: RecordingToolEvents
    cache: ToolCallCache
    allowed: list[str]

    async def call(
        self, name: str, arguments: str | dict[str, Any] | None, **ctx_changes: Any
    ) -> ToolResult:
        ctx = self.ctx
        if ctx_changes:
            import dataclasses

            ctx = dataclasses.replace(ctx, **ctx_changes)
        return await execute_tool_call(
            assembly.get_registry(),
            ctx,
            name,
            arguments,
            allowed=self.allowed,
            cache=self.cache,
            events=self.events,
        )

    def new_run(self) -> None:
        self.cache = ToolCallCache()
        self.ctx.state.clear()
        self.ctx.run_id = uuid.uuid4()


MakeHarness = Callable[..., Awaitable[ToolHarness]]


@pytest.fixture
async def http_client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
async def make_harness(
    db: AsyncSession,
    session_factory: async_sessionmaker[AsyncSession],
    http_client: httpx.AsyncClient,
    settings: Settings,
) -> MakeHarness:
    async def make(api_user: ApiUser, tool_settings: Settings | None = None) -> ToolHarness:
        thread = ThreadFactory.build(owner_id=api_user.user.id, agent_id=api_user.agent.id)
        db.add(thread)
        await db.commit()
        progress = ProgressRecorder()
        ctx = ToolContext(
            user=api_user.user,
            agent=api_user.agent,
            thread_id=thread.id,
            run_id=uuid.uuid4(),
            tool_call_id=f"call_{uuid.uuid4().hex[:8]}",
            session_factory=session_factory,
            http=http_client,
            settings=tool_settings or settings,
            progress=progress,
        )
        allowed = effective_tools(api_user.agent.agent_type, api_user.agent.enabled_tools)
        return ToolHarness(ctx, progress, RecordingToolEvents(), ToolCallCache(), allowed)

    return make


@pytest.fixture
async def harness(make_harness: MakeHarness, alice: ApiUser) -> ToolHarness:
    return await make_harness(alice)


@pytest.fixture
def use_tools(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Swap the process registry for one holding these tool instances (builtins otherwise)."""
    from app.tools.runtime.registry import ToolRegistry

    def install(*tools: Any) -> None:
        by_name = {tool.name: tool for tool in tools}
        builtins = [by_name.pop(t.name, t) for t in assembly.builtin_tools()]
        reg = ToolRegistry([*builtins, *by_name.values()])
        monkeypatch.setattr(assembly, "get_registry", lambda: reg)

    return install


# The web tool fixtures (stub resolver, canaries, test CA), shared by the web tests.
from tests.tools.web_support import start_server, test_ca, web  # noqa: E402, F401
