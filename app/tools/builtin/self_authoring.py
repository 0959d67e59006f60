"""self_authoring: the current agent views and updates its own configuration."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from sqlalchemy import select

from app.agents.services import name_taken
from app.db.models import Agent
from app.tools.base import Tool, ToolContext, ToolResult

FIELDS = ("name", "system_prompt", "reflection_prompt", "memory_reflection_prompt")
MAX_LENGTH = {"name": 100, "system_prompt": 20_000, "reflection_prompt": 20_000,
              "memory_reflection_prompt": 20_000}  # fmt: skip
Field = Annotated[
    Literal["name", "system_prompt", "reflection_prompt", "memory_reflection_prompt"],
    msgspec.Meta(description="Which setting: " + ", ".join(FIELDS) + "."),
]


class ViewParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    field: Field | None = None  # omitted: every field


class UpdateParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    field: Field
    value: Annotated[str, msgspec.Meta(max_length=20_000, description="The new value.")]


class SelfAuthoringTool(Tool):
    name = "self_authoring"
    description = (
        "View or update your own configuration. Actions: view (optional field), "
        "update (field, value). Fields: " + ", ".join(FIELDS) + ". Unset values are null."
    )
    actions = {"view": ViewParams, "update": UpdateParams}
    read_only_actions = frozenset({"view"})
    timeout_seconds = 10
    examples = {
        "view": {"field": "system_prompt"},
        "update": {"field": "system_prompt", "value": "You are concise and kind."},
    }

    async def view_action(self, ctx: ToolContext, params: ViewParams) -> ToolResult:
        async with ctx.session_factory() as session:
            agent = await session.get(Agent, ctx.agent.id)
        if agent is None:
            return _agent_gone()
        if params.field is None:
            values = {f: getattr(agent, f) for f in FIELDS}
            return ToolResult.success({"type": "config", "action": "view", "agent": agent.name,
                                       "values": values})  # fmt: skip
        return ToolResult.success(_config("view", agent, params.field))

    async def update_action(self, ctx: ToolContext, params: UpdateParams) -> ToolResult:
        field, value = params.field, params.value.strip()
        problem = _check_value(field, value)
        if problem is not None:
            return problem
        await ctx.progress(display_message=f"Updating {field}…")
        async with ctx.session_factory() as session:
            agent = await session.scalar(select(Agent).where(Agent.id == ctx.agent.id))
            if agent is None:
                return _agent_gone()
            if agent.owner_id != ctx.user.id:
                return ToolResult.failure(
                    "This agent is shared by staff; only its owner can change it.",
                    "permission_error",
                    field=field,
                )
            if field == "name" and await name_taken(session, agent.owner_id, value, agent.id):
                return ToolResult.failure(
                    f"Name {value!r} has already been taken.",
                    "validation_error",
                    suggestion="Pick another name.",
                    field=field,
                    errors=[{"field": "value", "message": "name has already been taken"}],
                )
            setattr(agent, field, value)
            await session.commit()
        return ToolResult.success(
            _config("update", agent, field), display_message=f"Updated {field}"
        )


def _config(action: str, agent: Agent, field: str) -> dict[str, Any]:
    return {"type": "config", "action": action, "field": field,
            "value": getattr(agent, field), "agent": agent.name}  # fmt: skip


def _check_value(field: str, value: str) -> ToolResult | None:
    if not value:
        return ToolResult.failure(
            "value required for update.",
            "validation_error",
            suggestion="Give the new text in value.",
            required_param="value",
            allowed_actions=["view", "update"],
            allowed_fields=list(FIELDS),
        )
    if len(value) > MAX_LENGTH[field]:
        return ToolResult.failure(
            f"{field} is at most {MAX_LENGTH[field]} characters.",
            "validation_error",
            field=field,
            errors=[{"field": "value", "message": f"at most {MAX_LENGTH[field]} characters"}],
        )
    return None


def _agent_gone() -> ToolResult:
    return ToolResult.failure("This agent no longer exists.", "user_error")
