"""0021_vector_version_triggers on a populated database, both dialects: a user whose vectors
were written before 0019 (no version row) gets one, a bumped user keeps theirs, and from
then on any write to memory_vectors bumps its owner's row; downgraded, writes bump nothing."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from uuid import UUID

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import create_async_engine
from uuid_utils.compat import uuid7

from app.db.models import Memory, User, memory_vector_versions, memory_vectors
from tests.support.databases import alembic

BEFORE, TRIGGERS = "0019_memory_vector_versions", "0021_vector_version_triggers"


def _populate(url: str) -> tuple[dict[str, UUID], dict[str, UUID]]:
    """Two users with a memory and its vector each: `bumped` has the version row the code
    of 0019 wrote (version 5), `older` none (vectors written before 0019)."""
    now = datetime.now(UTC)
    users = {"bumped": uuid7(), "older": uuid7()}
    memories = {name: uuid7() for name in users}

    async def write() -> None:
        engine = create_async_engine(url)
        async with engine.begin() as connection:
            for name, user_id in users.items():
                user = {"id": user_id, "email": f"{name}@example.com", "password_hash": "x"}
                await connection.execute(insert(User.__table__).values(**user, is_staff=False))
                memory = {"id": memories[name], "owner_id": user_id, "content": name}
                await connection.execute(
                    insert(Memory.__table__).values(**memory, created_at=now, updated_at=now)
                )
                await connection.execute(
                    insert(memory_vectors).values(
                        memory_id=memories[name], owner_id=user_id, model="m",
                        memory_updated_at=now, vector=b"\0" * 8,
                    )
                )  # fmt: skip
            await connection.execute(
                insert(memory_vector_versions).values(
                    owner_id=users["bumped"], version=5, updated_at=now
                )
            )
        await engine.dispose()

    asyncio.run(write())
    return users, memories


def _versions(url: str, *statements: object) -> dict[UUID, int]:
    """The version rows after running `statements` (plain writes) in one transaction."""

    async def run() -> dict[UUID, int]:
        engine = create_async_engine(url)
        async with engine.begin() as connection:
            for statement in statements:
                await connection.execute(statement)  # type: ignore[call-overload]
            table = memory_vector_versions.c
            rows = (await connection.execute(select(table.owner_id, table.version))).all()
        await engine.dispose()
        return {owner: version for owner, version in rows}

    return asyncio.run(run())


def test_vectors_written_before_get_a_version_and_every_write_bumps(empty_database: str) -> None:
    url = empty_database
    alembic(url, "upgrade", BEFORE)
    users, memories = _populate(url)
    bumped, older = users["bumped"], users["older"]
    alembic(url, "upgrade", TRIGGERS)
    assert _versions(url) == {bumped: 5, older: 1}

    v = memory_vectors.c
    rewrite = update(memory_vectors).where(v.memory_id == memories["older"]).values(vector=b"1")
    assert _versions(url, rewrite) == {bumped: 5, older: 2}
    gone = delete(memory_vectors).where(v.owner_id == bumped)
    assert _versions(url, gone) == {bumped: 6, older: 2}
    again = insert(memory_vectors).values(
        memory_id=memories["bumped"], owner_id=bumped, model="m",
        memory_updated_at=datetime.now(UTC), vector=b"2",
    )  # fmt: skip
    assert _versions(url, again) == {bumped: 7, older: 2}

    alembic(url, "downgrade", BEFORE)  # the triggers go, the rows stay
    assert _versions(url, rewrite, gone) == {bumped: 7, older: 2}
    alembic(url, "upgrade", "head")
