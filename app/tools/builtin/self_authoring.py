"""self_authoring: the current agent views and updates its own configuration."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from app.agents import services
from app.agents.schemas import NAME_MAX_LENGTH, PROMPT_MAX_LENGTH
from app.db.models import Agent
from app.lib.problems import ProblemException
from app.tools.base import Tool, ToolContext, ToolData, ToolResult

FIELDS = ("name", "system_prompt", "reflection_prompt", "memory_reflection_prompt")
# The limits of PATCH /api/agents/{id}, checked first for a message about `value`;
# services.update_agent checks every rule of that endpoint again.
MAX_LENGTH = {"name": NAME_MAX_LENGTH, "system_prompt": PROMPT_MAX_LENGTH,
              "reflection_prompt": PROMPT_MAX_LENGTH,
              "memory_reflection_prompt": PROMPT_MAX_LENGTH}  # fmt: skip
Field = Annotated[
    Literal["name", "system_prompt", "reflection_prompt", "memory_reflection_prompt"],
    msgspec.Meta(description="Which setting: " + ", ".join(FIELDS) + "."),
]


class ViewParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    field: Field | None = None  # omitted: every field


class UpdateParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    field: Field
    value: Annotated[str, msgspec.Meta(max_length=PROMPT_MAX_LENGTH, description="The new value.")]


class AgentConfigResult(ToolData, tag="config"):
    """The agent's settings: a `field` and its `value`, or (view all) every field in `values`."""

    action: Literal["view", "update"]
    agent: str
    field: str | None
    value: str | None
    values: dict[str, str | None] | None


class SelfAuthoringTool(Tool):
    name = "self_authoring"
    description = (
        "View or update your own configuration. Actions: view (optional field), "
        "update (field, value). Fields: " + ", ".join(FIELDS) + ". Unset values are null."
    )
    actions = {"view": ViewParams, "update": UpdateParams}
    results = {"view": AgentConfigResult, "update": AgentConfigResult}
    read_only_actions = frozenset({"view"})
    timeout_seconds = 10
    validation_hints = {"allowed_fields": list(FIELDS)}
    examples = {
        "view": {"field": "system_prompt"},
        "update": {"field": "system_prompt", "value": "You are concise and kind."},
    }

    async def view_action(self, ctx: ToolContext, params: ViewParams) -> ToolResult:
        async with ctx.transaction() as session:
            agent = await services.find_agent(session, ctx.agent.id)
        if agent is None:
            return _agent_gone()
        if params.field is None:
            values = {f: getattr(agent, f) for f in FIELDS}
            return ToolResult.success(AgentConfigResult(
                action="view", agent=agent.name, field=None, value=None, values=values
            ))  # fmt: skip
        return ToolResult.success(_config("view", agent, params.field))

    async def update_action(self, ctx: ToolContext, params: UpdateParams) -> ToolResult:
        field, value = params.field, params.value.strip()
        problem = _check_value(field, value)
        if problem is not None:
            return problem
        await ctx.progress(display_message=f"Updating {field}…")
        try:
            async with ctx.transaction() as session:
                agent = await services.find_agent(session, ctx.agent.id)
                if agent is None:
                    return _agent_gone()
                if agent.owner_id != ctx.user.id:
                    return ToolResult.failure(
                        "This agent is shared by staff; only its owner can change it.",
                        "permission_error",
                        field=field,
                    )
                # The same checks as PATCH /api/agents/{id}; a refusal rolls back.
                await services.update_agent(session, agent, {field: value})
        except ProblemException as exc:
            return ToolResult.refused(
                exc, suggestion=_SUGGESTIONS.get(exc.status_code), field=field
            )
        return ToolResult.success(
            _config("update", agent, field), display_message=f"Updated {field}"
        )


_SUGGESTIONS = {409: "Pick another name.", 400: "Fix the value and call update again."}


def _config(action: Literal["view", "update"], agent: Agent, field: str) -> AgentConfigResult:
    return AgentConfigResult(
        action=action, agent=agent.name, field=field, value=getattr(agent, field), values=None
    )


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
