"""A 2xx means committed: a write whose COMMIT fails answers 503 + Retry-After and
leaves nothing behind.

The COMMIT is made to fail for real, on both dialects, by a test-only tripwire: a trigger
on the written table inserts a row that breaks a `DEFERRABLE INITIALLY DEFERRED` foreign
key, which the database checks only at COMMIT.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from httpx import AsyncClient, Response
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from tests.api.support import assert_problem, create_thread, post_message
from tests.conftest import ApiUser

_TABLES = (
    "CREATE TABLE commit_tripwire_target (id INTEGER PRIMARY KEY)",
    "CREATE TABLE commit_tripwire (ref INTEGER REFERENCES commit_tripwire_target (id)"
    " DEFERRABLE INITIALLY DEFERRED)",
)


def _arm_statements(dialect: str, table: str, operation: str) -> list[str]:
    if dialect == "sqlite":
        return [
            f"CREATE TRIGGER commit_tripwire AFTER {operation} ON {table}"
            " BEGIN INSERT INTO commit_tripwire (ref) VALUES (-1); END"
        ]
    return [
        "CREATE FUNCTION commit_tripwire_fire() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN INSERT INTO commit_tripwire (ref) VALUES (-1); RETURN NULL; END $$",
        f"CREATE TRIGGER commit_tripwire AFTER {operation} ON {table}"
        " FOR EACH ROW EXECUTE FUNCTION commit_tripwire_fire()",
    ]


def _disarm_statements(dialect: str, table: str) -> list[str]:
    trigger = (
        ["DROP TRIGGER commit_tripwire"]
        if dialect == "sqlite"
        else [f"DROP TRIGGER commit_tripwire ON {table}", "DROP FUNCTION commit_tripwire_fire()"]
    )
    return [*trigger, "DROP TABLE commit_tripwire", "DROP TABLE commit_tripwire_target"]


@asynccontextmanager
async def failing_commit(
    db: AsyncSession, dialect: str, table: str, operation: str
) -> AsyncIterator[None]:
    """Every transaction that does `operation` on `table` fails at COMMIT."""
    for statement in (*_TABLES, *_arm_statements(dialect, table, operation)):
        await db.execute(text(statement))
    await db.commit()
    try:
        yield
    finally:
        for statement in _disarm_statements(dialect, table):
            await db.execute(text(statement))
        await db.commit()


def assert_retryable_503(response: Response) -> None:
    assert_problem(response, 503)
    assert int(response.headers["retry-after"]) > 0


async def test_message_whose_commit_fails_is_503_and_not_stored(
    client: AsyncClient, alice: ApiUser, db: AsyncSession, dialect: str
) -> None:
    thread = await create_thread(client, alice)
    async with failing_commit(db, dialect, "thread_messages", "INSERT"):
        response = await post_message(client, alice, thread["id"], "lost?")
    assert_retryable_503(response)

    page = await client.get(f"/api/threads/{thread['id']}/messages", headers=alice.headers)
    assert page.status_code == 200
    assert page.json()["items"] == []
    detail = await client.get(f"/api/threads/{thread['id']}", headers=alice.headers)
    assert detail.json()["active_run_id"] is None
    # The database is fine again: the same post now succeeds.
    assert (await post_message(client, alice, thread["id"], "again")).status_code == 202


async def test_rename_whose_commit_fails_is_503_and_keeps_the_old_title(
    client: AsyncClient, alice: ApiUser, db: AsyncSession, dialect: str
) -> None:
    thread = await create_thread(client, alice, title="before")
    async with failing_commit(db, dialect, "threads", "UPDATE"):
        response = await client.patch(
            f"/api/threads/{thread['id']}", json={"title": "after"}, headers=alice.headers
        )
    assert_retryable_503(response)

    detail = await client.get(f"/api/threads/{thread['id']}", headers=alice.headers)
    assert detail.json()["title"] == "before"


async def test_agent_whose_commit_fails_is_503_and_not_created(
    client: AsyncClient, alice: ApiUser, db: AsyncSession, dialect: str
) -> None:
    async with failing_commit(db, dialect, "agents", "INSERT"):
        response = await client.post(
            "/api/agents",
            json={"name": "ghost", "agent_type": "assistant"},
            headers=alice.headers,
        )
    assert_retryable_503(response)

    agents = await client.get("/api/agents", headers=alice.headers)
    assert "ghost" not in {agent["name"] for agent in agents.json()["items"]}
