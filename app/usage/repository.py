"""The one query: a user's runs' usage summed since a moment (Core, one statement)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, Thread
from app.db.models.run import NANO


@dataclass(frozen=True)
class Totals:
    runs: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    reasoning_tokens: int
    cost_usd: float

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def _sum(column: object) -> object:
    return func.coalesce(func.sum(column), 0)


USAGE_SINCE = (
    select(
        func.count(Run.input_tokens),  # runs that recorded usage
        _sum(Run.input_tokens),
        _sum(Run.output_tokens),
        _sum(Run.cached_tokens),
        _sum(Run.reasoning_tokens),
        _sum(Run.cost_nanousd),
    )
    .select_from(Run)
    .join(Thread, Thread.id == Run.thread_id)
)


async def usage_since(session: AsyncSession, user_id: UUID, since: datetime) -> Totals:
    statement = USAGE_SINCE.where(Thread.owner_id == user_id, Run.created_at >= since)
    row = (await session.execute(statement)).one()
    runs, input_tokens, output_tokens, cached, reasoning, cost = row
    return Totals(
        int(runs),
        int(input_tokens),
        int(output_tokens),
        int(cached),
        int(reasoning),
        int(cost) / NANO,
    )
