from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

import msgspec

from app.attachments.schemas import AttachmentRead
from app.lib.open_schemas import open_enum
from app.lib.openapi import name_items, refer_property
from app.lib.schema import Input, NonNegativeInt, Schema
from app.threads.activity import ToolStatus
from app.threads.plan import Plan, PlanStepStatus
from app.tools.errors import ErrorType

Role = Literal["user", "assistant", "tool"]
TraceAction = Literal["plan", "memory", "tool", "completion"]
RunStatusName = Literal["queued", "running", "completed", "failed", "cancelled"]
# Part of the API schema (not a setting); a longer message is a 400 with a field error.
MessageContent = Annotated[str, msgspec.Meta(min_length=1, max_length=32_000)]
ClientMessageId = Annotated[str, msgspec.Meta(min_length=1, max_length=100)]
ToolName = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]
Title = Annotated[str, msgspec.Meta(max_length=200)]
MAX_ATTACHMENTS = 10  # photos and files in one message (part of the API schema)


# A cell's `data`: stored as the tool wrote it, published as the union `ToolData` of
# every kind (app/tools/results.py). Left out of the body rather than null (a nullable
# `$ref` has no form every generator reads: app/lib/openapi.py), so absent when unset.
CellData = dict[str, Any] | None | msgspec.UnsetType


def _unset_if_none(value: Any) -> Any:
    return msgspec.UNSET if value is None else value


class ToolActivity(Schema, kw_only=True):
    """A tool call as the app renders it: one cell."""

    # Written only through app/threads/activity.py (its statuses and transitions).

    id: str
    name: str
    status: ToolStatus
    input: dict[str, Any] | None = None
    # `type` tells the kind: the action's result, `progress`, `error` (ToolData).
    data: CellData = msgspec.UNSET
    display_message: str | None = None
    error: str | None = None
    error_type: ErrorType | None = None
    started_at: datetime  # set when the cell is created
    finished_at: datetime | None = None
    expires_at: datetime | None = None
    duration_ms: int | None = None  # once finished: finished_at - started_at
    # Once finished: up to 3 short lines summarising the result (or the error).
    preview: (
        Annotated[list[Annotated[str, msgspec.Meta(max_length=80)]], msgspec.Meta(max_length=3)]
        | None
    ) = None
    step_id: str | None = None  # the plan step this call executes (planner runs)

    def __post_init__(self) -> None:
        self.data = _unset_if_none(self.data)
        # From the stored times, before the base class serves them in whole seconds.
        if self.duration_ms is None and self.started_at and self.finished_at:
            elapsed = self.finished_at - self.started_at
            self.duration_ms = max(0, round(elapsed.total_seconds() * 1000))
        super().__post_init__()


class MessageSiblings(Schema):
    """The versions of a message (children of one parent: an edited question, another
    answer), for the app's "‹ 2/3 ›": `index` is this one's place among `ids` (0: the
    first), `count` how many there are. A message that is the only version: count 1."""

    count: int
    index: int
    ids: list[UUID]


class ThreadMessageRead(Schema, kw_only=True, omit_defaults=True):
    """A thread message; `tool_activity` is present on a tool call's message only."""

    # Left out rather than null elsewhere: an optional `$ref` is the one form of a nullable
    # object every client generator reads (OmittedNullStructSchemaPlugin in
    # app/lib/openapi_plugins.py).

    id: UUID
    thread_id: UUID
    run_id: UUID | None
    position: int
    # The message this one follows on its branch; null: the thread's first.
    parent_id: UUID | None
    siblings: MessageSiblings
    seq: int
    role: Role
    content: str | None
    is_user_facing: bool
    client_message_id: str | None
    tool_activity: ToolActivity | None = None
    plan: Plan | None = None  # a planner run's plan cell (app/threads/plan.py)
    # A user message's photos and files, in the order sent (absent when none).
    attachments: list[AttachmentRead] = msgspec.field(default_factory=list)
    created_at: datetime
    updated_at: datetime


class RunUsage(Schema):
    """A run's model usage as the providers reported it, summed over its model calls."""

    input_tokens: NonNegativeInt
    output_tokens: NonNegativeInt
    cached_tokens: NonNegativeInt  # of the input, read from the provider's prompt cache
    reasoning_tokens: NonNegativeInt  # of the output, spent thinking
    cost_usd: float | None = None  # None: no price known for the model


class RunRead(Schema):
    id: UUID
    thread_id: UUID
    status: RunStatusName
    error: str | None
    trigger_message_id: UUID | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    usage: RunUsage  # zeros until the run ends (written with its end)
    # Once ended: from the message that queued it to its end (the times above are whole
    # seconds, which a turn of a few hundred milliseconds would read as 0).
    duration_ms: int | None = None

    def __post_init__(self) -> None:
        if self.duration_ms is None and self.finished_at is not None:
            elapsed = self.finished_at - self.created_at
            self.duration_ms = max(0, round(elapsed.total_seconds() * 1000))
        super().__post_init__()


class RunStep(Schema):
    """One executed step of a run: a plan step, or (other agents) a model turn's tool
    round, the pre-flight calls, or the final answer."""

    id: str
    label: str
    action: TraceAction
    status: PlanStepStatus
    executor: str  # agent (memory, tools) or litellm (planning, the answer)
    tool_call_ids: list[str]  # its tool cells' ids
    tool: str | None = None
    args: dict[str, Any] | None = None
    description: str | None = None
    error: str | None = None
    detail: str | None = None


class RunToolResult(Schema):
    """One tool call of a run, from its stored cell."""

    tool_call_id: str
    message_id: UUID
    name: str
    input: dict[str, Any] | None
    status: ToolStatus
    data: CellData = msgspec.UNSET  # the cell's (ToolData), absent when it has none
    error: str | None = None
    error_type: ErrorType | None = None
    step_id: str | None = None

    def __post_init__(self) -> None:
        self.data = _unset_if_none(self.data)
        super().__post_init__()


class RunTrace(Schema):
    """What a run did: its steps in order and every tool call's outcome (and a planner
    run's plan cell as it stands)."""

    steps: list[RunStep]
    tool_results: list[RunToolResult]
    plan: Plan | None = None


class RunDetail(RunRead, kw_only=True):
    """A run with its trace (`GET …/runs/{run_id}`)."""

    steps: list[RunStep]
    tool_results: list[RunToolResult]


class ThreadRead(Schema):
    id: UUID
    title: str | None
    agent_id: UUID
    last_seq: int
    active_run_id: UUID | None
    created_at: datetime
    updated_at: datetime
    current_leaf_id: UUID | None = None  # the tip of the branch the thread shows


class ThreadPage(Schema):
    items: list[ThreadRead]
    next_cursor: str | None


class ThreadCreate(Input):
    agent_id: UUID
    title: Title | None = None


class ThreadUpdate(Input):
    title: Title | None = None


class MessagePage(Schema, omit_defaults=True):
    items: list[ThreadMessageRead]
    last_seq: int
    has_more: bool
    # The tip of the thread's current branch (the latest page ends with it).
    current_leaf_id: UUID | None = None


class ToolCallRequest(Input):
    name: ToolName
    args: dict[str, Any] = msgspec.field(default_factory=dict)


class MessageCreate(Input):
    # Text, or empty when the message sends attachments (a photo with nothing to say).
    content: Annotated[str, msgspec.Meta(max_length=32_000)] = ""
    client_message_id: ClientMessageId | None = None
    tools: Annotated[list[ToolName], msgspec.Meta(max_length=50)] | None = None
    tool_calls: Annotated[list[ToolName | ToolCallRequest], msgspec.Meta(max_length=20)] | None = (
        None
    )
    # Uploads (`UploadAttachment`) this message sends; each is sent once.
    attachment_ids: Annotated[list[UUID], msgspec.Meta(max_length=MAX_ATTACHMENTS)] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.content and not self.attachment_ids:
            raise ValueError("A message needs `content` or `attachment_ids`.")


class MessagePosted(Schema):
    message: ThreadMessageRead
    run: RunRead


class ApprovalDecision(Input):
    approve: bool
    reason: Annotated[str, msgspec.Meta(max_length=2000)] | None = None


class DeviceToolResult(Input):
    """The phone's answer to a device tool call: `output` (an object, checked against the
    tool's `result_schema`), or `error` with an `error_type` (default `system_error`)."""

    output: dict[str, Any] | None = None
    error: Annotated[str, msgspec.Meta(min_length=1, max_length=2000)] | None = None
    error_type: ErrorType | None = None
    # What the cell says once the output is in ("Added to your calendar"); default "Done".
    display_message: Annotated[str, msgspec.Meta(min_length=1, max_length=200)] | None = None


class InputAnswer(Input):
    """The user's answer to a tool call waiting in `awaiting_input`: `accept` with
    `content` (an object matching `data.input_request.requested_schema`), or `decline` /
    `cancel` without it (the MCP elicitation result's actions)."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


open_enum(RunStatusName, "RunStatus")
refer_property(ToolActivity, "data", "ToolData")
name_items(
    MessageCreate,
    "tool_calls",
    "PreflightToolCall",
    "A call run before the model: a tool's name alone (its one read-only action that "
    "needs no parameter) or `{name, args}`.",
)
refer_property(RunToolResult, "data", "ToolData")

__all__ = ("NonNegativeInt",)
