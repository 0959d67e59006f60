"""A run's model usage: summed by the model door into the run's tally (llm.run_usage)
and written on the run's row in the transaction that ends it."""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, RunStatus
from app.db.models.run import NANO
from app.orchestrator.door.types import Usage
from app.orchestrator.llm import run_usage
from app.threads.fence import Fenced, Lease


def start_tally() -> Usage:
    """A fresh tally for the current run's task (and the tasks it starts)."""
    tally = Usage()
    run_usage.set(tally)
    return tally


def usage_values(usage: Usage) -> dict[str, int | float | None]:
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cached_tokens": usage.cached_tokens,
        "reasoning_tokens": usage.reasoning_tokens,
        "cost_nanousd": None if usage.cost is None else round(usage.cost * NANO),
    }


async def record(session: AsyncSession, lease: Lease, usage: Usage | None) -> None:
    """Write the run's usage (nothing when no model call was made) while `lease` holds it;
    else `Fenced`."""
    if usage is None or usage.empty:
        return
    written = await session.execute(
        update(Run)
        .where(
            Run.id == lease.run_id,
            Run.lease_owner == lease.owner,
            Run.lease_epoch == lease.epoch,
            Run.status == RunStatus.RUNNING.value,
        )
        .values(**usage_values(usage))
        .execution_options(synchronize_session=False)
    )
    if not written.rowcount:
        raise Fenced(lease, "the run's usage")
