from __future__ import annotations

import pytest
from httpx import AsyncClient
from sqlalchemy.ext.asyncio import AsyncSession

from app.agents import services
from app.lib.problems import ProblemException
from tests.api.support import assert_problem
from tests.conftest import ApiUser, make_api_user
from tests.factories import AgentFactory


async def test_create_get_list_and_patch_agent(client: AsyncClient, alice: ApiUser) -> None:
    created = await client.post(
        "/api/agents",
        json={"name": "Helper", "agent_type": "assistant", "enabled_tools": ["tasks", "web"]},
        headers=alice.headers,
    )
    assert created.status_code == 201, created.text
    agent = created.json()
    assert agent["name"] == "Helper" and agent["tools"] == ["tasks", "web"]
    assert agent["is_shared"] is False

    fetched = await client.get(f"/api/agents/{agent['id']}", headers=alice.headers)
    assert fetched.status_code == 200 and fetched.json() == agent

    names = [
        a["name"] for a in (await client.get("/api/agents", headers=alice.headers)).json()["items"]
    ]
    assert set(names) == {"Helper", alice.agent.name}

    patched = await client.patch(
        f"/api/agents/{agent['id']}",
        json={"system_prompt": "Be brief.", "enabled_tools": None},
        headers=alice.headers,
    )
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert body["system_prompt"] == "Be brief." and body["name"] == "Helper"
    assert body["enabled_tools"] is None and body["tools"] == [
        "tasks",
        "web",
        "memory",
        "self_authoring",
        "schedules",
    ]


async def test_agent_name_is_unique_per_owner(
    client: AsyncClient, alice: ApiUser, bob: ApiUser
) -> None:
    duplicate = await client.post(
        "/api/agents", json={"name": alice.agent.name}, headers=alice.headers
    )
    assert_problem(duplicate, 409)
    # Another owner may use the same name.
    other = await client.post("/api/agents", json={"name": alice.agent.name}, headers=bob.headers)
    assert other.status_code == 201

    second = (
        await client.post("/api/agents", json={"name": "Second"}, headers=alice.headers)
    ).json()
    rename = await client.patch(
        f"/api/agents/{second['id']}", json={"name": alice.agent.name}, headers=alice.headers
    )
    assert_problem(rename, 409)


async def test_unknown_agent_type_is_400_with_field_error(
    client: AsyncClient, alice: ApiUser
) -> None:
    response = await client.post(
        "/api/agents", json={"name": "x", "agent_type": "nope"}, headers=alice.headers
    )
    body = assert_problem(response, 400)
    assert body["errors"][0]["field"] == "agent_type"


async def test_shared_agents_are_visible_but_not_editable(
    client: AsyncClient, db: AsyncSession, alice: ApiUser, bob: ApiUser
) -> None:
    staff = await make_api_user(db, is_staff=True)
    shared = AgentFactory.build(owner_id=staff.user.id, name="Shared one", is_shared=True)
    db.add(shared)
    await db.commit()

    listed = (await client.get("/api/agents", headers=alice.headers)).json()["items"]
    names = {a["name"] for a in listed}
    assert "Shared one" in names and bob.agent.name not in names

    got = await client.get(f"/api/agents/{shared.id}", headers=alice.headers)
    assert got.status_code == 200 and got.json()["is_shared"] is True
    # A user can start a thread with a shared agent...
    thread = await client.post(
        "/api/threads", json={"agent_id": str(shared.id)}, headers=alice.headers
    )
    assert thread.status_code == 201
    # ...but only its owner may change it.
    assert_problem(
        await client.patch(f"/api/agents/{shared.id}", json={"name": "x"}, headers=alice.headers),
        404,
    )


async def test_unknown_fields_are_rejected(client: AsyncClient, alice: ApiUser) -> None:
    response = await client.post(
        "/api/agents", json={"name": "x", "nmae": "typo"}, headers=alice.headers
    )
    body = assert_problem(response, 400)
    assert body["errors"]


async def test_update_agent_checks_the_patch_rules_for_every_caller(
    db: AsyncSession, alice: ApiUser
) -> None:
    """A tool or the CLI calls services.update_agent without the API's body decoding: the
    service refuses what PATCH refuses, field by field, and changes nothing."""
    with pytest.raises(ProblemException) as refused:
        await services.update_agent(db, alice.agent, {"name": "n" * 101, "model": None})
    assert refused.value.status_code == 400
    assert [e["field"] for e in refused.value.extra["errors"]] == ["name"]
    assert alice.agent.name != "n" * 101


async def test_enabled_must_be_a_json_boolean(client: AsyncClient, alice: ApiUser) -> None:
    """Bodies are converted leniently; `enabled: 0` must not pass as false."""
    body = {"name": "Strict", "agent_type": "assistant", "enabled": 0}
    refused = await client.post("/api/agents", json=body, headers=alice.headers)
    assert refused.status_code == 400, refused.text
    assert refused.json()["errors"][0]["field"] == "enabled"
    created = await client.post(
        "/api/agents", json={**body, "enabled": False}, headers=alice.headers
    )
    assert created.status_code == 201 and created.json()["enabled"] is False
    patched = await client.patch(
        f"/api/agents/{created.json()['id']}", json={"enabled": "true"}, headers=alice.headers
    )
    assert patched.status_code == 400


async def test_a_bad_token_is_refused_before_a_bad_body(client: AsyncClient) -> None:
    body = {"name": "Strict", "agent_type": "assistant", "enabled": 0}
    refused = await client.post("/api/agents", json=body, headers={"Authorization": "Bearer x"})
    assert refused.status_code == 401


async def test_a_model_no_profile_can_route_is_400_naming_it(
    client: AsyncClient, alice: ApiUser
) -> None:
    body = {"name": "Lost", "agent_type": "assistant", "model": "nowhere/x"}
    refused = await client.post("/api/agents", json=body, headers=alice.headers)
    problem = assert_problem(refused, 400)
    assert "nowhere/x" in problem["detail"] and problem["errors"][0]["field"] == "model"

    body["model"] = "anthropic/claude-sonnet-4-5"  # litellm routes it: accepted
    created = await client.post("/api/agents", json=body, headers=alice.headers)
    assert created.status_code == 201, created.text
    url = f"/api/agents/{created.json()['id']}"
    patched = await client.patch(url, json={"model": "nowhere/x"}, headers=alice.headers)
    assert "nowhere/x" in assert_problem(patched, 400)["detail"]
    for model in ("openai/gpt-4o-mini", "demo/echo", None):
        patched = await client.patch(url, json={"model": model}, headers=alice.headers)
        assert patched.status_code == 200, patched.text
