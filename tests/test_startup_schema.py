"""Startup and the schema: the embedded default migrates itself; a stale server database
is named in one log line with the command that fixes it."""

from __future__ import annotations

import logging

import httpx

from app import create_app
from app.db.schema import UPGRADE_COMMAND
from app.settings import Settings
from tests.conftest import running_lifespan


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


async def test_serving_an_empty_database(empty_database: str) -> None:
    app = create_app(Settings(database_url=empty_database, runner_enabled=False))
    log, logger = Lines(), logging.getLogger("app.db.schema")
    logger.addHandler(log)  # Litestar's queue handler keeps records from caplog
    try:
        async with running_lifespan(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
                login = await client.post(
                    "/api/auth/token", json={"email": "nobody@example.com", "password": "x" * 12}
                )
    finally:
        logger.removeHandler(log)
    stale = [line for line in log.lines if "not up to date" in line]
    if empty_database.startswith("sqlite"):
        assert login.status_code == 401  # tables exist: an unknown user, not a crash
        assert stale == []
    else:
        assert stale == [f"The database schema is not up to date: run `{UPGRADE_COMMAND}`."]
