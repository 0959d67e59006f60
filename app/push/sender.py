"""The push sender: fans out events, claims due deliveries, sends them, records outcomes.

Woken after each commit that wrote a push event (app/push/events.py), it also polls, so
rows left by a stopped process (pending events, deliveries claimed but never answered)
are sent after a restart. A delivery is claimed under a lease (its next attempt pushed
into the future, SKIP LOCKED on PostgreSQL), so two processes never send it at once.
The claim is also a fence: a sender sends only before its claim lapses, and records the
outcome with an UPDATE conditional on the claim still being its own (the delivery still
pending, its next attempt still the claim's time): a sender that was paused or cut off
past its claim, while another process claimed the delivery again, writes nothing. Claims
are stamped and judged on the database's clock (app/db/clock.py): a host whose clock runs
ahead would otherwise take another's live claim for lapsed and send the push twice.
Outcomes: sent; 429/5xx/connection error -> retried with backoff up to
PUSH_MAX_ATTEMPTS; 410 Unregistered or BadDeviceToken -> the device (or Live Activity)
is forgotten; anything else -> failed.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db import clock
from app.db.models import PushDelivery
from app.lib.background import BackgroundService
from app.lib.time import utcnow
from app.observability import metrics
from app.push import events, repository
from app.push.apns import Answer, ApnsClient, Notification, Verdict
from app.push.fanout import fan_out
from app.settings import Settings

logger = logging.getLogger(__name__)
CLAIM_SECONDS = 60.0  # a send that takes longer is taken for lost and retried
MAX_BACKOFF_SECONDS = 3600.0
PRUNE_AFTER = timedelta(days=7)
PRUNE_EVERY_SECONDS = 3600.0


def observe_outcome(outcome: str) -> None:
    """The one place every push's outcome is known: sent, retry, dead_token, failed,
    given_up (counted in /metrics as `push outcomes`)."""
    logger.debug("push %s", outcome)
    metrics.record_push(outcome)


@dataclass(frozen=True, slots=True)
class Sent:
    delivery: PushDelivery
    answer: Answer
    claim: datetime  # the claim's lease: the delivery's next attempt while it is ours


class PushSender:
    def __init__(
        self,
        settings: Settings,
        sessions: async_sessionmaker[AsyncSession],
        client: ApnsClient,
        *,
        postgres: bool,
    ) -> None:
        self._settings, self._sessions, self._client = settings, sessions, client
        self._postgres = postgres
        self._last_prune = 0.0
        self._clock_measured = False
        self._service = BackgroundService(
            "push-sender",
            self._cycle_then_wait,
            period=lambda: self._settings.push_poll_seconds,
            logger=logger,
            failure="push sender cycle failed",  # the database or the network is away:
            level=logging.WARNING,  # the next poll retries
            immediately=True,  # rows left from before the restart: at once
        )

    def wake(self) -> None:
        self._service.wake()

    def start(self) -> None:
        events.add_waker(self.wake)
        self._service.start()

    async def stop(self) -> None:
        events.remove_waker(self.wake)
        await self._service.stop()

    async def _cycle_then_wait(self) -> float | None:
        if not self._clock_measured:
            self._clock_measured = True
            await self._synchronize_clock()
        return 0.0 if await self.cycle() else None  # a full batch: more may be waiting

    async def cycle(self) -> bool:
        """One round; True if a batch was full (go again at once)."""
        more_events = await fan_out(self._sessions, self._settings, postgres=self._postgres)
        claimed, claim = await self._claim()
        if claimed:
            sent = await self._send_all(claimed, claim)
            results = [result for result in sent if result is not None]
            await self._record(results)
            self._schedule_retry(results)
        await self._maybe_prune()
        return more_events or len(claimed) == repository.BATCH

    async def _claim(self) -> tuple[list[PushDelivery], datetime]:
        now = clock.now()
        params = {"now": now, "lease": now + timedelta(seconds=CLAIM_SECONDS)}
        async with self._sessions() as session:
            claimed = list(
                await session.scalars(repository.claim_deliveries(self._postgres), params)
            )
            await session.commit()
        return claimed, params["lease"]

    async def _send_all(self, claimed: list[PushDelivery], claim: datetime) -> list[Sent | None]:
        """All in flight at once over HTTP/2, started one per turn of the loop: each send
        builds its request before its first wait, and a batch of them started together
        would hold the loop for all of them in one turn."""
        async with asyncio.TaskGroup() as group:
            sends = []
            for delivery in claimed:
                sends.append(group.create_task(self._send(delivery, claim)))
                await asyncio.sleep(0)
        return [send.result() for send in sends]

    async def _send(self, delivery: PushDelivery, claim: datetime) -> Sent | None:
        if clock.now() >= claim:  # lapsed before its turn: another process may send it now
            _fenced(delivery, claim, "not sent")
            return None
        # The delivery row holds the notification's fields under their names; its id is
        # the notification's APNs id.
        names = [f.name for f in fields(Notification) if f.name != "apns_id"]
        fields_of_row = {name: getattr(delivery, name) for name in names}
        note = Notification(**fields_of_row, apns_id=str(delivery.id))
        return Sent(delivery, await self._client.send(note), claim)

    async def _record(self, results: list[Sent]) -> None:
        """Outcomes in one transaction: the pushes APNs accepted (nearly all) in one
        statement, any other answer one by one."""
        now = clock.now()
        sent = [result for result in results if result.answer.verdict is Verdict.SENT]
        async with self._sessions() as session:
            await self._record_sent(session, sent, now)
            for result in results:
                if result.answer.verdict is not Verdict.SENT:
                    await self._record_one(session, result, now)
            await session.commit()

    async def _record_sent(self, session: AsyncSession, sent: list[Sent], now: datetime) -> None:
        by_claim: dict[datetime, list[Sent]] = {}
        for result in sent:
            by_claim.setdefault(result.claim, []).append(result)
        for claim, results in by_claim.items():
            ids = [result.delivery.id for result in results]
            written = set(await session.scalars(repository.record_sent(ids, claim, now)))
            for result in results:
                if result.delivery.id in written:
                    observe_outcome(Verdict.SENT.value)
                else:  # the claim lapsed and was taken over (or the row is gone)
                    _fenced(result.delivery, claim, "outcome not recorded")

    async def _record_one(self, session: AsyncSession, result: Sent, now: datetime) -> None:
        delivery, answer = result.delivery, result.answer
        values, outcome = self._outcome(delivery, answer, now)
        written = await session.execute(
            repository.record_outcome(delivery.id, result.claim, values)
        )
        if not written.rowcount:  # the claim lapsed and was taken over (or the row is gone)
            _fenced(delivery, result.claim, "outcome not recorded")
            return
        if answer.verdict is Verdict.DEAD_TOKEN:
            await self._forget(session, delivery, now)
        elif answer.verdict is Verdict.FAILED:
            logger.warning("APNs refused a push: %s %s", answer.status, answer.reason)
        observe_outcome(outcome)

    def _outcome(
        self, delivery: PushDelivery, answer: Answer, now: datetime
    ) -> tuple[dict[str, Any], str]:
        """The delivery's new values after this answer, and the outcome to count."""
        attempts = delivery.attempts + 1
        values: dict[str, Any] = {
            "attempts": attempts,
            "last_error": f"{answer.status} {answer.reason}" if answer.reason else None,
        }
        outcome = answer.verdict.value
        if answer.verdict is Verdict.SENT:
            values.update(status="sent", sent_at=now)
        elif answer.verdict is Verdict.RETRY and attempts < self._settings.push_max_attempts:
            values["next_attempt_at"] = now + timedelta(seconds=self._backoff(attempts))
        else:
            values["status"] = "failed"
            if answer.verdict is Verdict.RETRY:
                outcome = "given_up"
        return values, outcome

    async def _forget(self, session: AsyncSession, delivery: PushDelivery, now: datetime) -> None:
        if delivery.device_id is not None:
            await session.flush()
            for statement in repository.forget_device(delivery.device_id):
                await session.execute(statement)
        elif delivery.live_activity_id is not None:
            await session.execute(repository.end_activity(delivery.live_activity_id, now))
        else:  # a push-to-start: the install's start token is dead
            await session.execute(repository.forget_start_token(delivery.token))

    def _backoff(self, attempts: int) -> float:
        base = self._settings.push_retry_base_seconds
        return min(MAX_BACKOFF_SECONDS, base * 2 ** (attempts - 1))

    def _schedule_retry(self, results: list[Sent]) -> None:
        """Wake for the earliest retry rather than wait for the next poll."""
        retries = [r for r in results if r.answer.verdict is Verdict.RETRY]
        if retries:
            base = self._settings.push_retry_base_seconds
            delay = min(base * 2 ** min(r.delivery.attempts + 1, 20) for r in retries)
            if delay < self._settings.push_poll_seconds:
                asyncio.get_running_loop().call_later(delay, self.wake)

    async def _maybe_prune(self) -> None:
        loop_time = asyncio.get_running_loop().time()
        if loop_time - self._last_prune < PRUNE_EVERY_SECONDS:
            return
        self._last_prune = loop_time
        async with self._sessions() as session:
            for statement in repository.prune(utcnow() - PRUNE_AFTER):
                await session.execute(statement)
            await session.commit()
        await self._synchronize_clock()

    async def _synchronize_clock(self) -> None:
        """Measure the database clock's offset (PostgreSQL; also done by the runner)."""
        if not self._postgres:
            return
        try:
            async with self._sessions() as session:
                await clock.synchronize(session)
        except Exception:  # the database is away: the last offset stands
            logger.warning("measuring the database clock failed", exc_info=True)


def _fenced(delivery: PushDelivery, claim: datetime, what: str) -> None:
    logger.warning(
        "push delivery %s: its claim (until %s) is no longer this sender's, %s",
        delivery.id,
        claim.isoformat(),
        what,
    )
    metrics.fenced("push")
