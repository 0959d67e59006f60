"""`/api/health` (liveness and the database) and `/api/health/ready` (readiness)."""

from __future__ import annotations

import logging
from typing import Literal, Protocol, runtime_checkable

from litestar import Response, get
from litestar.openapi.datastructures import ResponseSpec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.problems import DATABASE_RETRY_AFTER_SECONDS, ProblemException, problem_spec
from app.lib.schema import Schema

logger = logging.getLogger(__name__)


class Health(Schema):
    status: Literal["ok", "degraded"]
    database: Literal["ok", "unavailable"]


class Readiness(Schema):
    status: Literal["ready"]
    database: Literal["ok"]
    redis: Literal["ok", "not_configured"]


@runtime_checkable
class PubSub(Protocol):
    """What readiness needs of the realtime channels (app/realtime/channels.py)."""

    async def backend_ready(self) -> bool | None: ...


async def _database_ok(db_engine: AsyncEngine) -> bool:
    # A connection of its own, not the request's unit of work: a failed probe must answer
    # its own body, not the 503 problem of a failed COMMIT.
    try:
        async with db_engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception:
        logger.warning("health: database unavailable", exc_info=True)
        return False
    return True


@get(
    "/api/health",
    operation_id="GetHealth",
    tags=["health"],
    security=[],
    responses={503: ResponseSpec(Health, description="The database is unreachable")},
)
async def health(db_engine: AsyncEngine) -> Response[Health]:
    """Liveness and database reachability; no auth."""
    if not await _database_ok(db_engine):
        return Response(
            Health(status="degraded", database="unavailable"),
            status_code=503,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
    return Response(Health(status="ok", database="ok"))


@get(
    "/api/health/ready",
    operation_id="GetReadiness",
    tags=["health"],
    security=[],
    responses={503: problem_spec("The database or Redis (when configured) is unreachable")},
)
async def readiness(db_engine: AsyncEngine, channels: PubSub) -> Readiness:
    """Whether this process can serve: the database answers, and Redis too when `REDIS_URL`
    is set. A load balancer routes traffic only to ready processes; no auth."""
    database_ok = await _database_ok(db_engine)
    redis = await channels.backend_ready()
    down = [name for name, ok in (("database", database_ok), ("Redis", redis)) if ok is False]
    if down:
        problem = ProblemException(503, f"Not ready: {' and '.join(down)} unreachable.")
        problem.headers = {"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)}
        raise problem
    return Readiness(status="ready", database="ok", redis="ok" if redis else "not_configured")
