from __future__ import annotations

from httpx import AsyncClient
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, ThreadMessage
from app.threads.writer import update_message
from tests.api.support import assert_problem, create_thread, post_message
from tests.conftest import ApiUser


async def test_post_message_stores_it_and_queues_a_run(client: AsyncClient, alice: ApiUser) -> None:
    thread = await create_thread(client, alice)
    response = await post_message(
        client, alice, thread["id"], "Buy milk", client_message_id="c-1", tools=["tasks"]
    )
    assert response.status_code == 202, response.text
    body = response.json()
    message, run = body["message"], body["run"]
    assert message["role"] == "user" and message["content"] == "Buy milk"
    assert message["position"] == 1 and message["seq"] == 1
    assert message["client_message_id"] == "c-1" and "tool_activity" not in message
    assert message["run_id"] == run["id"]
    assert run["status"] == "queued" and run["trigger_message_id"] == message["id"]

    got = await client.get(
        f"/api/threads/{thread['id']}/messages/{message['id']}", headers=alice.headers
    )
    assert got.status_code == 200 and got.json() == message
    thread_now = (await client.get(f"/api/threads/{thread['id']}", headers=alice.headers)).json()
    assert thread_now["last_seq"] == 1 and thread_now["active_run_id"] == run["id"]


async def test_repeated_client_message_id_answers_200_with_the_original(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    thread = await create_thread(client, alice)
    first = await post_message(client, alice, thread["id"], "once", client_message_id="same")
    again = await post_message(client, alice, thread["id"], "twice?", client_message_id="same")
    assert first.status_code == 202 and again.status_code == 200
    assert again.json() == first.json()
    assert await db.scalar(select(func.count()).select_from(ThreadMessage)) == 1
    assert await db.scalar(select(func.count()).select_from(Run)) == 1


async def test_list_latest_history_and_sync(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    posted = [
        (await post_message(client, alice, thread_id, f"m{i}")).json()["message"] for i in range(5)
    ]
    url = f"/api/threads/{thread_id}/messages"

    latest = (await client.get(url, params={"limit": 3}, headers=alice.headers)).json()
    assert [m["position"] for m in latest["items"]] == [3, 4, 5]
    assert latest["has_more"] is True and latest["last_seq"] == 5

    older = (
        await client.get(url, params={"before_position": 3, "limit": 3}, headers=alice.headers)
    ).json()
    assert [m["position"] for m in older["items"]] == [1, 2] and older["has_more"] is False

    synced = (await client.get(url, params={"after_seq": 2}, headers=alice.headers)).json()
    assert [m["seq"] for m in synced["items"]] == [3, 4, 5] and synced["has_more"] is False

    # An update gives the message a new seq, so sync picks it up again.
    row = await db.get(ThreadMessage, posted[0]["id"])
    assert row is not None
    await update_message(db, row, content="edited")
    await db.commit()
    changed = (await client.get(url, params={"after_seq": 5}, headers=alice.headers)).json()
    assert [(m["id"], m["seq"], m["content"]) for m in changed["items"]] == [
        (posted[0]["id"], 6, "edited")
    ]
    assert changed["last_seq"] == 6
    nothing = (await client.get(url, params={"after_seq": 6}, headers=alice.headers)).json()
    # current_leaf_id: the tip of the branch shown (here the last message posted)
    assert nothing == {
        "items": [],
        "last_seq": 6,
        "has_more": False,
        "current_leaf_id": posted[-1]["id"],
    }

    paged = (
        await client.get(url, params={"after_seq": 0, "limit": 2}, headers=alice.headers)
    ).json()
    assert [m["seq"] for m in paged["items"]] == [2, 3] and paged["has_more"] is True


async def test_tool_activity_round_trips(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    from app.threads.writer import create_message

    thread_id = (await create_thread(client, alice))["id"]
    activity = {
        "id": "call_1",
        "name": "tasks",
        "status": "success",
        "input": {"action": "create", "title": "Buy milk"},
        "data": {"task_title": "Buy milk"},
        "display_message": "Creating task…",
        "started_at": "2026-01-01T00:00:00+00:00",
    }
    await create_message(db, thread_id, role="tool", tool_activity=activity, tool_call_id="call_1")
    await db.commit()
    items = (await client.get(f"/api/threads/{thread_id}/messages", headers=alice.headers)).json()[
        "items"
    ]
    # The lean list path and the ORM path for one message serialise identically.
    single = await client.get(
        f"/api/threads/{thread_id}/messages/{items[0]['id']}", headers=alice.headers
    )
    assert single.json() == items[0]
    got = items[0]["tool_activity"]
    assert (
        got["id"] == "call_1" and got["status"] == "success" and got["input"]["title"] == "Buy milk"
    )
    assert got["error"] is None and got["started_at"].startswith("2026-01-01T00:00:00")


async def test_message_limits(client: AsyncClient, alice: ApiUser) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    too_long = await post_message(client, alice, thread_id, "x" * 32_001)
    body = assert_problem(too_long, 400)
    assert body["errors"][0]["field"] == "content"
    assert (await post_message(client, alice, thread_id, "x" * 32_000)).status_code == 202

    empty = await post_message(client, alice, thread_id, "")
    assert_problem(empty, 400)

    huge = await client.post(
        f"/api/threads/{thread_id}/messages",
        content=b'{"content": "' + b"x" * (300 * 1024) + b'"}',
        headers={**alice.headers, "content-type": "application/json"},
    )
    assert_problem(huge, 413)

    url = f"/api/threads/{thread_id}/messages"
    assert_problem(await client.get(url, params={"limit": 0}, headers=alice.headers), 400)
    assert_problem(await client.get(url, params={"after_seq": -1}, headers=alice.headers), 400)
    assert_problem(
        await client.get(url, params={"before_position": "abc"}, headers=alice.headers), 400
    )


async def test_unknown_message_is_404(client: AsyncClient, alice: ApiUser) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    response = await client.get(
        f"/api/threads/{thread_id}/messages/00000000-0000-0000-0000-000000000000",
        headers=alice.headers,
    )
    assert_problem(response, 404)


async def test_malformed_json_body_is_400_problem(client: AsyncClient, alice: ApiUser) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    response = await client.post(
        f"/api/threads/{thread_id}/messages",
        content=b"{not json",
        headers={**alice.headers, "content-type": "application/json"},
    )
    assert_problem(response, 400)


async def test_an_unknown_tool_in_the_allow_list_is_400_naming_it(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    thread = await create_thread(client, alice)
    typo = await post_message(client, alice, thread["id"], "hi", tools=["tasks", "taks"])
    problem = assert_problem(typo, 400)
    assert "Unknown tool(s) in tools: taks." in problem["detail"]
    assert [error["field"] for error in problem["errors"]] == ["tools[1]"]
    stored = await db.scalar(select(func.count()).where(ThreadMessage.thread_id == thread["id"]))
    assert stored == 0  # nothing queued for a run that could use no tool
    specialist = await post_message(client, alice, thread["id"], "hi", tools=["ask_sage"])
    assert specialist.status_code == 202, specialist.text  # whose specialist: the run judges
