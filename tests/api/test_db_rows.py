"""app/db/rows.py: `insert_new` (one INSERT past the unit of work, the instance left as
a flush leaves it; a model whose database fills a column in keeps the flush) and
`adopt_rows` (rows of a Core UPDATE … RETURNING as instances, as the ORM form leaves
them); `insert_new_if` (the insert and the check that guards it in one statement)."""

from __future__ import annotations

from uuid import uuid4

from sqlalchemy import Integer, String, bindparam, exists, inspect, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from app.db import direct
from app.db.models import Agent, Run, Task, Thread, User
from app.db.rows import adopt_joined, adopt_rows, insert_new, insert_new_if, insert_where
from app.lib.time import utcnow
from app.threads import repository
from tests.conftest import ApiUser


async def test_inserted_row_is_complete_persistent_and_stored(
    db: AsyncSession, alice: ApiUser
) -> None:
    owner_id = alice.user.id
    task = await insert_new(db, Task(owner_id=owner_id, title="Buy milk"))
    state = inspect(task)
    assert state.persistent and not state.modified  # nothing left for a flush
    assert task.id.version == 7 and task.status == "active"  # the column defaults
    assert task.created_at is not None and task.updated_at is not None
    assert task.notes is None
    task.status = "completed"  # usable in the same transaction like any flushed row
    await db.commit()
    task_id, created_at = task.id, task.created_at

    db.expire_all()
    stored = await db.scalar(select(Task).where(Task.id == task_id))
    assert stored is not None
    assert (stored.title, stored.status, stored.owner_id) == ("Buy milk", "completed", owner_id)
    assert stored.created_at == created_at


async def test_rows_the_session_holds_unwritten_go_first(db: AsyncSession, alice: ApiUser) -> None:
    thread = Thread(
        id=uuid4(), owner_id=alice.user.id, agent_id=alice.agent.id, last_activity_at=utcnow()
    )
    db.add(thread)  # pending: the run's foreign key needs it written first
    run = await insert_new(db, Run(thread_id=thread.id, agent_id=alice.agent.id))
    await db.commit()
    thread_id, run_id = thread.id, run.id
    db.expire_all()
    stored = await db.scalar(select(Run).where(Run.thread_id == thread_id))
    assert stored is not None and stored.id == run_id and stored.status == "queued"


_TASK_IF_AGENT_NAMED = insert_where(
    Task, exists().where(Agent.id == bindparam("agent_id"), Agent.name == bindparam("name"))
)


async def test_a_row_inserted_if_its_condition_holds(db: AsyncSession, alice: ApiUser) -> None:
    owner_id, agent_id = alice.user.id, alice.agent.id
    name = await db.scalar(select(Agent.name).where(Agent.id == agent_id))
    agent = {"agent_id": agent_id, "name": name}
    task = Task(owner_id=owner_id, title="kept", agent_id=agent_id)
    inserted = await insert_new_if(db, task, _TASK_IF_AGENT_NAMED, agent)
    refused = await insert_new_if(
        db,
        Task(owner_id=alice.user.id, title="refused"),
        _TASK_IF_AGENT_NAMED,
        {**agent, "name": "no such agent"},
    )
    assert inserted is task and refused is None
    assert inspect(task).persistent and not inspect(task).modified
    assert task.status == "active"  # the column's default, filled in
    await db.commit()
    db.expire_all()
    titles = (await db.scalars(select(Task.title).where(Task.owner_id == owner_id))).all()
    assert titles == ["kept"]


async def test_adopted_rows_are_attached_and_held_ones_updated(
    db: AsyncSession, alice: ApiUser
) -> None:
    held = await insert_new(db, Task(owner_id=alice.user.id, title="held"))
    other = await insert_new(db, Task(owner_id=alice.user.id, title="other"))
    await db.commit()
    db.expunge(other)  # a row this session does not hold
    tasks = Task.__table__
    rows = await db.execute(
        update(tasks)
        .where(tasks.c.id.in_([held.id, other.id]))
        .values(status="completed")
        .returning(*tasks.c)
    )
    adopted = sorted(adopt_rows(db, Task, rows.mappings()), key=lambda t: t.title)
    assert adopted[0] is held  # the session's own instance, refreshed in place
    assert adopted[1] is not other and adopted[1].id == other.id
    for task in adopted:
        state = inspect(task)
        assert state.persistent and not state.modified
        assert task.status == "completed" and task.owner_id == alice.user.id
    adopted[1].notes = "tracked like any loaded row"
    await db.commit()
    db.expire_all()
    assert await db.scalar(select(Task.notes).where(Task.id == other.id)) == (
        "tracked like any loaded row"
    )


async def test_joined_rows_become_the_instances_an_orm_select_loads(
    db: AsyncSession, session_factory: async_sessionmaker[AsyncSession], alice: ApiUser
) -> None:
    new = Thread(owner_id=alice.user.id, agent_id=alice.agent.id, last_activity_at=utcnow())
    thread = await insert_new(db, new)
    await db.commit()
    params = {"thread_id": thread.id, "agent_id": alice.agent.id}
    async with session_factory() as session:
        row = (await direct.execute(session, repository.RUN_CONTEXT, params)).first()
        adopted = adopt_joined(session, repository.RUN_CONTEXT_MODELS, row)
        assert [type(instance) for instance in adopted] == [Thread, Agent, User]
        assert all(inspect(i).persistent and not inspect(i).modified for i in adopted)
        assert adopted[0] is await session.get(Thread, thread.id)  # the session's own
    async with session_factory() as session:
        loaded = (
            await session.execute(
                select(Thread, Agent, User)
                .select_from(Thread)
                .join(Agent, Agent.id == alice.agent.id)
                .join(User, User.id == Thread.owner_id)
                .where(Thread.id == thread.id)
            )
        ).one()
    for mine, orm in zip(adopted, loaded, strict=True):
        names = [attribute.key for attribute in mine.__mapper__.column_attrs]
        assert {n: getattr(mine, n) for n in names} == {n: getattr(orm, n) for n in names}


class _Other(DeclarativeBase):
    pass


class _Counter(_Other):
    __tablename__ = "counters"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    label: Mapped[str] = mapped_column(String, server_default=text("'fresh'"))


async def test_a_column_the_database_fills_in_is_read_back() -> None:
    engine = create_async_engine("sqlite+aiosqlite://")
    async with engine.begin() as connection:
        await connection.run_sync(_Other.metadata.create_all)
    async with AsyncSession(engine, expire_on_commit=False) as session:
        counter = await insert_new(session, _Counter(id=1))  # type: ignore[type-var]
        assert counter.label == "fresh"
        await session.commit()
    await engine.dispose()
