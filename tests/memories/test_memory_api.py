"""The user's memory API: list, get, search, edit, delete one, delete all; only one's own."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.api.support import assert_problem
from tests.conftest import ApiUser
from tests.memories.support import embed_all, save


async def test_list_pages_newest_first_with_the_agent_that_saved_each(
    client: httpx.AsyncClient, alice: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    saved = [
        await save(session_factory, alice.user.id, f"fact {i}", agent_id=alice.agent.id)
        for i in range(3)
    ]
    first = await client.get("/api/memories", params={"limit": 2}, headers=alice.headers)
    assert first.status_code == 200, first.text
    page = first.json()
    assert [m["content"] for m in page["items"]] == ["fact 2", "fact 1"]
    item = page["items"][0]
    assert item["agent_id"] == str(alice.agent.id)
    assert item["agent_name"] == alice.agent.name
    assert item["created_at"] and item["updated_at"] and item["tags"] == []
    second = await client.get(
        "/api/memories", params={"limit": 2, "cursor": page["next_cursor"]}, headers=alice.headers
    )
    assert [m["id"] for m in second.json()["items"]] == [str(saved[0].id)]
    assert second.json()["next_cursor"] is None


async def test_edit_then_delete_one(
    client: httpx.AsyncClient, alice: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    memory = await save(session_factory, alice.user.id, "Lives in Paris", key="home")
    url = f"/api/memories/{memory.id}"
    edited = await client.patch(
        url, json={"content": "Lives in Lyon", "tags": ["place"]}, headers=alice.headers
    )
    assert edited.status_code == 200, edited.text
    assert edited.json()["content"] == "Lives in Lyon"
    assert edited.json()["tags"] == ["place"]
    assert edited.json()["key"] == "home"
    assert (await client.get(url, headers=alice.headers)).json()["content"] == "Lives in Lyon"

    assert (await client.delete(url, headers=alice.headers)).status_code == 204
    assert_problem(await client.get(url, headers=alice.headers), 404)
    assert (await client.get("/api/memories", headers=alice.headers)).json()["items"] == []


async def test_delete_all_forgets_only_ones_own(
    client: httpx.AsyncClient,
    alice: ApiUser,
    bob: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    for content in ("a", "b"):
        await save(session_factory, alice.user.id, content)
    await save(session_factory, bob.user.id, "bob's")
    deleted = await client.delete("/api/memories", headers=alice.headers)
    assert deleted.status_code == 200, deleted.text
    assert deleted.json() == {"deleted": 2}
    assert (await client.get("/api/memories", headers=alice.headers)).json()["items"] == []
    bobs = (await client.get("/api/memories", headers=bob.headers)).json()["items"]
    assert [m["content"] for m in bobs] == ["bob's"]


async def test_another_users_memory_is_not_found(
    client: httpx.AsyncClient,
    alice: ApiUser,
    bob: ApiUser,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:
    memory = await save(session_factory, alice.user.id, "secret")
    url = f"/api/memories/{memory.id}"
    assert_problem(await client.get(url, headers=bob.headers), 404)
    assert_problem(await client.patch(url, json={"content": "x"}, headers=bob.headers), 404)
    assert_problem(await client.delete(url, headers=bob.headers), 404)
    found = await client.get("/api/memories/search", params={"q": "secret"}, headers=bob.headers)
    assert found.json()["items"] == []
    assert (await client.get(url, headers=alice.headers)).json()["content"] == "secret"


async def test_bad_input_is_a_problem_not_a_crash(
    client: httpx.AsyncClient, alice: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    memory = await save(session_factory, alice.user.id, "x")
    url = f"/api/memories/{memory.id}"
    assert_problem(await client.patch(url, json={"content": ""}, headers=alice.headers), 400)
    assert_problem(await client.patch(url, json={"owner_id": "x"}, headers=alice.headers), 400)
    long = {"content": "x" * 10_001}
    assert_problem(await client.patch(url, json=long, headers=alice.headers), 400)
    search = "/api/memories/search"
    assert_problem(await client.get(search, params={"q": ""}, headers=alice.headers), 400)
    too_many = {"q": "x", "limit": 1000}
    assert_problem(await client.get(search, params=too_many, headers=alice.headers), 400)
    assert_problem(await client.get("/api/memories"), 401)


async def test_search_finds_by_meaning_and_says_how(
    client: httpx.AsyncClient, alice: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    coffee = await save(session_factory, alice.user.id, "I drink my coffee black")
    await save(session_factory, alice.user.id, "My sister lives in Berlin")
    await save(session_factory, alice.user.id, "The car is due for a service in March")
    await embed_all(session_factory)
    found = await client.get(
        "/api/memories/search", params={"q": "what beverage do I like"}, headers=alice.headers
    )
    assert found.status_code == 200, found.text
    body = found.json()
    assert body["mode"] == "hybrid"
    assert body["items"][0]["memory"]["id"] == str(coffee.id)
    assert body["items"][0]["matched_by"] in ("meaning", "both")
    # The relevance floor: a query about nothing remembered recalls nothing.
    unrelated = await client.get(
        "/api/memories/search", params={"q": "quantum chromodynamics"}, headers=alice.headers
    )
    assert unrelated.json()["items"] == []


async def test_search_follows_memories_added_and_edited_after_an_earlier_search(
    client: httpx.AsyncClient, alice: ApiUser, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    """The user's vectors are kept between recalls (app/memories/vector_cache.py): a
    memory embedded or re-embedded since is seen by the next recall."""

    async def top(query: str) -> str | None:
        found = await client.get("/api/memories/search", params={"q": query}, headers=alice.headers)
        items = found.json()["items"]
        return items[0]["memory"]["content"] if items else None

    await save(session_factory, alice.user.id, "My sister lives in Berlin")
    await embed_all(session_factory)
    assert await top("what beverage do I like") is None
    coffee = await save(session_factory, alice.user.id, "I drink my coffee black")
    await embed_all(session_factory)
    assert await top("what beverage do I like") == "I drink my coffee black"
    edited = await client.patch(
        f"/api/memories/{coffee.id}", json={"content": "I am allergic to peanuts"},
        headers=alice.headers,
    )  # fmt: skip
    assert edited.status_code == 200, edited.text
    await embed_all(session_factory)
    assert await top("what food should I avoid") == "I am allergic to peanuts"
