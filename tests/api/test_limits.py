"""Hostile input never gets a 500: NUL characters, huge numbers, odd encodings."""

from __future__ import annotations

from httpx import AsyncClient

from tests.api.support import assert_problem, create_thread, post_message
from tests.conftest import ApiUser


async def test_nul_characters_are_stored_or_refused_never_500(
    client: AsyncClient, alice: ApiUser, dialect: str
) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    message = await post_message(client, alice, thread_id, "a\x00b")
    agent = await client.post("/api/agents", json={"name": "n\x00l"}, headers=alice.headers)
    login = await client.post("/api/auth/token", json={"email": "a\x00@b", "password": "\x00"})
    if dialect == "postgresql":
        # PostgreSQL cannot store NUL in text: a 400 problem, nothing half-written.
        assert_problem(message, 400)
        assert_problem(agent, 400)
        page = (
            await client.get(f"/api/threads/{thread_id}/messages", headers=alice.headers)
        ).json()
        assert page["items"] == [] and page["last_seq"] == 0
    else:
        assert message.status_code == 202 and message.json()["message"]["content"] == "a\x00b"
        assert agent.status_code == 201
    assert_problem(login, 401 if dialect == "sqlite" else 400)


async def test_huge_numbers_are_400(client: AsyncClient, alice: ApiUser) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    url = f"/api/threads/{thread_id}/messages"
    for params in ({"limit": 10**30}, {"after_seq": 2**64}, {"before_position": 2**40}):
        assert_problem(await client.get(url, params=params, headers=alice.headers), 400)


async def test_the_largest_before_position_the_spec_allows_is_answered(
    client: AsyncClient, alice: ApiUser
) -> None:
    """It fits the 32-bit position column; the next one up is refused by name, before any
    query (on PostgreSQL it used to reach the database and fail there)."""
    thread_id = (await create_thread(client, alice))["id"]
    url = f"/api/threads/{thread_id}/messages"
    largest = await client.get(url, params={"before_position": 2**31 - 1}, headers=alice.headers)
    assert largest.status_code == 200, largest.text
    above = await client.get(url, params={"before_position": 2**31}, headers=alice.headers)
    assert_problem(above, 400)
    assert "before_position" in above.text, above.text


async def test_non_json_and_wrong_types_are_400(client: AsyncClient, alice: ApiUser) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    url = f"/api/threads/{thread_id}/messages"
    for body in (b"\xff\xfe", b"[]", b'{"content": 5}', b'"text"', b"null"):
        response = await client.post(
            url, content=body, headers={**alice.headers, "content-type": "application/json"}
        )
        assert_problem(response, 400)
    bad_id = await client.get("/api/threads/not-a-uuid", headers=alice.headers)
    assert bad_id.status_code in (400, 404) and bad_id.status_code < 500


async def test_unknown_routes_and_methods_are_problems(client: AsyncClient, alice: ApiUser) -> None:
    assert_problem(await client.get("/api/nope", headers=alice.headers), 404)
    assert_problem(await client.put("/api/threads", headers=alice.headers), 405)
