from __future__ import annotations

from httpx import AsyncClient

from tests.api.support import assert_problem, create_thread, post_message
from tests.conftest import ApiUser


async def _list_ids(
    client: AsyncClient, user: ApiUser, **params: object
) -> tuple[list[str], str | None]:
    response = await client.get("/api/threads", params=params, headers=user.headers)
    assert response.status_code == 200, response.text
    body = response.json()
    return [t["id"] for t in body["items"]], body["next_cursor"]


async def test_thread_crud(client: AsyncClient, alice: ApiUser) -> None:
    thread = await create_thread(client, alice, title="Groceries")
    assert thread["agent_id"] == str(alice.agent.id)
    assert thread["last_seq"] == 0 and thread["active_run_id"] is None

    got = await client.get(f"/api/threads/{thread['id']}", headers=alice.headers)
    assert got.status_code == 200 and got.json()["title"] == "Groceries"

    renamed = await client.patch(
        f"/api/threads/{thread['id']}", json={"title": "Errands"}, headers=alice.headers
    )
    assert renamed.status_code == 200 and renamed.json()["title"] == "Errands"

    deleted = await client.delete(f"/api/threads/{thread['id']}", headers=alice.headers)
    assert deleted.status_code == 204
    assert_problem(await client.get(f"/api/threads/{thread['id']}", headers=alice.headers), 404)


async def test_create_thread_with_unknown_agent_is_404(client: AsyncClient, alice: ApiUser) -> None:
    response = await client.post(
        "/api/threads",
        json={"agent_id": "00000000-0000-0000-0000-000000000000"},
        headers=alice.headers,
    )
    assert_problem(response, 404)


async def test_list_is_newest_activity_first_and_paginates(
    client: AsyncClient, alice: ApiUser, bob: ApiUser
) -> None:
    first, second, third = [(await create_thread(client, alice, f"t{i}"))["id"] for i in range(3)]
    await create_thread(client, bob, "not alice's")

    ids, cursor = await _list_ids(client, alice)
    assert ids == [third, second, first] and cursor is None

    # Posting a message is activity: the thread moves to the top.
    assert (await post_message(client, alice, first)).status_code == 202
    ids, _ = await _list_ids(client, alice)
    assert ids == [first, third, second]

    page_one, cursor = await _list_ids(client, alice, limit=2)
    assert page_one == [first, third] and cursor
    page_two, cursor = await _list_ids(client, alice, limit=2, cursor=cursor)
    assert page_two == [second] and cursor is None


async def test_listed_thread_shows_active_run(client: AsyncClient, alice: ApiUser) -> None:
    thread = await create_thread(client, alice)
    run = (await post_message(client, alice, thread["id"])).json()["run"]
    listed = (await client.get("/api/threads", headers=alice.headers)).json()["items"][0]
    assert listed["active_run_id"] == run["id"] and listed["last_seq"] == 1


async def test_bad_cursor_and_limit_below_one_are_400(client: AsyncClient, alice: ApiUser) -> None:
    assert_problem(
        await client.get("/api/threads", params={"cursor": "!!!"}, headers=alice.headers), 400
    )
    body = assert_problem(
        await client.get("/api/threads", params={"limit": 0}, headers=alice.headers), 400
    )
    assert body["errors"][0]["field"] == "limit"
