"""Timestamps reach the app as `YYYY-MM-DDTHH:MM:SSZ`, which Swift's
`JSONDecoder.dateDecodingStrategy = .iso8601` decodes (it rejects fractional seconds), in
HTTP responses and websocket frames alike; stored times keep their precision."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.models import ThreadMessage
from tests.conftest import ApiUser
from tests.realtime import conftest as realtime
from tests.realtime.conftest import new_thread
from tests.realtime.support import Server, WsClient, write_create

# The realtime suite's fixtures (the app under uvicorn, an HTTP client of it), used here.
realtime_settings, start_server = realtime.realtime_settings, realtime.start_server
server, http = realtime.server, realtime.http

WHOLE_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
# Stored with sub-second precision: 1.5 s apart.
STARTED = datetime(2026, 1, 2, 3, 4, 5, 250_000, tzinfo=UTC)
FINISHED = datetime(2026, 1, 2, 3, 4, 6, 750_000, tzinfo=UTC)
ACTIVITY = {
    "id": "call_1",
    "name": "create_task",
    "status": "success",
    "started_at": STARTED.isoformat(),
    "finished_at": FINISHED.isoformat(),
}


def _timestamps(node: Any, key: str = "") -> list[tuple[str, str]]:
    """(key, value) of every timestamp field (`*_at`) in a JSON body."""
    if isinstance(node, dict):
        return [pair for k, v in node.items() for pair in _timestamps(v, k)]
    if isinstance(node, list):
        return [pair for v in node for pair in _timestamps(v, key)]
    return [(key, node)] if key.endswith("_at") and node is not None else []


def _assert_whole_seconds(body: Any, expected_keys: set[str]) -> None:
    found = _timestamps(body)
    assert expected_keys <= {key for key, _ in found}, found
    assert all(WHOLE_SECONDS.match(value) for _, value in found), found


async def _tool_message(factory: async_sessionmaker[AsyncSession], thread_id: str) -> ThreadMessage:
    return await write_create(
        factory, uuid.UUID(thread_id), role="tool", tool_activity=dict(ACTIVITY)
    )


async def test_responses_serve_whole_second_utc_timestamps(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    thread_id = await new_thread(http, alice)
    posted = await http.post(
        f"/api/threads/{thread_id}/messages", json={"content": "hi"}, headers=alice.headers
    )
    assert posted.status_code == 202, posted.text
    _assert_whole_seconds(posted.json(), {"created_at", "updated_at"})
    stored = await _tool_message(session_factory, thread_id)

    page = await http.get(f"/api/threads/{thread_id}/messages", headers=alice.headers)
    assert page.status_code == 200, page.text
    _assert_whole_seconds(page.json(), {"created_at", "updated_at", "started_at", "finished_at"})
    [tool] = [m for m in page.json()["items"] if m["role"] == "tool"]
    activity = tool["tool_activity"]
    assert activity["started_at"] == "2026-01-02T03:04:05Z"
    assert activity["finished_at"] == "2026-01-02T03:04:06Z"
    # The duration comes from the stored times, not the whole seconds served.
    assert activity["duration_ms"] == 1500

    threads = await http.get("/api/threads", headers=alice.headers)
    _assert_whole_seconds(threads.json(), {"created_at", "updated_at"})
    # Stored values keep their precision (cursors and ordering read them).
    async with session_factory() as session:
        row = await session.get(ThreadMessage, stored.id)
        assert row is not None
        assert row.tool_activity["started_at"] == STARTED.isoformat()


async def test_message_frames_carry_whole_second_utc_timestamps(
    server: Server,
    http: httpx.AsyncClient,
    alice: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    thread_id = await new_thread(http, alice)
    replayed = await _tool_message(session_factory, thread_id)
    async with WsClient.connect(server.ws, alice.token) as ws:
        await ws.subscribe(thread_id)
        frame = await ws.wait_type("message", seq=replayed.seq)
        await ws.wait_type("subscribed")
        posted = await http.post(
            f"/api/threads/{thread_id}/messages", json={"content": "hi"}, headers=alice.headers
        )
        assert posted.status_code == 202, posted.text
        live = await ws.wait_type("message", seq=replayed.seq + 1)
        run = await ws.wait_type("run")
    expected = {"created_at", "updated_at", "started_at", "finished_at"}
    _assert_whole_seconds(frame, expected)
    assert frame["message"]["tool_activity"]["duration_ms"] == 1500
    _assert_whole_seconds(live, {"created_at", "updated_at"})
    _assert_whole_seconds(run, {"created_at"})
