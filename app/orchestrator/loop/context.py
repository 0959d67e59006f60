"""What one run carries while it executes: dependencies, the agent's loop spec, counters."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import UUID

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.attachments.storage import Storage, storage_for
from app.db.models import Agent, Run, User
from app.db.reads import reading
from app.orchestrator.door.llm import ModelTarget, target_for
from app.orchestrator.door.profiles import load_profiles
from app.orchestrator.loop.delta_pace import DeltaPace
from app.orchestrator.loop.loop_lag import LoopLag
from app.orchestrator.scheduling.runs import NotAlone
from app.settings import Settings
from app.threads.fence import Fenced, Lease
from app.tools.runtime.executor import ToolCallCache
from app.tools.runtime.toolsets import AgentTypeConfig

T = TypeVar("T")
logger = logging.getLogger(__name__)


class ApprovalWaiters:
    """In-process wake-ups for runs waiting on the user (approval or device), by message id."""

    def __init__(self) -> None:
        self._events: dict[UUID, asyncio.Event] = {}

    def register(self, message_id: UUID) -> asyncio.Event:
        return self._events.setdefault(message_id, asyncio.Event())

    def release(self, message_id: UUID) -> None:
        self._events.pop(message_id, None)

    def wake(self, message_id: UUID) -> None:
        event = self._events.get(message_id)
        if event is not None:
            event.set()


def _forget_write(task: asyncio.Task[Any]) -> None:
    # a fenced write: the run says it, once; an end not alone: written again in a transaction
    if task.cancelled() or isinstance(task.exception(), (Fenced, NotAlone)):
        return
    if task.exception() is not None:
        logger.warning("a runner write failed: %r", task.exception())


@dataclass
class RunnerDeps:
    settings: Settings
    session_factory: async_sessionmaker[AsyncSession]
    http: httpx.AsyncClient
    owner: str
    approvals: ApprovalWaiters = field(default_factory=ApprovalWaiters)
    # Cells whose run waits for the user (message id -> run id): those runs hold no slot.
    parked: dict[UUID, UUID] = field(default_factory=dict)
    slot_freed: Callable[[], None] = lambda: None  # the worker claims more runs at once
    # Time between a reply's delta frames (the worker's LagProbe widens it under load).
    pace: DeltaPace = field(default_factory=lambda: DeltaPace(0.05, 0.15))
    # How far behind the event loop is (the worker's LagProbe; its busy-loop gate reads it).
    loop_lag: LoopLag = field(default_factory=LoopLag)
    # A write under this lease was refused (app/threads/fence.py): the worker stops its run.
    fenced: Callable[[Lease], None] = lambda lease: None

    _inflight: set[asyncio.Task[Any]] = field(default_factory=set)
    # Sessions for work that only reads (no BEGIN/COMMIT on PostgreSQL: app/db/reads.py).
    read_sessions: async_sessionmaker[AsyncSession] = field(init=False)
    image_store: Storage = field(init=False)  # attachments' bytes, for the model's images

    def __post_init__(self) -> None:
        self.read_sessions = reading(self.session_factory)
        self.image_store = storage_for(self.settings)

    async def write(
        self, work: Callable[[AsyncSession], Awaitable[T]], session: AsyncSession | None = None
    ) -> T:
        """One short transaction, committed explicitly (frames publish after commit): in a
        new session, or in `session` (a tool call's held unit of work, app/tools/unit.py).

        Shielded: cancelling a run never abandons a transaction halfway (on SQLite that
        would hold the write lock; on PostgreSQL the thread row lock); the caller sees the
        cancellation at once and the transaction finishes in the background.
        """
        return await asyncio.shield(self.background(self._transaction(work, session)))

    async def write_alone(self, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
        """`write` for work of one statement (atomic by itself): on PostgreSQL without
        BEGIN/COMMIT around it (app/db/reads.py); frames still publish after it."""
        return await self.write(work, self.read_sessions())

    def background(self, work: Awaitable[T]) -> asyncio.Task[T]:
        """Database work that finishes even if its caller is cancelled (see `settle`)."""
        task = asyncio.ensure_future(work)
        self._inflight.add(task)
        task.add_done_callback(_forget_write)
        task.add_done_callback(self._inflight.discard)
        return task

    async def _transaction(
        self, work: Callable[[AsyncSession], Awaitable[T]], session: AsyncSession | None
    ) -> T:
        async with session or self.session_factory() as current:
            try:
                result = await work(current)
            except Fenced as refused:  # rolled back as the session closes
                self.fenced(refused.lease)
                raise
            await current.commit()
            return result

    async def settle(self) -> None:
        """Wait for writes still finishing (e.g. those of a cancelled run's tasks)."""
        if self._inflight:
            await asyncio.wait(list(self._inflight), timeout=10)

    def parked_runs(self) -> int:
        return len(set(self.parked.values()))

    def model_target(self, agent: Agent, model: str | None = None) -> ModelTarget:
        """Where the agent's model calls go (or, given, `model`'s: a plan's remote step):
        the model's profile, else the `LLM_*` default."""
        settings = self.settings
        base = ModelTarget(
            model=model or agent.model or settings.llm_model,
            api_base=settings.llm_api_base,
            api_key=settings.llm_api_key,
            timeout=settings.llm_timeout_seconds,
            max_retries=settings.llm_max_retries,
            retry_base=settings.llm_retry_base_seconds,
            fast_stream=settings.llm_fast_stream,
            agent_type=agent.agent_type or "",
            max_connections=settings.llm_max_connections_per_provider,
            image_store=self.image_store,
            vision=(model or agent.model or settings.llm_model) in settings.llm_vision_models,
        )
        return target_for(base, load_profiles(settings.llm_profiles_file, settings.llm_profiles))


@dataclass
class LoopSpec:
    """One agent's loop: the run's own agent, or a specialist it delegated to."""

    agent: Agent
    config: AgentTypeConfig
    allowed: list[str]  # registry tools this loop may call
    # per tool the agent may use for some actions only (`tasks.list`), those actions
    actions: dict[str, frozenset[str]] = field(default_factory=dict)
    delegates: dict[str, Agent] = field(default_factory=dict)  # ask_<slug> -> specialist
    delegated_by: dict[str, Any] | None = None  # marks a specialist's tool activities
    disabled_delegates: frozenset[str] = frozenset()  # asking them: "currently disabled"
    depth: int = 0  # 0: the run's agent; n: a specialist asked through n delegations
    chain: tuple[UUID, ...] = ()  # the agents that asked, down to this one (never re-asked)
    # A plan's remote completion: the model (`<profile>/<model>`) answering instead.
    model: str | None = None
    # A specialist's text as it streams: the output of the ask_* cell that asked it.
    on_text: Callable[[str], Awaitable[None]] | None = None

    @property
    def writes_text(self) -> bool:
        """The run's agent streams assistant messages; a specialist's text is a tool result."""
        return self.delegated_by is None


@dataclass
class RunState:
    run: Run
    user: User
    options: dict[str, Any]
    cache: ToolCallCache = field(default_factory=ToolCallCache)
    tool_state: dict[str, Any] = field(default_factory=dict)
    calls_made: int = 0
    # The owner's specialist agents, enabled or not (delegation targets at any depth).
    specialists: list[Agent] = field(default_factory=list)
