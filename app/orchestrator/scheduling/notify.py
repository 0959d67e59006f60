"""Wake-ups after commit: a run was queued, a cancel asked, an approval decided.

The database stays the truth (the runner also polls); this only makes the runner react
at once instead of at its next poll. Queued runs and cancel requests come from the
threads domain's change port; approval decisions are this package's own.

Each wake-up is delivered to this process's listeners and handed to the relays, which
carry it to the other server processes of the deployment: the Redis control channel
(app/realtime/channels.py) when REDIS_URL is set, otherwise on PostgreSQL a LISTEN/NOTIFY
connection (app/orchestrator/scheduling/pg_wakeups.py). A process ignores its own wake-ups coming
back (they carry its `ORIGIN`).

A run queued here goes to this process's runner first, if it has one: the runner relays
it to the others (`relay`) only when it cannot claim it at once (all its slots busy, or the
run waits behind a running run of its thread). Otherwise every run would wake every
other process for a claim that finds nothing.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from functools import partial
from typing import Literal
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

from app.db.outbox import on_commit
from app.lib.listeners import Listeners
from app.threads import changes

logger = logging.getLogger(__name__)
Kind = Literal["queued", "cancel", "approval"]
Listener = Callable[[Kind, UUID, bool], None]  # kind, id, whether it was announced here
Relay = Callable[[str], None]  # sends an encoded wake-up to the other processes
ORIGIN = uuid.uuid4().hex[:12]  # this process, in the wake-ups it sends
_CODES: dict[str, Kind] = {"q": "queued", "c": "cancel", "a": "approval"}
# One listener must never keep the others from hearing, and a relay's failure costs
# latency only (the others still poll): each failure is logged, the rest are told.
_listeners: Listeners[Listener] = Listeners("orchestrator listener", logger=logger)
_relays: Listeners[Relay] = Listeners("wake-up relay", logger=logger)


def add_listener(listener: Listener) -> None:
    _listeners.add(listener)


def remove_listener(listener: Listener) -> None:
    _listeners.remove(listener)


def add_relay(relay: Relay) -> None:
    _relays.add(relay)


def remove_relay(relay: Relay) -> None:
    _relays.remove(relay)


def encode(kind: Kind, object_id: UUID) -> str:
    """`<origin>:<q|c|a><uuid>`: short enough for any pub/sub payload."""
    return f"{ORIGIN}:{kind[0]}{object_id.hex}"


def receive(payload: str) -> None:
    """A wake-up from another process (malformed ones and our own echoes are ignored)."""
    origin, _, body = payload.partition(":")
    kind = _CODES.get(body[:1])
    if origin == ORIGIN or kind is None:
        return
    try:
        object_id = UUID(hex=body[1:])
    except ValueError:
        return
    _deliver(kind, object_id, here=False)


def wake_all() -> None:
    """After a relay reconnects: wake-ups may have been lost, so claim and look now."""
    _deliver("queued", UUID(int=0), here=False)


def _deliver(kind: Kind, object_id: UUID, *, here: bool) -> None:
    _listeners.notify(kind, object_id, here)


def _announce(kind: Kind, object_id: UUID) -> None:
    _deliver(kind, object_id, here=True)
    if kind == "queued" and _listeners:
        return  # the runner here claims it, or relays it when it cannot
    relay(kind, object_id)


def relay(kind: Kind, object_id: UUID) -> None:
    """Send a wake-up to the other processes only."""
    if _relays:
        _relays.notify(encode(kind, object_id))


def notify_after_commit(session: AsyncSession | Session, kind: Kind, object_id: UUID) -> None:
    on_commit(session, partial(_announce, kind, object_id))


class _RunWakeups(changes.ChangeSink):
    def run_queued(self, run_id: UUID) -> None:
        _announce("queued", run_id)

    def cancel_requested(self, run_id: UUID) -> None:
        _announce("cancel", run_id)


changes.register(_RunWakeups())
