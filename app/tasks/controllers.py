from __future__ import annotations

from typing import Annotated
from uuid import UUID

from litestar import get, patch, post
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import User
from app.lib.page_request import PAGE, PageRequest
from app.lib.problems import problems
from app.tasks import services
from app.tasks.schemas import (
    TaskPage,
    TaskRead,
    TaskReminderAnswer,
    TaskStatusFilter,
    TaskUpdate,
)
from app.tasks.serializers import task_read


class TaskController(SignedInController):
    path = "/api/tasks"
    tags = ["tasks"]

    @get("/", operation_id="ListTasks", responses=problems(), dependencies=PAGE)
    async def list_tasks(
        self,
        db_session: AsyncSession,
        current_user: User,
        status: Annotated[TaskStatusFilter | None, Parameter()] = None,
        *,
        page: PageRequest,  # `limit` and `cursor`, listed after `status`
    ) -> TaskPage:
        """Your tasks, newest first: every task (no `status`, or `all`), or those with one
        status."""
        wanted = None if status == "all" else status
        return await services.list_tasks(db_session, current_user, wanted, page.size, page.cursor)

    @patch("/{task_id:uuid}", operation_id="UpdateTask", responses=problems(404))
    async def update_task(
        self, task_id: UUID, data: TaskUpdate, db_session: AsyncSession, current_user: User
    ) -> TaskRead:
        """Rename, annotate, complete or reopen a task."""
        task = await services.get_owned_task(db_session, current_user, task_id)
        changes = data.sent_fields()
        task = await services.update_task(db_session, task, changes)
        return task_read(task)

    @post(
        "/{task_id:uuid}/reminder-answer",
        operation_id="AnswerTaskReminder",
        responses=problems(404, 409),
        status_code=200,
    )
    async def answer_task_reminder(
        self,
        task_id: UUID,
        data: TaskReminderAnswer,
        db_session: AsyncSession,
        current_user: User,
    ) -> TaskRead:
        """The notification extension's call for an action of a task reminder: complete
        the task (every device hears it over `/api/ws`), or snooze the reminder 10
        minutes, an hour, or until tomorrow 9:00 in `time_zone`."""
        task = await services.get_owned_task(db_session, current_user, task_id)
        return task_read(await services.answer_reminder(db_session, task, data))
