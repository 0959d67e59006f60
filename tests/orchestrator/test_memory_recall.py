"""Recall ahead of the model call: an agent type with `memory_recall` gets the memories about
the user's latest message in its context, and the phone sees the cell that says so."""

from __future__ import annotations

import json
from collections import OrderedDict

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.memories import recall
from app.memories.embedding import EmbeddedEmbedder
from tests.memories.support import embed_all, save
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Text
from tests.support.result_schemas import assert_matches_result_schema


async def test_memories_about_the_message_come_before_the_model_and_show_as_a_cell(
    api: OrchestratorApi,
    session_factory: async_sessionmaker[AsyncSession],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    embedded: list[list[str]] = []
    embed = EmbeddedEmbedder.embed

    async def counted(self: EmbeddedEmbedder, texts: list[str]) -> object:
        embedded.append(texts)
        return await embed(self, texts)

    monkeypatch.setattr(EmbeddedEmbedder, "embed", counted)
    monkeypatch.setattr(recall, "_recent_queries", OrderedDict())  # another test's queries
    owner = api.user.user.id
    coffee = await save(session_factory, owner, "I drink my coffee black")
    await save(session_factory, owner, "My sister lives in Berlin")
    await save(session_factory, owner, "The car is due for a service in March")
    await embed_all(session_factory)
    companion = await api.add_agent(name="Phone", agent_type="companion")  # memory_recall: 3
    api.llm.script(Text("A black coffee, then."))

    thread_id, run = await api.turn(
        "What beverage should you bring me?", await api.new_thread(companion.id)
    )
    assert run["status"] == "completed", run

    cells = await api.tool_messages(thread_id)
    assert len(cells) == 1
    activity = cells[0]["tool_activity"]
    assert activity["name"] == "memory" and activity["status"] == "success"
    data = activity["data"]
    assert data["type"] == "memories" and data["action"] == "search"
    assert data["memories"][0]["memory_id"] == str(coffee.id)
    assert activity["display_message"] == f"Remembered {data['count']} thing" + (
        "" if data["count"] == 1 else "s"
    )
    assert_matches_result_schema("memory", "search", data)
    # The model read them before answering: the call and its result precede its turn.
    sent = api.llm.requests[0]["messages"]
    result = json.loads(sent[-1]["content"])
    assert sent[-1]["role"] == "tool"
    assert "I drink my coffee black" in json.dumps(result)
    # The recall ahead of the model and the cell's search embedded the message once.
    assert embedded.count(["What beverage should you bring me?"]) == 1


async def test_nothing_remembered_about_it_means_no_cell(
    api: OrchestratorApi, session_factory: async_sessionmaker[AsyncSession]
) -> None:
    await save(session_factory, api.user.user.id, "My sister lives in Berlin")
    await embed_all(session_factory)
    companion = await api.add_agent(name="Phone", agent_type="companion")
    api.llm.script(Text("Here is a haiku."))
    thread_id, run = await api.turn(
        "Explain quantum chromodynamics", await api.new_thread(companion.id)
    )
    assert run["status"] == "completed", run
    assert await api.tool_messages(thread_id) == []


async def test_an_agent_type_without_recall_reads_nothing_ahead(
    api: OrchestratorApi, session_factory: async_sessionmaker[AsyncSession], db: AsyncSession
) -> None:
    await save(session_factory, api.user.user.id, "I drink my coffee black")
    await embed_all(session_factory)
    api.llm.script(Text("Tea?"))
    thread_id, run = await api.turn("What beverage do I like?")  # `tester`: no recall
    assert run["status"] == "completed", run
    assert await api.tool_messages(thread_id) == []
