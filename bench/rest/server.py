"""The app as deployed plus one bare JSON endpoint, the ceiling it is compared with.

`uvicorn bench.rest.server:create_bench_app --factory` (settings from the environment).
"""

from __future__ import annotations

from litestar import Litestar, get
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app import create_app


@get("/bench/bare", operation_id="BenchBare", sync_to_thread=False, include_in_schema=False)
def bare() -> dict[str, str]:
    """No auth, no database: the framework and server alone."""
    return {"status": "ok"}


@get("/bench/select1", operation_id="BenchSelect1", include_in_schema=False)
async def select_one(db_session: AsyncSession) -> dict[str, str]:
    """The request-scoped session and one trivial query: the floor of any endpoint that
    touches the database once per request."""
    await db_session.execute(text("SELECT 1"))
    return {"status": "ok"}


def create_bench_app() -> Litestar:
    app = create_app()
    app.register(bare)
    app.register(select_one)
    return app
