"""Runs by final status and turn latency, counted from the committed run changes.

Every end of a run (the runner's, a cancel of a queued run, a reaper's) is one conditional
UPDATE whose change reaches the sinks once, after commit, in the process that made it:
counting here needs no line in the runner and never counts a rolled-back end.
"""

from __future__ import annotations

from app.observability import metrics
from app.threads import changes
from app.threads.schemas import RunRead

ENDED = frozenset({"completed", "failed", "cancelled"})


class RunMetricsSink(changes.ChangeSink):
    def run_changed(self, run: RunRead) -> None:
        if run.status not in ENDED:
            return
        seconds = run.duration_ms / 1000 if run.duration_ms is not None else None
        metrics.run_ended(run.status, seconds)


_sink = RunMetricsSink()


def register() -> None:
    """Idempotent: one sink per process, however many apps it creates."""
    changes.unregister(_sink)
    changes.register(_sink)
