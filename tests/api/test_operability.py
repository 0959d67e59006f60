"""Operating in production: request ids on every response, readiness, /metrics access."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from app.settings import Settings
from tests.api.support import assert_problem
from tests.api.test_database_outage import serving
from tests.support.databases import DIALECTS

FRESH = re.compile(r"[0-9a-f]{32}")


async def test_a_sane_client_request_id_is_echoed(client: httpx.AsyncClient) -> None:
    for sent in ("ios-7f3a", "A1.b2_c3:d4/e5+f6=@x", "x" * 128):
        response = await client.get("/api/health", headers={"X-Request-ID": sent})
        assert response.status_code == 200
        assert response.headers["X-Request-ID"] == sent


async def test_a_missing_or_unsafe_request_id_is_replaced_by_a_fresh_one(
    client: httpx.AsyncClient,
) -> None:
    seen = set()
    for headers in ({}, {"X-Request-ID": "x" * 129}, {"X-Request-ID": "a b"}, {"X-Request-ID": ""}):
        response = await client.get("/api/health", headers=headers)
        assert FRESH.fullmatch(response.headers["X-Request-ID"]), headers
        seen.add(response.headers["X-Request-ID"])
    assert len(seen) == 4  # one per request


async def test_errors_carry_the_request_id_too(client: httpx.AsyncClient) -> None:
    unauthorized = await client.get("/api/me", headers={"X-Request-ID": "req-401"})
    assert_problem(unauthorized, 401)
    assert unauthorized.headers["X-Request-ID"] == "req-401"
    # answered by the router, before any route's middleware
    unknown = await client.get("/api/no-such-path", headers={"X-Request-ID": "req-404"})
    assert_problem(unknown, 404)
    assert unknown.headers["X-Request-ID"] == "req-404"
    bad = await client.post("/api/auth/token", content=b"{", headers={"X-Request-ID": "req-400"})
    assert_problem(bad, 400)
    assert bad.headers["X-Request-ID"] == "req-400"


async def test_ready_when_the_database_answers(client: httpx.AsyncClient) -> None:
    response = await client.get("/api/health/ready")
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "ready", "database": "ok", "redis": "not_configured"}


@pytest.mark.skipif("sqlite" not in DIALECTS, reason="TEST_DIALECTS excludes sqlite")
async def test_not_ready_without_the_database(tmp_path: Path) -> None:
    unreachable = tmp_path / "missing-directory" / "app.sqlite3"
    settings = Settings(database_url=f"sqlite+aiosqlite:///{unreachable}", runner_enabled=False)
    async with serving(settings) as (_app, client):
        response = await client.get("/api/health/ready")
        body = assert_problem(response, 503)
        assert body["detail"] == "Not ready: database unreachable."
        assert int(response.headers["Retry-After"]) > 0


async def test_not_ready_without_redis(settings: Settings) -> None:
    # Nothing listens on port 1: Redis is configured but unreachable.
    down = replace(settings, redis_url="redis://127.0.0.1:1/0", channels_prefix="test-ready:")
    async with serving(down) as (_app, client):
        response = await client.get("/api/health/ready")
        body = assert_problem(response, 503)
        assert body["detail"] == "Not ready: Redis unreachable."
        # liveness does not depend on Redis
        assert (await client.get("/api/health")).status_code == 200


async def test_ready_with_redis(settings: Settings) -> None:
    up = replace(settings, redis_url="redis://127.0.0.1:6379/0", channels_prefix="test-ready:")
    async with serving(up) as (_app, client):
        response = await client.get("/api/health/ready")
        assert response.status_code == 200, response.text
        assert response.json()["redis"] == "ok"


async def test_metrics_can_require_a_token(settings: Settings) -> None:
    async with serving(replace(settings, metrics_token="scrape-secret")) as (_app, client):
        assert_problem(await client.get("/metrics"), 401)
        wrong = {"Authorization": "Bearer nope"}
        assert_problem(await client.get("/metrics", headers=wrong), 401)
        right = {"Authorization": "Bearer scrape-secret"}
        response = await client.get("/metrics", headers=right)
        assert response.status_code == 200
        assert "toolcells_runs_total" in response.text or "toolcells_runs" in response.text


async def test_metrics_can_be_turned_off(settings: Settings) -> None:
    async with serving(replace(settings, metrics_enabled=False)) as (_app, client):
        assert_problem(await client.get("/metrics"), 404)


async def test_metrics_is_not_part_of_the_api_document(client: httpx.AsyncClient) -> None:
    document = (await client.get("/schema/openapi.json")).json()
    assert "/metrics" not in document["paths"]
    assert "/api/health/ready" in document["paths"]
