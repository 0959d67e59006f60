"""`/api/health` (liveness: the process) and `/api/health/ready` (readiness: the database at
the latest migration, and Redis).

Liveness answers 200 whenever the process can answer at all: an orchestrator restarts a
process whose liveness fails, and a database blip must not restart every replica (a restart
cannot fix the database, and every replica would restart at once). Its body still says how
the database answered (within a second), for a person looking. Readiness is what a load
balancer routes by: 503 while the database is unreachable, its schema behind the code's
migrations, or Redis (when configured) unreachable.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Set
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from alembic.runtime.migration import MigrationContext
from litestar import get
from litestar.datastructures import State
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.lib.problems import DATABASE_RETRY_AFTER_SECONDS, ProblemException, problem_spec
from app.lib.schema import Schema

logger = logging.getLogger(__name__)

# Longest wait of liveness for the database's answer: under a probe's timeout (3 s in the
# image), and short of a pool exhausted by load (which is not a dead process either).
LIVENESS_DATABASE_WAIT_SECONDS = 1.0
# In app.state: the revisions the code knows (app/db/schema.py puts it there at startup).
EXPECTED_SCHEMA_KEY = "expected_schema"


class Health(Schema):
    status: Literal["ok", "degraded"]
    database: Literal["ok", "unavailable"]


class Readiness(Schema):
    status: Literal["ready"]
    database: Literal["ok"]
    redis: Literal["ok", "not_configured"]


@dataclass(frozen=True)
class ExpectedSchema:
    """The code's migrations: their heads, and every revision it knows."""

    heads: frozenset[str]
    known: frozenset[str]

    def behind(self, current: Set[str]) -> bool:
        """Whether a database at `current` still needs this code's migrations. A revision
        this code does not know means a newer release migrated it already (a rolling
        deploy): that schema is ahead, not behind (migrations stay backward compatible)."""
        if current - self.known:
            return False
        return not self.heads <= current


@runtime_checkable
class PubSub(Protocol):
    """What readiness needs of the realtime channels (app/realtime/channels.py)."""

    async def backend_ready(self) -> bool | None: ...


async def _check(db_engine: AsyncEngine, expected: ExpectedSchema | None = None) -> bool | None:
    """Whether the database answers (False: it does not); with `expected`, None when it
    answers but its schema is behind. A connection of its own, not the request's unit of
    work: a failed probe must answer its own body, not the 503 problem of a failed COMMIT."""
    try:
        async with db_engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
            if expected is not None and expected.behind(await _revisions(connection)):
                return None
    except Exception:
        logger.warning("health: database unavailable", exc_info=True)
        return False
    return True


async def _revisions(connection: AsyncConnection) -> set[str]:
    return await connection.run_sync(
        lambda sync: set(MigrationContext.configure(sync).get_current_heads())
    )


_checks: set[asyncio.Task[bool | None]] = set()  # liveness checks still waiting


async def _database_answers_soon(db_engine: AsyncEngine) -> bool:
    # Not cancelled at the deadline (a connection cancelled mid-query may not go back to
    # the pool cleanly): it finishes in the background and the probe answers meanwhile.
    check = asyncio.ensure_future(_check(db_engine))
    _checks.add(check)
    check.add_done_callback(_checks.discard)
    try:
        return bool(await asyncio.wait_for(asyncio.shield(check), LIVENESS_DATABASE_WAIT_SECONDS))
    except TimeoutError:
        return False


@get("/api/health", operation_id="GetHealth", tags=["health"], security=[])
async def health(db_engine: AsyncEngine) -> Health:
    """Liveness: 200 whenever the process answers, so a database outage restarts nothing;
    `database` says whether the database answered within a second (`status` is then
    `degraded`). Route traffic by `/api/health/ready`; no auth."""
    if not await _database_answers_soon(db_engine):
        return Health(status="degraded", database="unavailable")
    return Health(status="ok", database="ok")


@get(
    "/api/health/ready",
    operation_id="GetReadiness",
    tags=["health"],
    security=[],
    responses={
        503: problem_spec(
            "The database is unreachable or behind the code's migrations, or Redis (when "
            "configured) is unreachable"
        )
    },
)
async def readiness(db_engine: AsyncEngine, channels: PubSub, state: State) -> Readiness:
    """Whether this process can serve: the database answers with its schema at the latest
    migration, and Redis answers too when `REDIS_URL` is set. A load balancer routes traffic
    only to ready processes; no auth."""
    database = await _check(db_engine, state.get(EXPECTED_SCHEMA_KEY))
    redis = await channels.backend_ready()
    down = [name for name, ok in (("database", database), ("Redis", redis)) if ok is False]
    reasons = [f"{' and '.join(down)} unreachable"] if down else []
    if database is None:
        reasons.append("the database schema is behind: run `litestar database upgrade`")
    if reasons:
        problem = ProblemException(503, f"Not ready: {'; '.join(reasons)}.")
        problem.headers = {"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)}
        raise problem
    return Readiness(status="ready", database="ok", redis="ok" if redis else "not_configured")
