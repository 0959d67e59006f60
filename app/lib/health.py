from __future__ import annotations

import logging
from typing import Literal

from litestar import Response, get
from litestar.openapi.datastructures import ResponseSpec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.lib.problems import DATABASE_RETRY_AFTER_SECONDS
from app.lib.schema import Schema

logger = logging.getLogger(__name__)


class Health(Schema):
    status: Literal["ok", "degraded"]
    database: Literal["ok", "unavailable"]


@get(
    "/api/health",
    operation_id="GetHealth",
    tags=["health"],
    security=[],
    responses={503: ResponseSpec(Health, description="The database is unreachable")},
)
async def health(db_engine: AsyncEngine) -> Response[Health]:
    """Liveness and database reachability; no auth."""
    # A connection of its own, not the request's unit of work: a failed probe must answer
    # this body, not the 503 problem of a failed COMMIT.
    try:
        async with db_engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
    except Exception:
        logger.warning("health: database unavailable", exc_info=True)
        return Response(
            Health(status="degraded", database="unavailable"),
            status_code=503,
            headers={"Retry-After": str(DATABASE_RETRY_AFTER_SECONDS)},
        )
    return Response(Health(status="ok", database="ok"))
