"""`litestar tools list|consolidate`: the rewrite itself on both databases, and the CLI."""

from __future__ import annotations

import asyncio

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent
from app.tools.runtime.consolidate import consolidated, expanded, rewrite_enabled_tools
from tests.conftest import ApiUser
from tests.factories import AgentFactory
from tests.support.cli import litestar

LEGACY = ["create_task", "list_tasks", "web_search", "web_fetch", "view_system_prompt"]


def test_mapping_both_ways() -> None:
    # action-level permissions kept: a legacy name is one action of its domain tool, all of
    # a tool's legacy names the whole tool (web_search + web_fetch: web)
    assert consolidated(LEGACY) == ["tasks.create", "tasks.list", "web", "self_authoring.view"]
    assert consolidated(["WebSearchTool", "save_memory", "recall_memory"]) == [
        "web.search", "memory.save", "memory.recall",
    ]  # fmt: skip
    assert consolidated(["tasks", "web"]) == ["tasks", "web"]  # idempotent
    assert consolidated(consolidated(LEGACY)) == consolidated(LEGACY)
    assert consolidated(["mystery", "web_search"]) == ["mystery", "web.search"]
    assert consolidated(["list_tasks"]) == ["tasks.list"]
    # --reverse restores exactly what was there
    assert expanded(consolidated(LEGACY)) == LEGACY
    assert expanded(["tasks.list", "self_authoring.view"]) == ["list_tasks", "view_system_prompt"]
    assert expanded(["tasks", "web"]) == [
        "create_task", "update_task", "complete_task", "list_tasks", "web_search", "web_fetch",
    ]  # fmt: skip
    assert expanded(expanded(["memory"])) == expanded(["memory"])  # idempotent
    assert consolidated(expanded(["tasks", "memory", "self_authoring"])) == [
        "tasks", "memory", "self_authoring",
    ]  # fmt: skip


async def _agents(db: AsyncSession, owner: ApiUser) -> dict[str, Agent]:
    specs = {"legacy": LEGACY, "modern": ["web"], "everything": None, "odd": ["mystery"]}
    agents = {}
    for name, tools in specs.items():
        agent = AgentFactory.build(owner_id=owner.user.id, name=name, enabled_tools=tools)
        db.add(agent)
        agents[name] = agent
    await db.commit()
    return agents


async def _tools_by_name(db: AsyncSession) -> dict[str, list[str] | None]:
    db.expire_all()
    return {a.name: a.enabled_tools for a in await db.scalars(select(Agent))}


async def test_rewrite_dry_run_forward_reverse_idempotent(
    db: AsyncSession, session_factory, alice: ApiUser
) -> None:
    await _agents(db, alice)
    async with session_factory() as session:
        dry = await rewrite_enabled_tools(session, dry_run=True)
        await session.commit()
    assert [(c.agent_name, c.after) for c in dry] == [
        ("legacy", ["tasks.create", "tasks.list", "web", "self_authoring.view"])
    ]
    assert (await _tools_by_name(db))["legacy"] == LEGACY  # nothing written
    async with session_factory() as session:
        await rewrite_enabled_tools(session)
        await session.commit()
    after = await _tools_by_name(db)
    assert after["legacy"] == ["tasks.create", "tasks.list", "web", "self_authoring.view"]
    assert after["everything"] is None
    assert after["odd"] == ["mystery"] and after["modern"] == ["web"]
    async with session_factory() as session:
        assert await rewrite_enabled_tools(session) == []  # idempotent
    async with session_factory() as session:
        back = await rewrite_enabled_tools(session, reverse=True)
        await session.commit()
    assert {c.agent_name for c in back} == {"legacy", "modern"}
    assert (await _tools_by_name(db))["modern"] == ["web_search", "web_fetch"]
    assert (await _tools_by_name(db))["legacy"] == LEGACY  # exactly what was there


async def test_cli_list_and_consolidate(
    db: AsyncSession, alice: ApiUser, database_url: str
) -> None:
    agents = await _agents(db, alice)
    listed = await asyncio.to_thread(litestar, database_url, "tools", "list")
    assert listed.exit_code == 0, listed.output
    assert (
        "memory: save, recall, search, forget  [no cell for recall; asks before forget]"
        in listed.stdout
    )
    assert "agent types: assistant, focused" in listed.stdout
    # where the tools it cannot list come from
    assert "MCP tools" in listed.stdout and "ask_<name>" in listed.stdout

    dry = await asyncio.to_thread(litestar, database_url, "tools", "consolidate", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert (
        f"{agents['legacy'].id} legacy: {LEGACY} -> "
        "['tasks.create', 'tasks.list', 'web', 'self_authoring.view']" in dry.stdout
    )
    assert "1 agent(s) would change to domain tools." in dry.stdout
    assert (await _tools_by_name(db))["legacy"] == LEGACY

    done = await asyncio.to_thread(litestar, database_url, "tools", "consolidate")
    assert "1 agent(s) changed to domain tools." in done.stdout
    again = await asyncio.to_thread(litestar, database_url, "tools", "consolidate")
    assert "0 agent(s) changed" in again.stdout
    back = await asyncio.to_thread(litestar, database_url, "tools", "consolidate", "--reverse")
    assert "2 agent(s) changed to legacy names." in back.stdout
    assert (await _tools_by_name(db))["legacy"] == LEGACY


async def _effective_tools(client, user: ApiUser) -> dict[str, list[str]]:
    response = await client.get("/api/agents", headers=user.headers)
    assert response.status_code == 200, response.text
    return {a["name"]: a["tools"] for a in response.json()["items"] if a["name"] != user.agent.name}


async def test_both_directions_keep_every_agents_effective_tools(
    client, db: AsyncSession, session_factory, alice: ApiUser
) -> None:
    await _agents(db, alice)
    partial = AgentFactory.build(owner_id=alice.user.id, name="partial", enabled_tools=["tasks"])
    db.add(partial)
    await db.commit()
    before = await _effective_tools(client, alice)
    assert before["legacy"] == ["tasks", "web", "self_authoring"]  # legacy names read as domains
    for reverse in (False, True, False, True):
        async with session_factory() as session:
            await rewrite_enabled_tools(session, reverse=reverse)
            await session.commit()
        assert await _effective_tools(client, alice) == before, f"reverse={reverse}"
    # what --reverse wrote is accepted back by the API, and keeps the effective tools
    reversed_tools = (await _tools_by_name(db))["partial"]
    assert reversed_tools == ["create_task", "update_task", "complete_task", "list_tasks"]
    await db.commit()
    agents = (await client.get("/api/agents", headers=alice.headers)).json()["items"]
    partial_id = next(a["id"] for a in agents if a["name"] == "partial")
    patched = await client.patch(
        f"/api/agents/{partial_id}", json={"enabled_tools": reversed_tools}, headers=alice.headers
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["tools"] == ["tasks"]
    typo = await client.patch(
        f"/api/agents/{partial_id}", json={"enabled_tools": ["create_tsk"]}, headers=alice.headers
    )
    assert typo.status_code == 400
