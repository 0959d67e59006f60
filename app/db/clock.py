"""Times on the database's clock, whatever this host's clock says: run leases, claims,
the times of a tool cell (its `expires_at` above all).

A lease is written by the host that runs the run and judged by every host's reaper, so
both must read one clock (as must a push delivery's or an OAuth refresh's claim, and a
wait's expiry: stamped by the runner's host, judged by the host the answer reaches). Hosts'
clocks drift (a VM resumed, NTP not yet synced): a reaper whose clock runs 30 s ahead
would take every live lease for expired. The one clock all hosts share is the
database's, so each process measures how far its own clock is from it (one `SELECT
clock_timestamp()`: the runner at start and before every reap, the push sender at start
and hourly, a process without a runner once at start) and stamps and judges with its
clock moved by that offset. The error is half a round trip.

SQLite is one host and one clock: the offset stays zero.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.lib.time import utcnow

_offset = timedelta(0)


def now() -> datetime:
    """This host's clock moved to the database's (as of the last `synchronize`)."""
    return utcnow() + _offset


def offset() -> timedelta:
    return _offset


async def synchronize(session: AsyncSession) -> None:
    """Measure the database clock's lead over ours (PostgreSQL only)."""
    global _offset
    before = utcnow()
    database = await session.scalar(select(func.clock_timestamp()))
    after = utcnow()
    if database is not None:
        _offset = database - (before + (after - before) / 2)
