"""Move agents' enabled_tools between legacy one-action tool names and domain tools.

Forward (consolidate) maps every legacy name to the one action of its domain tool it
allowed (`list_tasks` -> `tasks.list`), and a tool whose every legacy name is there to
the tool itself; reverse maps `tool.action` back to its legacy name and a whole tool to
all of its (for a release that knows only those). Both are idempotent and keep every
agent's tools and actions exactly: this release reads a legacy name as that one action
(app/tools/runtime/legacy.py), and `consolidate --reverse` after `consolidate` gives back the
legacy names there were. Names that are neither legacy nor domain tools are kept as
they are (and reported).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent
from app.tools.runtime.legacy import (
    ACTION_SEPARATOR,
    LEGACY_ACTION,
    LEGACY_TOOLS,
    TO_DOMAIN,
    split_entry,
)

__all__ = ("LEGACY_TOOLS", "TO_DOMAIN", "Change", "consolidated", "expanded")

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
    out: list[str] = []
    for name in tools:
        tool, action = split_entry(name)
        if tool not in LEGACY_TOOLS or action is None or _whole(tool, tools):
            out.append(tool if name in TO_DOMAIN else name)
        else:
            out.append(f"{tool}{ACTION_SEPARATOR}{action}")
    return _unique(out)


def _whole(tool: str, tools: list[str]) -> bool:
    """Every legacy name of `tool` is enabled (or the tool itself): the whole tool."""
    named = {split_entry(name) for name in tools}
    if (tool, None) in named:
        return True
    return all((tool, LEGACY_ACTION[legacy]) in named for legacy in LEGACY_TOOLS[tool])


def expanded(tools: list[str]) -> list[str]:
    out: list[str] = []
    for name in tools:
        tool, action = split_entry(name)
        if tool not in LEGACY_TOOLS:
            out.append(name)
        elif action is None:
            out.extend(LEGACY_TOOLS[tool])
        elif name in TO_DOMAIN:
            out.append(name)
        else:
            out.extend(_legacy_of(tool, action) or [name])
    return _unique(out)


def _legacy_of(tool: str, action: str) -> list[str]:
    return [n for n in LEGACY_TOOLS[tool] if LEGACY_ACTION.get(n) == action]


def _unknown(tools: list[str]) -> list[str]:
    return [t for t in tools if t not in TO_DOMAIN and split_entry(t)[0] not in LEGACY_TOOLS]


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
