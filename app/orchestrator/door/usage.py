"""A run's model usage: summed by the model door into the run's tally (llm.run_usage)
and written on the run's row in the transaction that ends it."""

from __future__ import annotations

from typing import Any

from app.db.models.run import NANO
from app.orchestrator.door.llm import run_usage
from app.orchestrator.door.types import Usage


def start_tally(run: Any = None) -> Usage:
    """The tally for the current run's task (and the tasks it starts): from zero, or
    from what `run` (a parked run taken up again) recorded before it parked."""
    tally = Usage()
    if run is not None and getattr(run, "input_tokens", None) is not None:
        cost = run.cost_nanousd
        tally.add(
            Usage(
                run.input_tokens,
                run.output_tokens or 0,
                run.cached_tokens or 0,
                run.reasoning_tokens or 0,
                None if cost is None else cost / NANO,
                calls=1,
            )
        )
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


def end_values(usage: Usage | None) -> dict[str, int | float | None] | None:
    """The run's usage for the UPDATE that ends it (runs.finish_run); None when no model
    call was made."""
    if usage is None or usage.empty:
        return None
    return usage_values(usage)
