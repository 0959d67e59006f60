"""A specialist agent as GET /api/tools lists it: the `ask_<name>` tool delegating agent
types are offered. The agents package provides them (app/agents/delegates.py, wired in by
create_app), so the tools package never reads agents itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from uuid import UUID


@dataclass(frozen=True, slots=True)
class SpecialistTool:
    name: str  # ask_<slug>
    description: str
    agent_id: UUID
    parameters: dict[str, Any]
    agent_types: list[str]  # the agent types that delegate
    timeout_seconds: float  # DELEGATION_TIMEOUT_SECONDS
