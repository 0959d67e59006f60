"""The latest page is served from a cache keyed by the thread's last_seq: it must never
be stale, and never reach anyone the database would not show the thread to."""

from __future__ import annotations

from uuid import UUID

from httpx import AsyncClient
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ThreadMessage
from app.threads.message_reads import LatestPageCache, latest_pages
from app.threads.writer import update_message
from tests.api.support import assert_problem, create_thread, post_message
from tests.conftest import ApiUser


async def _thread_with_messages(client: AsyncClient, user: ApiUser, count: int) -> str:
    thread_id = (await create_thread(client, user))["id"]
    for i in range(count):
        assert (await post_message(client, user, thread_id, f"m{i}")).status_code == 202
    return thread_id


async def test_a_cached_page_follows_message_updates(
    client: AsyncClient, db: AsyncSession, alice: ApiUser
) -> None:
    latest_pages.clear()
    thread_id = await _thread_with_messages(client, alice, 3)
    url = f"/api/threads/{thread_id}/messages"
    first = await client.get(url, headers=alice.headers)
    assert first.status_code == 200
    assert first.headers["content-type"].startswith("application/json")
    assert (await client.get(url, headers=alice.headers)).json() == first.json()  # a hit

    row = await db.get(ThreadMessage, UUID(first.json()["items"][0]["id"]))
    assert row is not None
    await update_message(db, row, content="edited")
    await db.commit()
    after_update = (await client.get(url, headers=alice.headers)).json()
    assert after_update["items"][0]["content"] == "edited"
    assert after_update["last_seq"] == first.json()["last_seq"] + 1

    assert (await post_message(client, alice, thread_id, "newest")).status_code == 202
    after_post = (await client.get(url, headers=alice.headers)).json()
    assert after_post["items"][-1]["content"] == "newest"
    # Other limits are cached apart and agree with the uncached paths.
    two = (await client.get(url, params={"limit": 2}, headers=alice.headers)).json()
    assert two["items"] == after_post["items"][-2:] and two["has_more"] is True
    synced = (await client.get(url, params={"after_seq": 0}, headers=alice.headers)).json()
    assert {m["id"]: m for m in synced["items"]} == {m["id"]: m for m in after_post["items"]}


async def test_a_cached_page_is_not_shown_to_another_user(
    client: AsyncClient, alice: ApiUser, bob: ApiUser
) -> None:
    thread_id = await _thread_with_messages(client, alice, 2)
    url = f"/api/threads/{thread_id}/messages"
    assert (await client.get(url, headers=alice.headers)).status_code == 200  # now cached
    assert_problem(await client.get(url, headers=bob.headers), 404)
    assert (await client.get(url)).status_code == 401


async def test_a_deleted_thread_is_404_although_its_page_was_cached(
    client: AsyncClient, alice: ApiUser
) -> None:
    thread_id = await _thread_with_messages(client, alice, 2)
    url = f"/api/threads/{thread_id}/messages"
    assert (await client.get(url, headers=alice.headers)).status_code == 200  # now cached
    deleted = await client.delete(f"/api/threads/{thread_id}", headers=alice.headers)
    assert deleted.status_code == 204
    assert_problem(await client.get(url, headers=alice.headers), 404)


async def test_an_empty_thread_and_an_unknown_one(client: AsyncClient, alice: ApiUser) -> None:
    thread_id = (await create_thread(client, alice))["id"]
    empty = await client.get(f"/api/threads/{thread_id}/messages", headers=alice.headers)
    assert empty.json() == {"items": [], "last_seq": 0, "has_more": False}
    unknown = "00000000-0000-0000-0000-000000000001"
    assert_problem(await client.get(f"/api/threads/{unknown}/messages", headers=alice.headers), 404)


def test_the_cache_is_bounded_by_entries_and_bytes() -> None:
    cache = LatestPageCache(max_entries=2, max_bytes=1600)
    ids = [UUID(int=i) for i in range(4)]
    cache.put(ids[0], 50, 1, b"a" * 100)
    cache.put(ids[1], 50, 1, b"b" * 100)
    cache.put(ids[2], 50, 1, b"c" * 100)
    assert cache.get(ids[0], 50, 1) is None and cache.get(ids[2], 50, 1) == b"c" * 100
    cache.put(ids[3], 50, 1, b"d" * 101)  # over max_bytes // 16: not kept
    assert cache.get(ids[3], 50, 1) is None
    cache.put(ids[2], 50, 0, b"old")  # older than what is stored: ignored
    assert cache.get(ids[2], 50, 1) == b"c" * 100 and cache.get(ids[2], 50, 0) is None
