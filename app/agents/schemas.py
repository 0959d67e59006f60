from __future__ import annotations

from typing import Annotated
from uuid import UUID

import msgspec

from app.lib.schema import Input, Schema

NAME_MAX_LENGTH = 100
PROMPT_MAX_LENGTH = 20_000
AgentName = Annotated[str, msgspec.Meta(min_length=1, max_length=NAME_MAX_LENGTH)]
AgentType = Annotated[str, msgspec.Meta(min_length=1, max_length=50)]
ModelName = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Prompt = Annotated[str, msgspec.Meta(max_length=PROMPT_MAX_LENGTH)]
Description = Annotated[str, msgspec.Meta(max_length=500)]
ToolDescription = Annotated[str, msgspec.Meta(max_length=2000)]
ToolList = Annotated[
    list[Annotated[str, msgspec.Meta(min_length=1, max_length=64)]], msgspec.Meta(max_length=100)
]


class AgentRead(Schema):
    id: UUID
    name: str
    agent_type: str
    model: str | None
    system_prompt: str | None
    reflection_prompt: str | None
    memory_reflection_prompt: str | None
    enabled_tools: list[str] | None
    # What the agent's runs offer the model: its type's toolset narrowed by enabled_tools,
    # then (a delegating type) `ask_<name>` for each of your enabled specialist agents.
    tools: list[str]
    is_shared: bool
    description: str | None
    # How a delegating agent sees this agent as its `ask_<name>` tool (null: description).
    tool_description: str | None
    # A specialist offered to delegating agents (false: asking it answers "currently disabled").
    enabled: bool


class AgentList(Schema):
    items: list[AgentRead]


class AgentCreate(Input):
    name: AgentName
    agent_type: AgentType = "assistant"
    model: ModelName | None = None
    system_prompt: Prompt | None = None
    reflection_prompt: Prompt | None = None
    memory_reflection_prompt: Prompt | None = None
    enabled_tools: ToolList | None = None
    description: Description | None = None
    tool_description: ToolDescription | None = None
    enabled: bool = True


class AgentUpdate(Input):
    """Only the fields sent are changed; send null to clear a prompt."""

    name: AgentName | msgspec.UnsetType = msgspec.UNSET
    model: ModelName | msgspec.UnsetType | None = msgspec.UNSET
    system_prompt: Prompt | msgspec.UnsetType | None = msgspec.UNSET
    reflection_prompt: Prompt | msgspec.UnsetType | None = msgspec.UNSET
    memory_reflection_prompt: Prompt | msgspec.UnsetType | None = msgspec.UNSET
    enabled_tools: ToolList | msgspec.UnsetType | None = msgspec.UNSET
    description: Description | msgspec.UnsetType | None = msgspec.UNSET
    tool_description: ToolDescription | msgspec.UnsetType | None = msgspec.UNSET
    enabled: bool | msgspec.UnsetType = msgspec.UNSET
