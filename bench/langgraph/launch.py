"""`langgraph dev` as the benchmark starts it, in the LangGraph venv: `python launch.py dev
...` is the `langgraph` command (its CLI, same arguments, same process).

The in-memory queue is woken when a run is created instead of sleeping its 0.5 s poll
(not a LangGraph setting, there is none): how the issue that set our goals measured it
("queue woken at once"), so the comparison is of the work a turn takes, not of a dev
server's polling. Only the wait changes: runs are taken by its own `Runs.next`, in its
order, by its workers. `BENCH_LANGGRAPH_WAKE=0` measures the poll as it ships.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from typing import Any


def _wake_on_put() -> None:
    """Patch `Runs.put` to signal, and `Runs.next(wait=True)` to wait for that signal
    (at most the 0.5 s it would have slept) and then take runs at once."""
    from langgraph_runtime_inmem import ops

    put, take = ops.Runs.put, ops.Runs.next
    woken: dict[str, Any] = {}

    async def put_and_wake(*args: Any, **kwargs: Any) -> Any:
        run = await put(*args, **kwargs)
        if "event" in woken:
            woken["loop"].call_soon_threadsafe(woken["event"].set)
        return run

    async def next_when_woken(wait: bool, limit: int = 1) -> AsyncIterator[Any]:
        if wait:
            if "event" not in woken:
                woken["event"], woken["loop"] = asyncio.Event(), asyncio.get_running_loop()
            with contextlib.suppress(TimeoutError):  # as long as it would have slept
                await asyncio.wait_for(woken["event"].wait(), 0.5)
            woken["event"].clear()
        async for item in take(False, limit):
            yield item

    ops.Runs.put = staticmethod(put_and_wake)
    ops.Runs.next = staticmethod(next_when_woken)


if __name__ == "__main__":
    if os.environ.get("BENCH_LANGGRAPH_WAKE", "1") == "1":
        _wake_on_put()
    from langgraph_cli.cli import cli

    sys.exit(cli())
