"""Every id-bearing endpoint answers 404 (never 403, never data) for another user's id."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from httpx import AsyncClient
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Memory, Thread, ThreadMessage
from app.openapi_export import generate_openapi
from tests.api.support import assert_problem, create_thread, post_message
from tests.conftest import ApiUser
from tests.factories import TaskFactory

T = "/api/threads/{thread_id}"
# (method, path template, body) for every operation whose path carries an object id.
# A new id-bearing endpoint must be added here (test_every_id_bearing_endpoint_is_covered).
FOREIGN_ID_ATTEMPTS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("GET", T, None),
    ("PATCH", T, {"title": "mine now"}),
    ("DELETE", T, None),
    ("GET", f"{T}/messages", None),
    ("POST", f"{T}/messages", {"content": "hello"}),
    ("GET", f"{T}/messages/{{message_id}}", None),
    ("POST", f"{T}/messages/{{message_id}}/approval", {"approve": True}),
    ("GET", f"{T}/runs/{{run_id}}", None),
    ("POST", f"{T}/runs/{{run_id}}/cancel", None),
    ("GET", "/api/agents/{agent_id}", None),
    ("PATCH", "/api/agents/{agent_id}", {"name": "stolen"}),
    ("PATCH", "/api/tasks/{task_id}", {"status": "completed"}),
    ("POST", f"{T}/messages/{{message_id}}/result", {"output": {}}),
    ("POST", f"{T}/messages/{{message_id}}/input", {"action": "decline"}),
    ("POST", f"{T}/live-activity", {"push_token": "ab" * 32}),
    ("DELETE", "/api/devices/{device_id}", None),
    ("POST", f"{T}/runs/{{run_id}}/live-activity", {"push_token": "ef" * 32}),
    ("POST", "/api/live-activities/{activity_id}/end", {"content_state": {"status": "completed"}}),
    ("DELETE", "/api/live-activities/{activity_id}", None),
    ("DELETE", "/api/live-activities/push-to-start/{token_id}", None),
    ("POST", "/api/tasks/{task_id}/reminder-answer", {"action": "complete"}),
    ("POST", f"{T}/messages/{{message_id}}/edit", {"content": "mine now"}),
    ("POST", f"{T}/messages/{{message_id}}/regenerate", {}),
    ("POST", f"{T}/messages/{{message_id}}/switch", None),
    ("DELETE", f"{T}/messages/{{message_id}}", None),
    ("GET", "/api/attachments/{attachment_id}", None),
    ("GET", "/api/attachments/{attachment_id}/content", None),
    ("GET", "/api/attachments/{attachment_id}/thumbnail", None),
    ("DELETE", "/api/attachments/{attachment_id}", None),
    ("GET", "/api/memories/{memory_id}", None),
    ("PATCH", "/api/memories/{memory_id}", {"content": "mine now"}),
    ("DELETE", "/api/memories/{memory_id}", None),
    ("GET", "/api/schedules/{schedule_id}", None),
    ("PATCH", "/api/schedules/{schedule_id}", {"prompt": "mine now"}),
    ("POST", "/api/schedules/{schedule_id}/pause", None),
    ("POST", "/api/schedules/{schedule_id}/resume", None),
    ("DELETE", "/api/schedules/{schedule_id}", None),
]


def test_every_id_bearing_endpoint_is_covered() -> None:
    covered = {(method, path) for method, path, _ in FOREIGN_ID_ATTEMPTS}
    id_bearing = {
        (method.upper(), path)
        for path, item in generate_openapi()["paths"].items()
        for method in item
        if "_id}" in path
    }
    assert id_bearing <= covered, f"add to FOREIGN_ID_ATTEMPTS: {sorted(id_bearing - covered)}"


async def test_foreign_ids_answer_404(
    client: AsyncClient, db: AsyncSession, alice: ApiUser, bob: ApiUser
) -> None:
    thread = await create_thread(client, bob, "bob's secrets")
    posted = (await post_message(client, bob, thread["id"], "secret")).json()
    task = TaskFactory.build(owner_id=bob.user.id, title="bob's task")
    memory = Memory(owner_id=bob.user.id, content="bob's secret memory")
    db.add_all([task, memory])
    await db.commit()
    upload = {"file": ("secret.txt", b"bob's secret file", "text/plain")}
    attachment = await client.post("/api/attachments", files=upload, headers=bob.headers)
    assert attachment.status_code == 201, attachment.text
    later = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    schedule = await client.post(
        "/api/schedules",
        json={"thread_id": thread["id"], "prompt": "secret", "kind": "once", "run_at": later},
        headers=bob.headers,
    )
    assert schedule.status_code == 201, schedule.text
    device = {"token": "cd" * 32, "environment": "sandbox", "bundle_id": "com.example.app"}
    registered = await client.post("/api/devices", json=device, headers=bob.headers)
    activity = await client.post(
        f"/api/threads/{thread['id']}/live-activity",
        json={"push_token": "12" * 32},
        headers=bob.headers,
    )
    start_token = await client.post(
        "/api/live-activities/push-to-start", json={"push_token": "34" * 32}, headers=bob.headers
    )
    ids = {
        "activity_id": activity.json()["id"],
        "token_id": start_token.json()["id"],
        "device_id": registered.json()["id"],
        "thread_id": thread["id"],
        "message_id": posted["message"]["id"],
        "run_id": posted["run"]["id"],
        "agent_id": str(bob.agent.id),
        "task_id": str(task.id),
        "attachment_id": attachment.json()["id"],
        "memory_id": str(memory.id),
        "schedule_id": schedule.json()["id"],
    }

    for method, template, body in FOREIGN_ID_ATTEMPTS:
        url = template.format(**ids)
        response = await client.request(method, url, json=body, headers=alice.headers)
        problem = assert_problem(response, 404)
        assert "secret" not in response.text, (method, url, problem)
    # Starting a thread with someone else's (unshared) agent is the same.
    response = await client.post(
        "/api/threads", json={"agent_id": ids["agent_id"]}, headers=alice.headers
    )
    assert_problem(response, 404)

    # Nothing changed for bob.
    t = f"/api/threads/{thread['id']}"
    assert (await client.get(t, headers=bob.headers)).json()["title"] == "bob's secrets"
    run = (await client.get(f"{t}/runs/{ids['run_id']}", headers=bob.headers)).json()
    assert run["status"] == "queued"
    assert await db.scalar(select(func.count()).select_from(ThreadMessage)) == 1
    assert await db.scalar(select(func.count()).select_from(Thread)) == 1
    agent = (await client.get(f"/api/agents/{bob.agent.id}", headers=bob.headers)).json()
    assert agent["name"] == bob.agent.name
    assert len((await client.get("/api/devices", headers=bob.headers)).json()["items"]) == 1
    memory_url = f"/api/memories/{ids['memory_id']}"
    assert (await client.get(memory_url, headers=bob.headers)).json()["content"] == memory.content
    schedule_url = f"/api/schedules/{ids['schedule_id']}"
    kept = (await client.get(schedule_url, headers=bob.headers)).json()
    assert kept["prompt"] == "secret" and kept["status"] == "active", kept
    attachment_url = f"/api/attachments/{ids['attachment_id']}/content"
    assert (await client.get(attachment_url, headers=bob.headers)).content == b"bob's secret file"


async def test_lists_show_only_own_objects(
    client: AsyncClient, db: AsyncSession, alice: ApiUser, bob: ApiUser
) -> None:
    await create_thread(client, bob)
    db.add(TaskFactory.build(owner_id=bob.user.id, title="bob's task"))
    await db.commit()
    assert (await client.get("/api/threads", headers=alice.headers)).json()["items"] == []
    assert (await client.get("/api/tasks", headers=alice.headers)).json()["items"] == []
