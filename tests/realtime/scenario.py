"""Random histories of message writes for the Zulip-rule tests (seeded, bounded)."""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.lib.time import utcnow
from tests.realtime.support import write_create, write_update


@dataclass
class Scenario:
    """Writes through app/threads/writer.py: creates, tool transitions, progress, final text."""

    rng: random.Random
    factory: async_sessionmaker[AsyncSession]
    thread_id: UUID
    tools: dict[UUID, dict[str, Any]] = field(default_factory=dict)  # open tool activities
    assistants: list[UUID] = field(default_factory=list)
    calls: int = 0

    async def step(self) -> None:
        roll = self.rng.random()
        if roll < 0.25 or not (self.tools or self.assistants):
            await self.create_message()
        elif roll < 0.45:
            await self.start_tool()
        elif roll < 0.8 and self.tools:
            await self.advance_tool(self.rng.choice(list(self.tools)))
        elif self.assistants:
            await self.final_text(self.rng.choice(self.assistants))
        else:
            await self.create_message()

    async def burst(self, size: int) -> None:
        """Several writers at once: publishes may then arrive out of order."""
        await asyncio.gather(*(self.step() for _ in range(size)))

    async def create_message(self) -> None:
        role = self.rng.choice(["user", "assistant"])
        message = await write_create(
            self.factory,
            self.thread_id,
            role=role,
            content=f"{role} {self.rng.random():.6f}",
            is_user_facing=self.rng.random() > 0.1,
        )
        if role == "assistant":
            self.assistants.append(message.id)

    async def start_tool(self) -> None:
        self.calls += 1
        activity = {
            "id": f"call_{self.calls}",
            "name": self.rng.choice(["tasks", "web", "memory"]),
            "status": "in_progress",
            "input": {"action": "create", "title": f"t{self.calls}"},
            "display_message": "Working…",
            "started_at": utcnow().isoformat(),
        }
        message = await write_create(
            self.factory, self.thread_id, role="tool", tool_activity=activity
        )
        self.tools[message.id] = activity

    async def advance_tool(self, message_id: UUID) -> None:
        activity = dict(self.tools[message_id])  # a NEW dict: JSON mutation is not tracked
        roll = self.rng.random()
        if activity["status"] == "in_progress" and roll < 0.5:
            activity["display_message"] = f"Step {self.rng.randint(1, 99)}"
            activity["data"] = {"progress": round(self.rng.random(), 3)}
        elif activity["status"] == "in_progress" and roll < 0.65:
            activity["status"] = "awaiting_approval"
            activity["expires_at"] = utcnow().isoformat()
        else:
            failed = self.rng.random() < 0.3
            activity.update(
                status="failure" if failed else "success",
                error="boom" if failed else None,
                error_type="system_error" if failed else None,
                expires_at=None,
                finished_at=utcnow().isoformat(),
            )
        self.tools[message_id] = activity
        if activity["status"] in ("success", "failure"):
            del self.tools[message_id]
        await write_update(self.factory, message_id, tool_activity=activity)

    async def final_text(self, message_id: UUID) -> None:
        await write_update(self.factory, message_id, content=f"final {self.rng.random():.6f}")
