"""`litestar seed demo`'s threads are what a new developer's app opens first: their cells
decode with the published schemas, as a typed client decodes them."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncSession

from app.cli.demo import DEMO_TOKEN, seed_demo
from tests.support.result_schemas import assert_cells_match_schema, result_schema_errors

READ = {"$ref": "#/components/schemas/ThreadMessageRead"}


async def test_the_demo_cells_decode_as_their_result_types(
    client: httpx.AsyncClient, db: AsyncSession
) -> None:
    await seed_demo(db)
    await db.commit()
    headers = {"Authorization": f"Bearer {DEMO_TOKEN}"}
    threads = (await client.get("/api/threads", headers=headers)).json()["items"]
    assert {t["title"] for t in threads} == {"Groceries", "About me"}
    cells = []
    for thread in threads:
        page = await client.get(f"/api/threads/{thread['id']}/messages", headers=headers)
        for message in page.json()["items"]:
            assert result_schema_errors(READ, message) == [], message
            if "tool_activity" in message:
                cells.append(message["tool_activity"])
    assert_cells_match_schema(cells)
    assert sorted(c["data"]["type"] for c in cells) == ["memory", "task"]
