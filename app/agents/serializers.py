"""Agent rows to response Structs: the one conversion per read schema."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from app.agents.delegates import offered_to
from app.agents.schemas import AgentRead
from app.db.models import Agent
from app.tools.runtime.toolsets import effective_tools

_COLUMNS = tuple(name for name in AgentRead.__struct_fields__ if name != "tools")


def agent_read(agent: Agent, specialists: Iterable[Agent] = ()) -> AgentRead:
    """The row's columns plus its effective tools (its type's toolset ∩ enabled_tools),
    then the ask_* tools of the reader's `specialists` it is offered (a delegating type)."""
    fields = {name: getattr(agent, name) for name in _COLUMNS}
    tools = effective_tools(agent.agent_type, agent.enabled_tools)
    tools += offered_to(agent, specialists)
    fields["enabled"] = agent.enabled is not False  # a row not yet flushed has no default yet
    return msgspec.convert({**fields, "tools": tools}, AgentRead)
