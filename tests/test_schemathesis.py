"""Property-based run of every operation: no input, however malformed, gets a 500, and
every answer matches the documented schema, status codes and media types.

The app under test is one of its own per dialect, served by schemathesis' ASGI client on
schemathesis' event-loop thread (its engine's connections never cross loops). Rows it
creates are removed afterwards.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from datetime import timedelta

import pytest
import schemathesis
from litestar import Litestar
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from app import create_app
from app.db.base import metadata
from app.db.models import Agent, ApiToken, User
from app.lib.security import hash_password, new_token, token_digest
from app.lib.time import utcnow
from app.settings import Settings

# schemathesis.toml reads the bearer token from here when the schema is loaded.
API_TOKEN = os.environ.setdefault("APP_API_TOKEN", new_token())

# The schema is loaded once from an app that never touches its database.
schema = schemathesis.openapi.from_asgi(
    "/schema/openapi.json",
    create_app(Settings(database_url="sqlite+aiosqlite:///:memory:", runner_enabled=False)),
)


async def _reset(database_url: str, *, seed: bool) -> None:
    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.begin() as conn:
            for table in reversed(metadata.sorted_tables):
                await conn.execute(table.delete())
            if seed:
                user = User(email="fuzz@example.com", password_hash=hash_password("fuzz-password"))
                await conn.run_sync(lambda sync: _seed(sync, user))
    finally:
        await engine.dispose()


def _seed(connection: object, user: User) -> None:
    from sqlalchemy.orm import Session

    with Session(bind=connection) as session:  # type: ignore[arg-type]
        session.add(user)
        session.flush()
        session.add(
            ApiToken(
                user_id=user.id,
                token_hash=token_digest(API_TOKEN),
                expires_at=utcnow() + timedelta(days=1),
            )
        )
        session.add(Agent(owner_id=user.id, name="fuzz agent", agent_type="assistant"))
        session.flush()


@pytest.fixture(scope="module")
def fuzz_app(database_url: str) -> Iterator[Litestar]:
    asyncio.run(_reset(database_url, seed=True))
    yield create_app(Settings(database_url=database_url, runner_enabled=False))
    asyncio.run(_reset(database_url, seed=False))


@schema.parametrize()
def test_api_conforms_to_its_schema(case: schemathesis.Case, fuzz_app: Litestar) -> None:
    case.call_and_validate(app=fuzz_app)


def test_fuzzing_is_authenticated(fuzz_app: Litestar) -> None:
    """Guard against a silently unauthenticated run (every case a 401 would still pass)."""
    from hypothesis import given, settings

    operation = schema["/api/me"]["GET"]
    statuses: set[int] = set()

    @given(case=operation.as_strategy())
    @settings(max_examples=5, deadline=None)
    def run(case: schemathesis.Case) -> None:
        statuses.add(case.call(app=fuzz_app).status_code)

    run()
    assert 200 in statuses, statuses
