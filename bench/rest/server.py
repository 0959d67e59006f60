"""The app as deployed plus one bare JSON endpoint, the ceiling it is compared with.

`uvicorn bench.rest.server:create_bench_app --factory` (settings from the environment).
"""

from __future__ import annotations

from litestar import Litestar, get

from app import create_app


@get("/bench/bare", operation_id="BenchBare", sync_to_thread=False, include_in_schema=False)
def bare() -> dict[str, str]:
    """No auth, no database: the framework and server alone."""
    return {"status": "ok"}


def create_bench_app() -> Litestar:
    app = create_app()
    app.register(bare)
    return app
