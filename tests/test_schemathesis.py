"""Property-based run of every operation: no input, however malformed, gets a 500, and
every answer matches the documented schema, status codes and media types.

The app under test is one of its own per dialect, served by schemathesis' ASGI client on
schemathesis' event-loop thread (its engine's connections never cross loops). Rows it
creates are removed afterwards.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import schemathesis
from litestar import Litestar
from schemathesis.checks import not_a_server_error

from app import create_app
from app.lib.security import new_token
from app.settings import Settings
from tests.support.sync_db import empty_tables, revive_token, seed_user

# schemathesis.toml reads the bearer token from here when the schema is loaded.
API_TOKEN = os.environ.setdefault("APP_API_TOKEN", new_token())

# The schema is loaded once from an app that never touches its database.
schema = schemathesis.openapi.from_asgi(
    "/schema/openapi.json",
    create_app(Settings(database_url="sqlite+aiosqlite:///:memory:", runner_enabled=False)),
)


@pytest.fixture(scope="module")
def fuzz_app(database_url: str) -> Iterator[Litestar]:
    seed_user(database_url, "fuzz@example.com", "fuzz-password", token=API_TOKEN)
    # No runner: a run started (POST /v1/agent with your agent) is never answered, so the
    # wait ends at once (a documented 504) rather than after the client's read timeout.
    settings = Settings(
        database_url=database_url, runner_enabled=False, completion_wait_seconds=0.2
    )
    yield create_app(settings)
    # Stop the app's lifespan on schemathesis' loop (disposes its engine), then clean up.
    from schemathesis.python.asgi import shutdown_lifespans

    shutdown_lifespans()
    empty_tables(database_url)


@schema.parametrize()
def test_api_conforms_to_its_schema(
    case: schemathesis.Case, fuzz_app: Litestar, database_url: str
) -> None:
    try:
        # RunAgent's run is never answered here (no runner): its documented 504 is expected
        run_agent = case.operation.definition.raw.get("operationId") == "RunAgent"
        excluded = [not_a_server_error] if run_agent else []
        case.call_and_validate(app=fuzz_app, excluded_checks=excluded)
    finally:
        if case.operation.definition.raw.get("operationId") == "RevokeToken":
            # The fuzzer just revoked its own token; later examples need it live.
            revive_token(database_url, API_TOKEN)


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
