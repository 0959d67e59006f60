"""`limit` above the maximum page size is capped (the contract), below 1 is refused."""

from __future__ import annotations

from datetime import timedelta

import pytest
from httpx import AsyncClient
from sqlalchemy.ext.asyncio import AsyncSession

from app.lib.pagination import MAX_PAGE_SIZE
from app.lib.time import utcnow
from app.openapi_export import generate_openapi
from tests.api.support import assert_problem, create_thread
from tests.conftest import ApiUser
from tests.factories import TaskFactory


async def test_limit_above_the_maximum_is_capped(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    start = utcnow() - timedelta(days=1)
    db.add_all(
        TaskFactory.build(
            owner_id=alice.user.id, title=f"t{i}", created_at=start + timedelta(seconds=i)
        )
        for i in range(MAX_PAGE_SIZE + 1)
    )
    await db.commit()
    response = await client.get("/api/tasks", params={"limit": 1000}, headers=alice.headers)
    assert response.status_code == 200, response.text
    page = response.json()
    assert len(page["items"]) == MAX_PAGE_SIZE and page["next_cursor"]


async def test_every_list_endpoint_caps_and_refuses_below_one(
    client: AsyncClient, alice: ApiUser
) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    for url in ("/api/tasks", "/api/threads", f"/api/threads/{thread_id}/messages"):
        capped = await client.get(url, params={"limit": 1000}, headers=alice.headers)
        assert capped.status_code == 200, (url, capped.text)
        for bad in (0, -1, "ten"):
            problem = assert_problem(
                await client.get(url, params={"limit": bad}, headers=alice.headers), 400
            )
            assert problem["errors"][0]["field"] == "limit"


@pytest.mark.parametrize(
    "path", ["/api/tasks", "/api/threads", "/api/threads/{thread_id}/messages"]
)
def test_openapi_documents_the_maximum(path: str) -> None:
    operation = generate_openapi()["paths"][path]["get"]
    (limit,) = [p for p in operation["parameters"] if p["name"] == "limit"]
    assert f"at most {MAX_PAGE_SIZE}" in limit["description"] and limit["schema"]["minimum"] == 1
