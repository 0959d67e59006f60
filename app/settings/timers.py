"""Settings of things due at a time: task reminders (when a late one is still sent)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import NonNegativeFloat, PositiveFloat


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
