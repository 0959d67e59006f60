"""The API docs page works offline: assets from the app, rendered by a real browser."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import httpx
import pytest

from app import create_app
from app.settings import PROJECT_ROOT, Settings
from tests.realtime.support import serve

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOT = PROJECT_ROOT / "var" / "docs-screenshot.png"


async def test_docs_page_loads_nothing_from_outside(client: httpx.AsyncClient) -> None:
    page = (await client.get("/schema/swagger")).text
    assert "/schema/assets/swagger-ui-bundle.js" in page
    assert "https://" not in page and "http://" not in page
    script = await client.get("/schema/assets/swagger-ui-bundle.js")
    assert script.status_code == 200
    assert "javascript" in script.headers["content-type"]
    assert "SwaggerUIBundle" in script.text


async def test_asyncapi_document_is_served_and_linked(client: httpx.AsyncClient) -> None:
    served = await client.get("/schema/asyncapi.json")
    committed = json.loads((PROJECT_ROOT / "openapi" / "asyncapi.json").read_text())
    assert served.json() == committed
    spec = (await client.get("/schema/openapi.json")).json()
    assert "(/schema/asyncapi.json)" in spec["info"]["description"]


async def _chromium(*args: str, profile: Path) -> str:
    process = await asyncio.create_subprocess_exec(
        CHROMIUM or "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1280,1800",
        "--virtual-time-budget=15000",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=90)
    return out.decode()


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("REQUIRE_CHROMIUM"),
    reason="needs Debian's chromium (apt-get install chromium); .ci/run installs it",
)
async def test_docs_page_renders_in_headless_chromium(settings: Settings, tmp_path: Path) -> None:
    # An app of its own: serving the session's app would run its lifespan a second time.
    async with serve(create_app(settings)) as server:
        url = f"{server.http}/schema/swagger"
        dom = await _chromium("--dump-dom", url, profile=tmp_path / "dom")
        SCREENSHOT.parent.mkdir(exist_ok=True)
        await _chromium(f"--screenshot={SCREENSHOT}", url, profile=tmp_path / "shot")
    assert 'class="swagger-ui' in dom  # the bundle ran and built its UI
    assert "Toolcells API" in dom
    assert "/api/threads/{thread_id}/messages" in dom  # operations are listed
    assert 'href="/schema/asyncapi.json"' in dom
    assert SCREENSHOT.stat().st_size > 10_000
