"""memory: save (upsert by key), recall (not user-facing), search (full text), forget."""

from __future__ import annotations

from app.tools.assembly import get_registry
from tests.conftest import ApiUser
from tests.tools.conftest import MakeHarness, ToolHarness


async def _save(harness: ToolHarness, content: str, **extra: object):
    result = await harness.call("memory", {"action": "save", "content": content, **extra})
    assert result.ok, result
    return result


async def test_save_and_recall_by_key(harness: ToolHarness) -> None:
    saved = await _save(harness, "Takes coffee black.", key="coffee", tags=["food"])
    assert saved.data["created"] is True and saved.data["key"] == "coffee"
    recalled = await harness.call("memory", {"action": "recall", "key": "coffee"})
    assert [m["content"] for m in recalled.data["memories"]] == ["Takes coffee black."]
    assert recalled.data["memories"][0]["tags"] == ["food"]


async def test_saving_the_same_key_replaces(harness: ToolHarness) -> None:
    await _save(harness, "Lives in Paris.", key="home")
    replaced = await _save(harness, "Lives in Lyon.", key="home")
    assert replaced.data["created"] is False
    recalled = await harness.call("memory", {"action": "recall"})
    assert [m["content"] for m in recalled.data["memories"]] == ["Lives in Lyon."]


async def test_recall_recent_and_by_tag(harness: ToolHarness) -> None:
    await _save(harness, "one", tags=["a"])
    await _save(harness, "two", tags=["b"])
    await _save(harness, "three", tags=["a"])
    recent = await harness.call("memory", {"action": "recall", "limit": 2})
    assert recent.data["count"] == 2
    tagged = await harness.call("memory", {"action": "recall", "tag": "a"})
    assert sorted(m["content"] for m in tagged.data["memories"]) == ["one", "three"]


async def test_recall_unknown_key(harness: ToolHarness) -> None:
    result = await harness.call("memory", {"action": "recall", "key": "nope"})
    assert result.error_type == "user_error" and "search" in result.suggestion


async def test_full_text_search_ranks_and_stems(harness: ToolHarness) -> None:
    await _save(harness, "The user is allergic to peanuts and shellfish.")
    await _save(harness, "Favourite colour is green.")
    await _save(harness, "Plays tennis on Sundays.", key="sports")
    result = await harness.call("memory", {"action": "search", "query": "peanut allergy?"})
    assert [m["content"] for m in result.data["memories"]] == [
        "The user is allergic to peanuts and shellfish."
    ]
    by_key = await harness.call("memory", {"action": "search", "query": "sports"})
    assert by_key.data["count"] == 1
    nothing = await harness.call("memory", {"action": "search", "query": "chess"})
    assert nothing.ok and nothing.data["memories"] == []


async def test_search_query_syntax_is_inert(harness: ToolHarness) -> None:
    await _save(harness, "Likes jazz.")
    for query in ['jazz" OR 1=1 --', "jazz & !", "NEAR(jazz)", "*", "'; DROP TABLE memories; --"]:
        result = await harness.call("memory", {"action": "search", "query": query})
        assert result.ok, (query, result)
    found = await harness.call("memory", {"action": "search", "query": 'jazz" OR'})
    assert found.data["count"] == 1


async def test_search_sees_updates_and_forgets(harness: ToolHarness) -> None:
    saved = await _save(harness, "Drives a red car.", key="car")
    await _save(harness, "Drives a blue bicycle.", key="car")
    assert (await harness.call("memory", {"action": "search", "query": "red"})).data["count"] == 0
    assert (await harness.call("memory", {"action": "search", "query": "bicycle"})).data[
        "count"
    ] == 1
    forgot = await harness.call(
        "memory", {"action": "forget", "memory_id": saved.data["memory_id"]}
    )
    assert forgot.ok and forgot.data["content"] == "Drives a blue bicycle."
    assert (await harness.call("memory", {"action": "search", "query": "bicycle"})).data[
        "count"
    ] == 0


async def test_forget_by_key_and_unknown(harness: ToolHarness) -> None:
    await _save(harness, "x", key="k")
    assert (await harness.call("memory", {"action": "forget", "key": "k"})).ok
    repeated = await harness.call("memory", {"action": "forget", "key": "k"})
    assert repeated.ok and repeated.duplicate  # answered from the first, nothing deleted twice
    harness.new_run()
    again = await harness.call("memory", {"action": "forget", "key": "k"})
    assert again.error_type == "user_error"


async def test_forget_needs_exactly_one_selector(harness: ToolHarness) -> None:
    neither = await harness.call("memory", {"action": "forget"})
    assert neither.error_type == "validation_error"
    assert "exactly one of memory_id or key" in neither.error


async def test_memories_are_per_user(
    make_harness: MakeHarness, alice: ApiUser, bob: ApiUser
) -> None:
    alice_tools, bob_tools = await make_harness(alice), await make_harness(bob)
    saved = await _save(alice_tools, "Secret recipe uses saffron.", key="recipe")
    assert (await bob_tools.call("memory", {"action": "search", "query": "saffron"})).data[
        "count"
    ] == 0
    assert (await bob_tools.call("memory", {"action": "recall"})).data["count"] == 0
    stolen = await bob_tools.call(
        "memory", {"action": "forget", "memory_id": saved.data["memory_id"]}
    )
    assert stolen.error_type == "user_error"


def test_recall_is_not_user_facing_and_forget_asks_first() -> None:
    memory = get_registry().get("memory")
    assert memory.needs_confirmation("forget") and not memory.needs_confirmation("save")
    assert not memory.is_user_facing_call("recall")
    assert memory.is_user_facing_call("save") and memory.is_user_facing_call("search")


async def test_validation(harness: ToolHarness) -> None:
    missing = await harness.call("memory", {"action": "save"})
    assert missing.details["required_param"] == "content"
    too_many_tags = await harness.call(
        "memory", {"action": "save", "content": "x", "tags": [str(i) for i in range(21)]}
    )
    assert too_many_tags.details["errors"][0]["field"] == "tags"
    empty_query = await harness.call("memory", {"action": "search", "query": ""})
    assert empty_query.details["errors"][0]["field"] == "query"
