from __future__ import annotations

from typing import Literal

from litestar import Response, get
from litestar.openapi.datastructures import ResponseSpec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.lib.schema import Schema


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
async def health(db_session: AsyncSession) -> Response[Health]:
    """Liveness and database reachability; no auth."""
    try:
        await db_session.execute(text("SELECT 1"))
    except Exception:
        return Response(Health(status="degraded", database="unavailable"), status_code=503)
    return Response(Health(status="ok", database="ok"))
