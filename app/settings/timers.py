"""Settings of things due at a time: task reminders (when a late one is still sent) and
scheduled runs (how many, how often, how many failures)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import NonNegativeFloat, PositiveFloat, PositiveInt


@dataclass(frozen=True)
class TimerSettings:
    reminder_max_lateness_seconds: Annotated[
        NonNegativeFloat,
        Meta(
            description="a reminder found due later than this (the service was down over "
            "its time) is dropped, not sent; one within it is sent marked late"
        ),
    ] = 6 * 3600.0
    reminder_late_after_seconds: Annotated[
        NonNegativeFloat,
        Meta(description="a reminder sent later than this after its time is marked `late`"),
    ] = 60.0
    reminder_poll_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="the reminder scheduler's longest sleep: it sleeps until the next "
            "reminder and is woken by changes in its process; this bounds how late it "
            "notices one set in another process"
        ),
    ] = 60.0
    schedules_per_user: Annotated[
        PositiveInt, Meta(description="schedules one user may have (paused ones count)")
    ] = 20
    schedule_min_interval_seconds: Annotated[
        NonNegativeFloat,
        Meta(description="the shortest gap a recurring schedule may leave between two runs"),
    ] = 900.0
    schedule_runs_per_day: Annotated[
        PositiveInt,
        Meta(
            description="runs one user's schedules may start in 24 hours; past it a due "
            "time starts none (a spent monthly budget likewise)"
        ),
    ] = 48
    schedule_max_failures: Annotated[
        PositiveInt,
        Meta(description="a schedule whose runs failed this many times in a row is paused"),
    ] = 3
