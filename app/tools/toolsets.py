"""Agent types and the tools each offers (placeholder until the tool registry lands)."""

from __future__ import annotations

AGENT_TYPES: dict[str, tuple[str, ...]] = {
    "assistant": ("tasks", "web", "memory", "self_authoring"),
    "specialist": ("web", "memory"),
}


def is_known_agent_type(agent_type: str) -> bool:
    return agent_type in AGENT_TYPES


def effective_tools(agent_type: str, enabled_tools: list[str] | None) -> list[str]:
    offered = AGENT_TYPES.get(agent_type, ())
    if enabled_tools is None:
        return list(offered)
    return [name for name in offered if name in enabled_tools]
