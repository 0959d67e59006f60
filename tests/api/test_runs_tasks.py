from __future__ import annotations

from datetime import timedelta

from httpx import AsyncClient
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Task
from app.lib.time import utcnow
from tests.api.support import assert_problem, create_thread, post_message
from tests.conftest import ApiUser
from tests.factories import TaskFactory


async def test_get_and_cancel_a_queued_run(client: AsyncClient, alice: ApiUser) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    run = (await post_message(client, alice, thread_id)).json()["run"]
    url = f"/api/threads/{thread_id}/runs/{run['id']}"

    got = await client.get(url, headers=alice.headers)
    # the run with its trace: nothing executed yet
    assert got.status_code == 200 and got.json() == {**run, "steps": [], "tool_results": []}

    cancelled = await client.post(f"{url}/cancel", headers=alice.headers)
    assert cancelled.status_code == 200
    body = cancelled.json()
    assert body["status"] == "cancelled" and body["finished_at"] is not None

    again = await client.post(f"{url}/cancel", headers=alice.headers)
    assert again.status_code == 200 and again.json() == body
    thread = (await client.get(f"/api/threads/{thread_id}", headers=alice.headers)).json()
    assert thread["active_run_id"] is None


async def test_unknown_run_is_404(client: AsyncClient, alice: ApiUser) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    missing = f"/api/threads/{thread_id}/runs/00000000-0000-0000-0000-000000000000"
    assert_problem(await client.get(missing, headers=alice.headers), 404)
    assert_problem(await client.post(f"{missing}/cancel", headers=alice.headers), 404)


async def _tasks(db: AsyncSession, user: ApiUser, statuses: list[str]) -> list[Task]:
    start = utcnow() - timedelta(hours=1)
    tasks = [
        TaskFactory.build(
            owner_id=user.user.id,
            title=f"task {i}",
            status=status,
            created_at=start + timedelta(minutes=i),
            completed_at=utcnow() if status == "completed" else None,
        )
        for i, status in enumerate(statuses)
    ]
    db.add_all(tasks)
    await db.commit()
    return tasks


async def test_list_tasks_filters_and_paginates(
    client: AsyncClient, db: AsyncSession, alice: ApiUser, bob: ApiUser
) -> None:
    tasks = await _tasks(db, alice, ["active", "completed", "active", "active"])
    await _tasks(db, bob, ["active"])
    newest_first = [str(t.id) for t in reversed(tasks)]

    everything = (await client.get("/api/tasks", headers=alice.headers)).json()
    assert [t["id"] for t in everything["items"]] == newest_first
    assert everything["next_cursor"] is None
    # `all`, as the tasks tool says it, is the same as no filter
    said_all = await client.get("/api/tasks", params={"status": "all"}, headers=alice.headers)
    assert said_all.json() == everything

    active = (
        await client.get("/api/tasks", params={"status": "active"}, headers=alice.headers)
    ).json()
    assert [t["id"] for t in active["items"]] == [i for i in newest_first if i != str(tasks[1].id)]

    page = (await client.get("/api/tasks", params={"limit": 3}, headers=alice.headers)).json()
    assert [t["id"] for t in page["items"]] == newest_first[:3] and page["next_cursor"]
    rest = (
        await client.get(
            "/api/tasks", params={"limit": 3, "cursor": page["next_cursor"]}, headers=alice.headers
        )
    ).json()
    assert [t["id"] for t in rest["items"]] == newest_first[3:] and rest["next_cursor"] is None

    assert_problem(
        await client.get("/api/tasks", params={"status": "nope"}, headers=alice.headers), 400
    )
    assert_problem(await client.get("/api/tasks", params={"limit": 0}, headers=alice.headers), 400)


async def test_complete_and_reopen_a_task(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    (task,) = await _tasks(db, alice, ["active"])
    url = f"/api/tasks/{task.id}"
    done = await client.patch(url, json={"status": "completed"}, headers=alice.headers)
    assert done.status_code == 200, done.text
    assert done.json()["status"] == "completed" and done.json()["completed_at"]

    reopened = await client.patch(
        url, json={"status": "active", "notes": "again"}, headers=alice.headers
    )
    body = reopened.json()
    assert body["status"] == "active" and body["completed_at"] is None and body["notes"] == "again"
    assert_problem(await client.patch(url, json={"status": "bogus"}, headers=alice.headers), 400)
