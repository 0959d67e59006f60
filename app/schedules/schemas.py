"""What goes in and out of `/api/schedules`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from app.lib.schema import AwareDatetime, Input, Schema

ScheduleKind = Literal["once", "rrule", "cron"]
ScheduleStatus = Literal["active", "paused", "ended"]
Prompt = Annotated[str, msgspec.Meta(min_length=1, max_length=4000)]
Rule = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=500,
        examples=["FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=8;BYMINUTE=0", "0 8 * * 1-5"],
        description="`rrule`: an RFC 5545 RRULE; `cron`: five fields (minute hour "
        "day-of-month month day-of-week). Wall-clock times in `time_zone`.",
    ),
]
TimeZoneName = Annotated[
    str,
    msgspec.Meta(
        min_length=1, max_length=64, examples=["Europe/Berlin"], description="IANA time zone"
    ),
]


class ScheduleCreate(Input):
    thread_id: UUID
    prompt: Prompt
    kind: ScheduleKind
    rule: Rule | None = None  # rrule and cron
    run_at: AwareDatetime | None = None  # once
    time_zone: TimeZoneName = "UTC"


class ScheduleUpdate(Input):
    prompt: Prompt | msgspec.UnsetType = msgspec.UNSET
    rule: Rule | msgspec.UnsetType = msgspec.UNSET
    run_at: AwareDatetime | msgspec.UnsetType = msgspec.UNSET
    time_zone: TimeZoneName | msgspec.UnsetType = msgspec.UNSET


class ScheduleRead(Schema):
    id: UUID
    thread_id: UUID
    prompt: str
    kind: ScheduleKind
    rule: str | None
    run_at: datetime | None
    time_zone: str
    status: ScheduleStatus
    # Why it was paused (null: by you, or not paused), e.g. its runs kept failing.
    paused_reason: str | None
    next_run_at: datetime | None
    last_run_at: datetime | None
    last_run_id: UUID | None
    failures: int
    created_at: datetime
    updated_at: datetime


class SchedulePage(Schema):
    items: list[ScheduleRead]
