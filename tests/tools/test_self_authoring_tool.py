"""self_authoring: view and update the current agent's own configuration."""

from __future__ import annotations

import json

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent
from tests.conftest import ApiUser, make_api_user
from tests.factories import AgentFactory
from tests.tools.conftest import MakeHarness, ToolHarness

FIELDS = ["name", "system_prompt", "reflection_prompt", "memory_reflection_prompt"]


async def test_view_one_field(harness: ToolHarness) -> None:
    result = await harness.call("self_authoring", {"action": "view", "field": "system_prompt"})
    assert result.data == {
        "type": "config",
        "action": "view",
        "field": "system_prompt",
        "value": "You are a test agent.",
        "values": None,
        "agent": harness.ctx.agent.name,
    }


async def test_view_unset_is_null_and_all_fields(harness: ToolHarness) -> None:
    one = await harness.call("self_authoring", {"action": "view", "field": "reflection_prompt"})
    assert one.data["value"] is None
    every = await harness.call("self_authoring", {"action": "view"})
    assert list(every.data["values"]) == FIELDS
    assert every.data["values"]["memory_reflection_prompt"] is None


async def test_update_each_field(harness: ToolHarness, db: AsyncSession) -> None:
    for field in FIELDS:
        value = f"new {field}"
        result = await harness.call(
            "self_authoring", {"action": "update", "field": field, "value": value}
        )
        assert result.ok, result
        assert (result.data["action"], result.data["field"], result.data["value"]) == (
            "update",
            field,
            value,
        )
    agent = await db.scalar(
        select(Agent)
        .where(Agent.id == harness.ctx.agent.id)
        .execution_options(populate_existing=True)
    )
    assert [getattr(agent, f) for f in FIELDS] == [f"new {f}" for f in FIELDS]
    assert result.data["agent"] == "new name"


async def test_name_already_taken_is_an_error_result(
    harness: ToolHarness, db: AsyncSession, alice: ApiUser
) -> None:
    other = AgentFactory.build(owner_id=alice.user.id, name="Sage")
    db.add(other)
    await db.commit()
    result = await harness.call(
        "self_authoring", {"action": "update", "field": "name", "value": "Sage"}
    )
    assert result.error_type == "validation_error"
    assert "taken" in result.error and result.details["field"] == "name"


async def test_same_name_for_another_user_is_fine(harness: ToolHarness, db: AsyncSession) -> None:
    other = await make_api_user(db)
    result = await harness.call(
        "self_authoring", {"action": "update", "field": "name", "value": other.agent.name}
    )
    assert result.ok


async def test_update_needs_a_value(harness: ToolHarness) -> None:
    missing = await harness.call("self_authoring", {"action": "update", "field": "name"})
    assert missing.details["required_param"] == "value"
    blank = await harness.call(
        "self_authoring", {"action": "update", "field": "name", "value": "  "}
    )
    assert blank.error == "value required for update."
    assert blank.details["allowed_fields"] == FIELDS
    too_long = await harness.call(
        "self_authoring", {"action": "update", "field": "name", "value": "n" * 101}
    )
    assert too_long.details["errors"] == [{"field": "value", "message": "at most 100 characters"}]


async def test_invalid_field_and_action_are_self_correcting(harness: ToolHarness) -> None:
    field = await harness.call("self_authoring", {"action": "view", "field": "bogus"})
    assert field.details["errors"][0]["field"] == "field"
    assert sorted(field.details["errors"][0]["allowed_values"]) == sorted(FIELDS)
    action = await harness.call("self_authoring", {"action": "delete", "field": "name"})
    assert action.details["allowed_actions"] == ["view", "update"]
    # every refusal names the fields, as seed 000's self-correcting errors do
    for refused in (field, action):
        assert refused.details["allowed_fields"] == list(FIELDS)
        body = json.loads(refused.to_model_content())
        assert body["type"] == "error" and body["allowed_fields"] == list(FIELDS)


async def test_shared_agent_cannot_be_changed_by_a_non_owner(
    make_harness: MakeHarness, db: AsyncSession, alice: ApiUser, bob: ApiUser
) -> None:
    shared = AgentFactory.build(owner_id=alice.user.id, is_shared=True)
    db.add(shared)
    await db.commit()
    bob_tools = await make_harness(bob)
    bob_tools.ctx.agent = shared
    result = await bob_tools.call(
        "self_authoring", {"action": "update", "field": "system_prompt", "value": "x"}
    )
    assert result.error_type == "permission_error"
    viewed = await bob_tools.call("self_authoring", {"action": "view", "field": "name"})
    assert viewed.ok


async def _stored(db: AsyncSession, agent_id) -> Agent:
    return await db.scalar(
        select(Agent).where(Agent.id == agent_id).execution_options(populate_existing=True)
    )


async def test_a_value_the_api_refuses_is_refused_and_nothing_changes(
    harness: ToolHarness, db: AsyncSession, client, alice: ApiUser
) -> None:
    """A NUL character: the API refuses it on PostgreSQL (it cannot be stored); the tool
    refuses it on both databases with an error the model can act on, and stores nothing."""
    before = (await _stored(db, harness.ctx.agent.id)).system_prompt
    result = await harness.call(
        "self_authoring", {"action": "update", "field": "system_prompt", "value": "Be\u0000 kind."}
    )
    assert (result.ok, result.error_type) == (False, "validation_error")
    assert "NUL" in result.error and "value" in result.error and result.suggestion
    assert (await _stored(db, harness.ctx.agent.id)).system_prompt == before


async def test_the_tool_refuses_what_patch_refuses(
    harness: ToolHarness, db: AsyncSession, client, alice: ApiUser
) -> None:
    """Self-authoring goes through agents.services.update_agent, the PATCH endpoint's checks."""
    db.add(AgentFactory.build(owner_id=alice.user.id, name="Sage"))
    await db.commit()
    agent_id = harness.ctx.agent.id
    patched = await client.patch(
        f"/api/agents/{agent_id}", json={"name": "Sage"}, headers=alice.headers
    )
    assert patched.status_code == 409
    result = await harness.call(
        "self_authoring", {"action": "update", "field": "name", "value": "Sage"}
    )
    assert (result.error_type, result.suggestion) == ("validation_error", "Pick another name.")
    assert result.details["errors"][0]["field"] == "name"
    assert (await _stored(db, agent_id)).name == alice.agent.name
