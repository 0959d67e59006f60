"""The plan cell: a planner run's plan and each step's status, as the app renders it.

A planner agent's run first asks the model for a plan (app/orchestrator/loop/planner.py); the
plan is stored on one assistant message (`thread_messages.plan`) whose every change
gets a new `seq`, like a tool cell. This module owns the plan's shape and transitions:

    plan:  in_progress (planning, then executing) ─> ok | error
    step:  pending ─> in_progress ─> ok | error | skipped
    run ends first (cancel, timeout, crash): open steps -> error (in_progress) or
    skipped (pending), the plan -> error

Functions return new dicts (the stored JSON is never changed in place).
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import msgspec

from app.lib.schema import Schema

StepId = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")]
StepLabel = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]
Executor = Literal["agent", "litellm", "remote"]
StepAction = Literal["memory", "tool", "completion"]
MAX_PLAN_STEPS = 20


class PlanStepStatus(enum.StrEnum):
    """A plan step's (and the plan's) status."""

    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    OK = "ok"
    ERROR = "error"
    SKIPPED = "skipped"


OPEN_STEP = (PlanStepStatus.PENDING, PlanStepStatus.IN_PROGRESS)


class PlanStep(Schema):
    """One step of a plan: what the model planned, and how far it got."""

    id: StepId
    label: StepLabel
    executor: Executor
    action: StepAction
    status: PlanStepStatus
    tool: str | None = None  # the tool (or ask_<specialist>) a `tool` step calls
    args: dict[str, Any] | None = None  # the tool's arguments; a memory step's `query`
    description: str | None = None
    error: str | None = None  # why it failed or was skipped
    detail: str | None = None  # a short outcome ("Recalled 2 memories")
    tool_call_id: str | None = None  # a tool step's cell: its `tool_activity.id`


class Plan(Schema):
    """A planner run's plan: `steps` in execution order, the last one the completion."""

    status: PlanStepStatus
    steps: list[PlanStep]
    attempts: int  # model calls it took to get a valid plan (1 or 2; 0 while planning)
    description: str | None = None
    error: str | None = None  # why no valid plan came, or why the run stopped


PlanDict = dict[str, Any]


def planning() -> PlanDict:
    """The cell shown while the model plans: no steps yet."""
    return msgspec.to_builtins(Plan(status=PlanStepStatus.IN_PROGRESS, steps=[], attempts=0))


def planned(steps: list[PlanStep], description: str | None, attempts: int) -> PlanDict:
    plan = Plan(
        status=PlanStepStatus.IN_PROGRESS, steps=steps, attempts=attempts, description=description
    )
    return msgspec.to_builtins(plan)


def rejected(error: str, attempts: int) -> PlanDict:
    """No valid plan after the retry: the cell says why."""
    plan = Plan(status=PlanStepStatus.ERROR, steps=[], attempts=attempts, error=error)
    return msgspec.to_builtins(plan)


def step_changed(plan: PlanDict, step_id: str, status: PlanStepStatus, **fields: Any) -> PlanDict:
    steps = [
        {**step, "status": status.value, **fields} if step["id"] == step_id else step
        for step in plan["steps"]
    ]
    return {**plan, "steps": steps}


def skip_open(plan: PlanDict, reason: str) -> PlanDict:
    """Every step still pending becomes skipped with `reason`."""
    steps = [
        {**step, "status": PlanStepStatus.SKIPPED.value, "error": reason}
        if step["status"] == PlanStepStatus.PENDING.value
        else step
        for step in plan["steps"]
    ]
    return {**plan, "steps": steps}


def completed(plan: PlanDict) -> PlanDict:
    return {**plan, "status": PlanStepStatus.OK.value}


def is_open(plan: PlanDict | None) -> bool:
    return bool(plan) and plan.get("status") in {s.value for s in OPEN_STEP}  # type: ignore[union-attr]


def closed(plan: PlanDict, error: str) -> PlanDict:
    """The run ended before the plan did: the running step failed, the rest skipped."""
    steps = []
    for step in plan.get("steps") or ():
        if step["status"] == PlanStepStatus.IN_PROGRESS.value:
            step = {**step, "status": PlanStepStatus.ERROR.value, "error": error}
        elif step["status"] == PlanStepStatus.PENDING.value:
            step = {**step, "status": PlanStepStatus.SKIPPED.value, "error": error}
        steps.append(step)
    return {**plan, "steps": steps, "status": PlanStepStatus.ERROR.value, "error": error}
