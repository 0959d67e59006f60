"""A process without a runner (an API-only host) still judges the expiry of waits when
answers reach it, so it measures its clock's offset to the database's at start."""

from __future__ import annotations

from datetime import timedelta

import pytest
from advanced_alchemy.extensions.litestar import SQLAlchemyPlugin

from app import create_app
from app.db import clock
from app.lib.time import utcnow
from app.settings import Settings
from tests.conftest import running_lifespan

SKEW_SECONDS = 90


async def test_a_process_without_a_runner_measures_the_database_clock(
    database_url: str, dialect: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if dialect == "sqlite":
        pytest.skip("SQLite is one host and one clock (no offset to measure)")
    settings = Settings(
        database_url=database_url,
        runner_enabled=False,
        mcp_demo_server=False,
        database_max_connections=2,
    )
    app = create_app(settings)
    monkeypatch.setattr(clock, "utcnow", lambda: utcnow() + timedelta(seconds=SKEW_SECONDS))
    async with running_lifespan(app):
        measured = clock.offset().total_seconds()
        monkeypatch.undo()  # this host's clock is right again: measure it again
        async with app.plugins.get(SQLAlchemyPlugin).config[0].get_session() as session:
            await clock.synchronize(session)
    assert -SKEW_SECONDS - 5 < measured < -SKEW_SECONDS + 5
    assert abs(clock.offset().total_seconds()) < 5
