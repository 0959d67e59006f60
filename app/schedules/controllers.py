"""`/api/schedules`: a user's schedules of runs on their threads."""

from __future__ import annotations

from uuid import UUID

from litestar import delete, get, patch, post
from litestar.di import Provide
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import Schedule, User
from app.lib.problems import problems
from app.schedules import services as schedules
from app.schedules.schemas import ScheduleCreate, SchedulePage, ScheduleRead, ScheduleUpdate
from app.settings import Settings


async def provide_owned_schedule(
    schedule_id: UUID, db_session: AsyncSession, current_user: User
) -> Schedule:
    """The path's schedule if it is the caller's (404 otherwise, as for an unknown id)."""
    return await schedules.get_owned(db_session, current_user, schedule_id)


class ScheduleController(SignedInController):
    path = "/api/schedules"
    tags = ["schedules"]
    dependencies = {"owned_schedule": Provide(provide_owned_schedule)}

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
    async def get_schedule(self, owned_schedule: Schedule) -> ScheduleRead:
        """One schedule of yours."""
        return schedules.schedule_read(owned_schedule)

    @patch("/{schedule_id:uuid}", operation_id="UpdateSchedule", responses=problems(404))
    async def update_schedule(
        self,
        owned_schedule: Schedule,
        data: ScheduleUpdate,
        db_session: AsyncSession,
        settings: Settings,
    ) -> ScheduleRead:
        """Change the prompt, the rule, the time or the time zone (the next time follows)."""
        schedule = await schedules.update(db_session, settings, owned_schedule, data)
        return schedules.schedule_read(schedule)

    @post(
        "/{schedule_id:uuid}/pause",
        operation_id="PauseSchedule",
        responses=problems(404),
        status_code=200,
    )
    async def pause_schedule(
        self, owned_schedule: Schedule, db_session: AsyncSession
    ) -> ScheduleRead:
        """Stop starting runs until resumed."""
        return schedules.schedule_read(await schedules.pause(db_session, owned_schedule))

    @post(
        "/{schedule_id:uuid}/resume",
        operation_id="ResumeSchedule",
        responses=problems(404),
        status_code=200,
    )
    async def resume_schedule(
        self, owned_schedule: Schedule, db_session: AsyncSession, settings: Settings
    ) -> ScheduleRead:
        """Start runs again from the next time after now (missed times are skipped)."""
        return schedules.schedule_read(await schedules.resume(db_session, settings, owned_schedule))

    @delete("/{schedule_id:uuid}", operation_id="DeleteSchedule", responses=problems(404))
    async def delete_schedule(self, owned_schedule: Schedule, db_session: AsyncSession) -> None:
        """Delete a schedule (its runs so far stay in the thread)."""
        await schedules.delete(db_session, owned_schedule)
