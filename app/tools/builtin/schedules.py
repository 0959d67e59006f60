"""schedules: list the user's schedules, and put one on this thread (the user approves)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from app.db.models import Schedule
from app.lib.problems import ProblemException
from app.lib.schema import Schema, check_dates
from app.schedules import services
from app.schedules.schemas import Prompt, Rule, ScheduleCreate, TimeZoneName
from app.tools.base import Tool, ToolContext, ToolData, ToolResult

Kind = Annotated[
    Literal["once", "cron", "rrule"],
    msgspec.Meta(description="once (run_at), cron (a five-field rule) or rrule (RFC 5545)."),
]
RunAt = Annotated[datetime, msgspec.Meta(tz=True, description="once: ISO 8601 with timezone.")]


class CreateParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    prompt: Annotated[Prompt, msgspec.Meta(description="What to do at each time.")]
    kind: Kind
    rule: Rule | None = None
    run_at: RunAt | None = None
    time_zone: Annotated[TimeZoneName, msgspec.Meta(description="The user's IANA zone.")] = "UTC"

    def __post_init__(self) -> None:
        check_dates(self)


class ListParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class ScheduleSummary(Schema):
    id: UUID = msgspec.field(name="schedule_id")  # the row's `id`, as the model reads it
    thread_id: UUID
    prompt: str
    kind: str
    rule: str | None
    time_zone: str
    status: str
    next_run_at: datetime | None


class ScheduleToolResult(ToolData, tag="schedule"):
    """A schedule put on this thread."""

    schedule: ScheduleSummary


class ScheduleListResult(ToolData, tag="schedule_list"):
    """The user's schedules, newest first."""

    schedules: list[ScheduleSummary]
    count: int


def _summary(schedule: Schedule) -> ScheduleSummary:
    return msgspec.convert(schedule, ScheduleSummary, from_attributes=True)


class SchedulesTool(Tool):
    name = "schedules"
    description = (
        "Runs of this thread at a time or on a recurring rule (the user's time zone). "
        "Actions: list; create (prompt, kind once + run_at, or cron/rrule + rule)."
    )
    actions = {"list": ListParams, "create": CreateParams}
    results = {"list": ScheduleListResult, "create": ScheduleToolResult}
    read_only_actions = frozenset({"list"})
    # A schedule acts later, unattended, and spends the user's budget: they approve it.
    requires_confirmation = frozenset({"create"})
    timeout_seconds = 15
    examples = {
        "list": {},
        "create": {
            "prompt": "Give me the news",
            "kind": "cron",
            "rule": "0 8 * * 1-5",
            "time_zone": "Europe/Berlin",
        },
    }

    async def list_action(self, ctx: ToolContext, params: ListParams) -> ToolResult:
        async with ctx.transaction() as session:
            rows = await services.list_schedules(session, ctx.user)
        data = ScheduleListResult(schedules=[_summary(s) for s in rows], count=len(rows))
        return ToolResult.success(data, display_message=f"{len(rows)} schedule(s)")

    async def create_action(self, ctx: ToolContext, params: CreateParams) -> ToolResult:
        fields = msgspec.structs.asdict(params)
        try:
            async with ctx.transaction() as session:
                data = ScheduleCreate(thread_id=ctx.thread_id, **fields)
                schedule = await services.create(session, ctx.settings, ctx.user, data)
        except ProblemException as refused:
            return ToolResult.failure(
                refused.detail or "The schedule was refused.",
                "validation_error" if refused.status_code == 400 else "user_error",
                suggestion="Fix the rule, time or time zone, or list the existing schedules.",
                action="create",
                example=self.example_call("create"),
            )
        return ToolResult.success(
            ScheduleToolResult(schedule=_summary(schedule)), display_message="Schedule set"
        )
