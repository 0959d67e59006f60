"""Deadlines that stop while someone is asked, and the scopes they guard.

A run has a deadline (`run_timeout_seconds`); a specialist asked through `ask_*` has one
more (the delegation's). Time spent waiting for the user (an approval, an answer, the
phone) counts against none of them: every deadline enclosing the waiting call pauses
while it waits, and resumes with what it had left once the last wait under it ended.
A deadline's scope also keeps the calls started under it until each has ended (written its
last word on its cell), so that when a delegation ends (answered, timed out, failed) the
cells of its specialist's calls that did not end (cancelled with it) end with it.

The enclosing scopes travel in a context variable: the tasks of a turn's concurrent calls
copy it when they start, so each call sees exactly the deadlines it runs under.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from uuid import UUID

from app.db.models import ThreadMessage

SLACK_SECONDS = 5.0  # past the longest wait, a paused deadline still ends the scope


@dataclass(eq=False)
class Scope:
    """A run's or a delegation's deadline, and the tool cells opened under it."""

    timeout: asyncio.Timeout | None = None
    pending: dict[UUID, ThreadMessage] = field(default_factory=dict)  # calls not ended yet
    _waits: int = 0
    _when: float | None = None  # the deadline's time when the first wait began
    _since: float = 0.0
    _until: float | None = None  # the paused deadline: the longest wait's end

    def pause(self, longest: float) -> None:
        if self.timeout is None:
            return
        now = asyncio.get_running_loop().time()
        if self._waits == 0:
            self._when, self._since, self._until = self.timeout.when(), now, now
        self._waits += 1
        if self._when is None:
            return
        # A wait until answered has no end: the deadline is off while it lasts.
        end = math.inf if math.isinf(longest) else max(self._when, now) + longest + SLACK_SECONDS
        self._until = None if self._until is None or math.isinf(end) else max(self._until, end)
        if not self.timeout.expired():
            self.timeout.reschedule(self._until)

    def resume(self) -> None:
        if self.timeout is None:
            return
        self._waits -= 1
        if self._waits or self._when is None or self.timeout.expired():
            return
        elapsed = asyncio.get_running_loop().time() - self._since
        self.timeout.reschedule(self._when + elapsed)

    def unended(self) -> list[ThreadMessage]:
        """The cells of calls started under this scope that did not end (were cancelled)."""
        return list(self.pending.values())


_SCOPES: ContextVar[tuple[Scope, ...]] = ContextVar("toolcells_scopes", default=())


@contextlib.contextmanager
def entered(scope: Scope) -> Iterator[Scope]:
    """`scope` encloses what runs in this context from now on (and the tasks it starts)."""
    token = _SCOPES.set((*_SCOPES.get(), scope))
    try:
        yield scope
    finally:
        _SCOPES.reset(token)


def enclosing() -> tuple[Scope, ...]:
    return _SCOPES.get()


def opened(messages: list[ThreadMessage]) -> None:
    """Cells a loop just opened: each enclosing scope ends them if it ends first."""
    for scope in _SCOPES.get():
        scope.pending.update((message.id, message) for message in messages)


def ended(message_id: UUID) -> None:
    """The call of this cell ended: its last write is done, nothing to end for it."""
    for scope in _SCOPES.get():
        scope.pending.pop(message_id, None)


@contextlib.asynccontextmanager
async def paused(longest: float) -> AsyncIterator[None]:
    """Every enclosing deadline stops while this wait lasts (`longest`: its own limit)."""
    scopes = _SCOPES.get()
    for scope in scopes:
        scope.pause(longest)
    try:
        yield
    finally:
        for scope in scopes:
            scope.resume()
