"""tasks: create, update, complete and list the current user's tasks."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, cast
from uuid import UUID

import msgspec

from app.db.models import Task
from app.lib.schema import Schema, check_dates
from app.tasks import services
from app.tasks.schemas import TaskNotes, TaskTitle
from app.tools.base import Tool, ToolContext, ToolData, ToolResult

# The limits of the tasks API (TaskTitle, TaskNotes), described for the model.
Title = Annotated[TaskTitle, msgspec.Meta(description="Task title.")]
Notes = Annotated[TaskNotes, msgspec.Meta(description="Free-form notes.")]
DueAt = Annotated[
    datetime, msgspec.Meta(tz=True, description="Due date-time, ISO 8601 with timezone.")
]
RemindBefore = Annotated[
    int,
    msgspec.Meta(
        ge=0,
        le=43_200,
        description="Push the reminder this many minutes before due_at (default: at due_at).",
    ),
]
STATUS_DOC = "update: active or completed; list: active, completed or all (default active)."
TaskId = Annotated[UUID, msgspec.Meta(description="The task_id returned by create or list.")]


class CreateParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    title: Title
    notes: Notes | None = None
    due_at: DueAt | None = None
    remind_before_minutes: RemindBefore | None = None

    def __post_init__(self) -> None:
        check_dates(self)


class UpdateParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_id: TaskId
    title: Title | None = None
    notes: Notes | None = None
    due_at: DueAt | None = None
    remind_before_minutes: RemindBefore | None = None
    status: (
        Annotated[Literal["active", "completed"], msgspec.Meta(description=STATUS_DOC)] | None
    ) = None

    def __post_init__(self) -> None:
        check_dates(self)


class CompleteParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    task_id: TaskId


class ListParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    status: (
        Annotated[Literal["active", "completed", "all"], msgspec.Meta(description=STATUS_DOC)]
        | None
    ) = None
    limit: (
        Annotated[int, msgspec.Meta(ge=1, le=50, description="At most this many (default 20).")]
        | None
    ) = None


TaskStatus = Literal["active", "completed"]


class TaskToolResult(ToolData, tag="task"):
    """A task created, updated or completed."""

    task_id: UUID
    task_title: str
    task_status: TaskStatus
    notes: str | None
    due_at: datetime | None
    # When the user's devices get the reminder push (null: none pending).
    remind_at: datetime | None = None


class TaskSummary(Schema):
    task_id: UUID
    task_title: str
    task_status: TaskStatus


class TaskListResult(ToolData, tag="task_list"):
    """The user's tasks with one status (or all), newest first."""

    status: Literal["active", "completed", "all"]
    tasks: list[TaskSummary]
    count: int


def task_data(task: Task) -> TaskToolResult:
    return TaskToolResult(
        task_id=task.id,
        task_title=task.title,
        task_status=cast("TaskStatus", task.status),
        notes=task.notes,
        due_at=task.due_at,
        remind_at=task.remind_at,
    )


class TasksTool(Tool):
    name = "tasks"
    description = (
        "Manage the user's tasks. Actions: create (title), update (task_id + fields), "
        "complete (task_id), list (optional status, limit). A task with due_at is "
        "pushed to the user's phone as a reminder at that time (or remind_before_minutes "
        "earlier)."
    )
    actions = {
        "create": CreateParams,
        "update": UpdateParams,
        "complete": CompleteParams,
        "list": ListParams,
    }
    results = {
        "create": TaskToolResult,
        "update": TaskToolResult,
        "complete": TaskToolResult,
        "list": TaskListResult,
    }
    read_only_actions = frozenset({"list"})
    timeout_seconds = 15
    examples = {
        "create": {"title": "Buy milk"},
        "update": {"task_id": "<task_id from list>", "title": "Buy oat milk"},
        "complete": {"task_id": "<task_id from list>"},
        "list": {"status": "active"},
    }

    def result_preview(self, action: str, result: ToolResult) -> list[str] | None:
        data = result.data or {}
        if action != "list":
            due = f"Due {data['due_at'][:10]}" if data.get("due_at") else None
            return [result.display_message or "", data.get("task_status") or "", due or ""]
        titles = [f"• {task['task_title']}" for task in data.get("tasks") or []]
        if len(titles) > 2:
            titles = [titles[0], f"+{len(titles) - 1} more"]
        return [result.display_message or "", *titles]

    def start_message(self, action: str, params: msgspec.Struct) -> str | None:
        return "Creating task…" if action == "create" else None

    async def create_action(self, ctx: ToolContext, params: CreateParams) -> ToolResult:
        async with ctx.transaction() as session:
            task = await services.create_task(
                session,
                ctx.user.id,
                title=params.title,
                notes=params.notes,
                due_at=params.due_at,
                remind_before_seconds=_seconds(params.remind_before_minutes),
                agent_id=ctx.agent.id,
                thread_id=ctx.thread_id,
            )
        return ToolResult.success(task_data(task), display_message=f"Created “{task.title}”")

    async def update_action(self, ctx: ToolContext, params: UpdateParams) -> ToolResult:
        changes = {
            k: v
            for k, v in msgspec.structs.asdict(params).items()
            if k not in ("task_id", "remind_before_minutes") and v is not None
        }
        if params.remind_before_minutes is not None:
            changes["remind_before_seconds"] = _seconds(params.remind_before_minutes)
        if not changes:
            return ToolResult.failure(
                "Nothing to update.",
                "validation_error",
                suggestion="Give at least one of title, notes, due_at, remind_before_minutes, status.",
                action="update",
                example=self.example_call("update"),
            )
        return await self._change(ctx, params.task_id, changes, "Updated")

    async def complete_action(self, ctx: ToolContext, params: CompleteParams) -> ToolResult:
        return await self._change(ctx, params.task_id, {"status": "completed"}, "Completed")

    async def list_action(self, ctx: ToolContext, params: ListParams) -> ToolResult:
        status = params.status or "active"
        async with ctx.transaction() as session:
            page = await services.list_tasks(
                session, ctx.user, None if status == "all" else status, params.limit or 20, None
            )
        tasks = [
            TaskSummary(task_id=t.id, task_title=t.title, task_status=cast("TaskStatus", t.status))
            for t in page.items
        ]
        data = TaskListResult(status=status, tasks=tasks, count=len(tasks))
        return ToolResult.success(data, display_message=_listed(len(tasks), status))

    async def _change(
        self, ctx: ToolContext, task_id: UUID, changes: dict[str, Any], verb: str
    ) -> ToolResult:
        async with ctx.transaction() as session:
            task = await services.find_owned_task(session, ctx.user.id, task_id)
            if task is None:
                return ToolResult.failure(
                    f"No task with task_id {task_id}.",
                    "user_error",
                    suggestion="Call tasks with action list to find the task_id.",
                    task_id=str(task_id),
                )
            task = await services.update_task(session, task, changes)
        return ToolResult.success(task_data(task), display_message=f"{verb} “{task.title}”")


def _seconds(minutes: int | None) -> int | None:
    return None if minutes is None else minutes * 60


def _listed(count: int, status: str) -> str:
    """`2 active tasks`, `1 task` (all of them), `No completed tasks`."""
    kind = "" if status == "all" else f"{status} "
    noun = "task" if count == 1 else "tasks"
    return f"{count} {kind}{noun}" if count else f"No {kind}{noun}"
