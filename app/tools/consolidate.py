"""Move agents' enabled_tools between legacy one-action tool names and domain tools.

Forward (consolidate) maps every legacy name to its domain tool and drops duplicates;
reverse expands each domain tool to its legacy names (for a release that knows only
those). Both are idempotent and keep every agent's effective tools: this release reads a
legacy name as its domain tool (app/tools/legacy.py). Names that are neither legacy nor
domain tools are kept as they are (and reported).
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Agent
from app.tools.legacy import LEGACY_TOOLS, TO_DOMAIN

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
