"""Move agents' enabled_tools between legacy one-action tool names and domain tools.

Forward (consolidate) maps every legacy name to its domain tool and drops duplicates;
reverse expands each domain tool to its legacy names. Both are idempotent. Names that are
neither legacy nor domain tools are kept as they are (and reported).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent

# Domain tool -> the legacy names it replaced; the first ones are what --reverse restores.
LEGACY_TOOLS: dict[str, tuple[str, ...]] = {
    "tasks": ("create_task", "update_task", "complete_task", "list_tasks"),
    "web": ("web_search", "web_fetch"),
    "memory": ("save_memory", "recall_memory", "search_memory", "forget_memory"),
    "self_authoring": ("view_system_prompt", "update_system_prompt"),
}
# Further legacy spellings seen in the wild: consolidated, never restored.
EXTRA_LEGACY: dict[str, str] = {
    "view_agent_config": "self_authoring",
    "update_agent_name": "self_authoring",
    "view_reflection_prompt": "self_authoring",
    "update_reflection_prompt": "self_authoring",
    "view_memory_reflection_prompt": "self_authoring",
    "update_memory_reflection_prompt": "self_authoring",
    "WebSearchTool": "web",
    "WebFetchTool": "web",
    "ViewSystemPromptTool": "self_authoring",
    "UpdateSystemPromptTool": "self_authoring",
}
TO_DOMAIN: dict[str, str] = {
    **{legacy: domain for domain, names in LEGACY_TOOLS.items() for legacy in names},
    **EXTRA_LEGACY,
}
BATCH = 500


@dataclass(frozen=True)
class Change:
    agent_id: UUID
    agent_name: str
    before: list[str]
    after: list[str]
    unknown: list[str]


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def consolidated(tools: list[str]) -> list[str]:
    return _unique([TO_DOMAIN.get(name, name) for name in tools])


def expanded(tools: list[str]) -> list[str]:
    out: list[str] = []
    for name in tools:
        out.extend(LEGACY_TOOLS.get(TO_DOMAIN.get(name, name), (name,)))
    return _unique(out)


def _unknown(tools: list[str]) -> list[str]:
    return [t for t in tools if t not in TO_DOMAIN and t not in LEGACY_TOOLS]


async def rewrite_enabled_tools(
    session: AsyncSession, *, reverse: bool = False, dry_run: bool = False
) -> list[Change]:
    """Rewrite every agent's enabled_tools (agents with None keep None); returns changes."""
    changes: list[Change] = []
    last_id: UUID | None = None
    while True:
        query = select(Agent).order_by(Agent.id).limit(BATCH)
        if last_id is not None:
            query = query.where(Agent.id > last_id)
        agents = list(await session.scalars(query))
        if not agents:
            break
        last_id = agents[-1].id
        for agent in agents:
            before = list(agent.enabled_tools) if agent.enabled_tools is not None else None
            if before is None:
                continue
            after = expanded(before) if reverse else consolidated(before)
            if after != before:
                changes.append(Change(agent.id, agent.name, before, after, _unknown(before)))
                if not dry_run:
                    agent.enabled_tools = after
    if not dry_run:
        await session.flush()
    return changes
