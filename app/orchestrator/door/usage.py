"""A run's model usage: summed by the model door into the run's tally (llm.run_usage)
and written on the run's row in the transaction that ends it."""

from __future__ import annotations

from app.db.models.run import NANO
from app.orchestrator.door.llm import run_usage
from app.orchestrator.door.types import Usage


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


def end_values(usage: Usage | None) -> dict[str, int | float | None] | None:
    """The run's usage for the UPDATE that ends it (runs.finish_run); None when no model
    call was made."""
    if usage is None or usage.empty:
        return None
    return usage_values(usage)
