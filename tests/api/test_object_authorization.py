"""Every id-bearing endpoint answers 404 (never 403, never data) for another user's id."""

from __future__ import annotations

from httpx import AsyncClient
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Thread, ThreadMessage
from tests.api.support import assert_problem, create_thread, post_message
from tests.conftest import ApiUser
from tests.factories import TaskFactory


async def test_foreign_ids_answer_404(
    client: AsyncClient, db: AsyncSession, alice: ApiUser, bob: ApiUser
) -> None:
    thread = await create_thread(client, bob, "bob's secrets")
    posted = (await post_message(client, bob, thread["id"], "secret")).json()
    task = TaskFactory.build(owner_id=bob.user.id, title="bob's task")
    db.add(task)
    await db.commit()

    t = f"/api/threads/{thread['id']}"
    m = f"{t}/messages/{posted['message']['id']}"
    r = f"{t}/runs/{posted['run']['id']}"
    attempts = [
        ("GET", t, None),
        ("PATCH", t, {"title": "mine now"}),
        ("DELETE", t, None),
        ("GET", f"{t}/messages", None),
        ("POST", f"{t}/messages", {"content": "hello"}),
        ("GET", m, None),
        ("GET", r, None),
        ("POST", f"{r}/cancel", None),
        ("GET", f"/api/agents/{bob.agent.id}", None),
        ("PATCH", f"/api/agents/{bob.agent.id}", {"name": "stolen"}),
        ("PATCH", f"/api/tasks/{task.id}", {"status": "completed"}),
        ("POST", "/api/threads", {"agent_id": str(bob.agent.id)}),
    ]
    for method, url, body in attempts:
        response = await client.request(method, url, json=body, headers=alice.headers)
        problem = assert_problem(response, 404)
        assert "secret" not in response.text, (method, url, problem)

    # Nothing changed for bob.
    assert (await client.get(t, headers=bob.headers)).json()["title"] == "bob's secrets"
    run = (await client.get(r, headers=bob.headers)).json()
    assert run["status"] == "queued"
    assert await db.scalar(select(func.count()).select_from(ThreadMessage)) == 1
    assert await db.scalar(select(func.count()).select_from(Thread)) == 1
    agent = (await client.get(f"/api/agents/{bob.agent.id}", headers=bob.headers)).json()
    assert agent["name"] == bob.agent.name


async def test_lists_show_only_own_objects(
    client: AsyncClient, db: AsyncSession, alice: ApiUser, bob: ApiUser
) -> None:
    await create_thread(client, bob)
    db.add(TaskFactory.build(owner_id=bob.user.id, title="bob's task"))
    await db.commit()
    assert (await client.get("/api/threads", headers=alice.headers)).json()["items"] == []
    assert (await client.get("/api/tasks", headers=alice.headers)).json()["items"] == []
