"""Leases are fences: a runner's writes for a run land only while it holds the run's lease.

A run's lease is its owner (one runner process) and `runs.lease_epoch`, a counter every
claim raises and so does the reaper that fails a run whose lease expired. A runner cut off
from the database (a partition, a long pause) may still be streaming from the model when
its lease has gone to the reaper; when it can reach the database again, each of its writes
is refused by the database itself: every statement it makes for the run carries the lease
in its WHERE (`holds()`), in the same statement as the write, never a read before it. A
refused write raises `Fenced`, and the runner stops the run without writing more.

The lease a write is made under is the task's (`hold`, set when a runner starts a run: a
context variable, inherited by the tasks the run starts). The writer (writer.py) fences
every message insert and update, and so the thread bump, made under a lease; a write made
outside a run (an HTTP request, the reaper) holds none and is not fenced.

A lease that expired is no longer held, reaped yet or not: a runner cut off for longer than
its lease (its renewals could not land) writes nothing more when it reaches the database
again, and cannot renew that lease either (scheduling/leases.py); the run is the reaper's.

On PostgreSQL the check locks the run row FOR SHARE until commit: a reaper failing the run
meanwhile waits for the write (and then sees and closes its cell), or the write waits for
the reaper and is refused. Without the lock, a write could pass the check on a snapshot
the reaper was just changing and land after the reaper closed the run's cells.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from sqlalchemy import Exists, bindparam, exists, literal
from sqlalchemy import select as sql_select

from app.db import clock
from app.db.models import Run, RunStatus

_runs = Run.__table__


@dataclass(frozen=True, slots=True)
class Lease:
    """A run's lease as its runner holds it."""

    run_id: UUID
    owner: str
    epoch: int

    def __str__(self) -> str:
        return f"run {self.run_id} (owner {self.owner}, epoch {self.epoch})"


class Fenced(Exception):
    """The database refused a write made under a lease that is no longer current (the
    run was reaped, ended or claimed again): nothing of it was written."""

    def __init__(self, lease: Lease, what: str) -> None:
        super().__init__(f"{what} refused: {lease} no longer holds the lease")
        self.lease, self.what = lease, what


_held: ContextVar[Lease | None] = ContextVar("run_lease", default=None)


def hold(lease: Lease | None) -> None:
    """The current task (and the tasks it starts from now on) write under `lease`."""
    _held.set(lease)


def held() -> Lease | None:
    """The lease the current task writes under, if any."""
    return _held.get()


@contextmanager
def released() -> Iterator[None]:
    """Write without the lease for a while: for what follows from a write the lease
    guarded (a run's answer's version list, written after the end that checked it)."""
    token = _held.set(None)
    try:
        yield
    finally:
        _held.reset(token)


def holds() -> Exists:
    """EXISTS (the run still running under the lease given as `f_run`, `f_owner`,
    `f_epoch`, not expired at `f_now`), for a statement's WHERE; FOR SHARE on PostgreSQL (see the module's doc;
    SQLite renders no locking clause: its writer holds the database's write lock)."""
    run = _runs.c
    current = (
        sql_select(literal(1))
        .select_from(_runs)
        .where(
            run.id == bindparam("f_run"),
            run.lease_owner == bindparam("f_owner"),
            run.lease_epoch == bindparam("f_epoch"),
            run.status == RunStatus.RUNNING.value,
            run.lease_expires_at > bindparam("f_now"),
        )
        .with_for_update(read=True)
    )
    return exists(current)


def params(lease: Lease) -> dict[str, Any]:
    """The parameters of `holds()`: the lease, and now on the database's clock (a lease
    that expired while its runner was cut off is no longer held, reaped or not)."""
    return {
        "f_run": lease.run_id,
        "f_owner": lease.owner,
        "f_epoch": lease.epoch,
        "f_now": clock.now(),
    }


__all__ = ("Fenced", "Lease", "held", "hold", "holds", "params", "released")
