"""Who may scrape `/metrics`: with METRICS_TOKEN set, whoever sends it as a bearer token
(tests/api/test_operability.py); unset, only this host (a loopback peer that no proxy
forwarded), so a deployment that did not think of it does not publish its metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

import httpx
from litestar import Litestar

from app import create_app
from app.settings import Settings
from tests.api.support import assert_problem
from tests.conftest import running_lifespan


@asynccontextmanager
async def clients(settings: Settings) -> AsyncIterator[dict[str, httpx.AsyncClient]]:
    """One app, and clients of it connecting from this host and from elsewhere."""
    app: Litestar = create_app(settings)
    peers = {"local": "127.0.0.1", "local6": "::1", "remote": "203.0.113.7", "lan": "10.1.2.3"}
    async with running_lifespan(app):
        opened = {
            name: httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app, client=(address, 40000)),
                base_url="http://testserver",
            )
            for name, address in peers.items()
        }
        try:
            yield opened
        finally:
            for client in opened.values():
                await client.aclose()


async def test_without_a_token_only_this_host_may_scrape(settings: Settings) -> None:
    async with clients(settings) as peer:
        for local in ("local", "local6"):
            response = await peer[local].get("/metrics")
            assert response.status_code == 200, (local, response.text)
            assert "toolcells_" in response.text
        for remote in ("remote", "lan"):
            body = assert_problem(await peer[remote].get("/metrics"), 403)
            assert "METRICS_TOKEN" in body["detail"]
        # a proxy on this host relaying someone else's request
        for header in ("X-Forwarded-For", "Forwarded", "X-Real-IP"):
            relayed = await peer["local"].get("/metrics", headers={header: "203.0.113.7"})
            assert_problem(relayed, 403)
        # the API itself is not restricted
        assert (await peer["remote"].get("/api/health")).status_code == 200


async def test_with_a_token_anyone_holding_it_may_scrape_and_nobody_else(
    settings: Settings,
) -> None:
    async with clients(replace(settings, metrics_token="scrape-secret")) as peer:
        right = {"Authorization": "Bearer scrape-secret"}
        for name in ("remote", "local"):
            assert (await peer[name].get("/metrics", headers=right)).status_code == 200
            assert_problem(await peer[name].get("/metrics"), 401)
