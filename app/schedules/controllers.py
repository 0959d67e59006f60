"""`/api/schedules`: a user's schedules of runs on their threads."""

from __future__ import annotations

from uuid import UUID

from litestar import delete, get, patch, post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import User
from app.lib.problems import problems
from app.schedules import services as schedules
from app.schedules.schemas import ScheduleCreate, SchedulePage, ScheduleRead, ScheduleUpdate
from app.settings import Settings


class ScheduleController(SignedInController):
    path = "/api/schedules"
    tags = ["schedules"]

    @get("/", operation_id="ListSchedules", responses=problems())
    async def list_schedules(self, db_session: AsyncSession, current_user: User) -> SchedulePage:
        """Your schedules, newest first (all of them: their number is limited)."""
        rows = await schedules.list_schedules(db_session, current_user)
        return SchedulePage(items=[schedules.schedule_read(s) for s in rows])

    @post("/", operation_id="CreateSchedule", responses=problems(404, 409))
    async def create_schedule(
        self, data: ScheduleCreate, db_session: AsyncSession, current_user: User, settings: Settings
    ) -> ScheduleRead:
        """Run `prompt` in a thread of yours at a time (`once`, `run_at`) or on a
        recurring rule (`rrule` or `cron`, wall-clock times in `time_zone`)."""
        schedule = await schedules.create(db_session, settings, current_user, data)
        return schedules.schedule_read(schedule)

    @get("/{schedule_id:uuid}", operation_id="GetSchedule", responses=problems(404))
    async def get_schedule(
        self, schedule_id: UUID, db_session: AsyncSession, current_user: User
    ) -> ScheduleRead:
        """One schedule of yours."""
        schedule = await schedules.get_owned(db_session, current_user, schedule_id)
        return schedules.schedule_read(schedule)

    @patch("/{schedule_id:uuid}", operation_id="UpdateSchedule", responses=problems(404))
    async def update_schedule(
        self,
        schedule_id: UUID,
        data: ScheduleUpdate,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> ScheduleRead:
        """Change the prompt, the rule, the time or the time zone (the next time follows)."""
        schedule = await schedules.get_owned(db_session, current_user, schedule_id)
        schedule = await schedules.update(db_session, settings, schedule, data)
        return schedules.schedule_read(schedule)

    @post(
        "/{schedule_id:uuid}/pause",
        operation_id="PauseSchedule",
        responses=problems(404),
        status_code=200,
    )
    async def pause_schedule(
        self, schedule_id: UUID, db_session: AsyncSession, current_user: User
    ) -> ScheduleRead:
        """Stop starting runs until resumed."""
        schedule = await schedules.get_owned(db_session, current_user, schedule_id)
        return schedules.schedule_read(await schedules.pause(db_session, schedule))

    @post(
        "/{schedule_id:uuid}/resume",
        operation_id="ResumeSchedule",
        responses=problems(404),
        status_code=200,
    )
    async def resume_schedule(
        self, schedule_id: UUID, db_session: AsyncSession, current_user: User, settings: Settings
    ) -> ScheduleRead:
        """Start runs again from the next time after now (missed times are skipped)."""
        schedule = await schedules.get_owned(db_session, current_user, schedule_id)
        return schedules.schedule_read(await schedules.resume(db_session, settings, schedule))

    @delete("/{schedule_id:uuid}", operation_id="DeleteSchedule", responses=problems(404))
    async def delete_schedule(
        self, schedule_id: UUID, db_session: AsyncSession, current_user: User
    ) -> None:
        """Delete a schedule (its runs so far stay in the thread)."""
        schedule = await schedules.get_owned(db_session, current_user, schedule_id)
        await schedules.delete(db_session, schedule)
