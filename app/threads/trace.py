"""A run's trace, rebuilt from its stored messages: the steps it executed and every tool
call's outcome. Served by `GET …/runs/{run_id}` and reusable wherever a run is reported.

Steps:
- a planner run: the pre-flight calls if any (below), a `plan` step (making the plan),
  then the plan's own steps with their statuses, read from the plan cell;
- any other run: one `tool` step per model turn that called tools (`turn-N`; the request's
  pre-flight `tool_calls` are the step `preflight`), whose status sums up its cells
  (in_progress while one is open, error if one failed, ok otherwise; a specialist's calls
  count towards the delegating turn), then the `completion` step: the answer (ok), the
  answer being streamed (in_progress), or why there is none (error: the run failed;
  skipped: cancelled).

Tool results are the run's tool cells in thread order: name, input, cell status, data or
error, and the plan step a call executed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Run, RunStatus, ThreadMessage
from app.threads import activity as cell
from app.threads import repository
from app.threads.plan import Plan, PlanStepStatus
from app.threads.schemas import RunStep, RunToolResult, RunTrace, TraceAction

PREFLIGHT_CALL_PREFIX = "call_pre_"  # ids the runner gives the request's pre-flight calls
Status = PlanStepStatus


async def run_trace(session: AsyncSession, run: Run) -> RunTrace:
    rows = list(await session.scalars(repository.run_messages(run.id)))
    plan = next((row.plan for row in rows if row.plan), None)
    if plan is None:
        steps = turn_steps(rows, run)
    else:  # the request's pre-flight calls ran before the plan was made
        preflight = [s for s in turn_steps(rows, run) if s.id == "preflight"]
        steps = [*preflight, *plan_steps(plan)]
    results = [tool_result(row) for row in rows if row.role == "tool" and row.tool_activity]
    shown = msgspec.convert(plan, Plan) if plan is not None else None
    return RunTrace(steps=steps, tool_results=results, plan=shown)


def tool_result(row: ThreadMessage) -> RunToolResult:
    activity = row.tool_activity or {}
    return RunToolResult(
        tool_call_id=activity.get("id") or row.tool_call_id or "",
        message_id=row.id,
        name=activity.get("name") or "",
        input=activity.get("input"),
        status=activity.get("status") or cell.FAILURE,
        data=activity.get("data"),
        error=activity.get("error"),
        error_type=activity.get("error_type"),
        step_id=activity.get("step_id"),
    )


def plan_steps(plan: dict[str, Any]) -> list[RunStep]:
    steps = plan.get("steps") or []
    status = Status.IN_PROGRESS if plan.get("status") == Status.IN_PROGRESS and not steps else None
    if status is None:
        status = Status.OK if steps else Status.ERROR
    attempts = plan.get("attempts") or 0
    made = _model_step(
        "plan",
        "Make a plan",
        status,
        error=None if steps else plan.get("error"),
        detail=f"{len(steps)} steps, {attempts} model call(s)" if steps else None,
    )
    return [made, *(_from_plan_step(step) for step in steps)]


def _from_plan_step(step: dict[str, Any]) -> RunStep:
    fields = {k: step.get(k) for k in ("tool", "args", "description", "error", "detail")}
    call_id = step.get("tool_call_id")
    return RunStep(
        id=step["id"],
        label=step["label"],
        action=step["action"],
        status=Status(step["status"]),
        executor=step.get("executor") or "agent",
        tool_call_ids=[call_id] if call_id else [],
        **fields,
    )


@dataclass
class _Turn:
    id: str
    label: str
    cells: list[dict[str, Any]] = field(default_factory=list)

    def step(self) -> RunStep:
        statuses = [c.get("status") for c in self.cells]
        if any(s in cell.OPEN_STATUSES for s in statuses):
            status, error = Status.IN_PROGRESS, None
        elif cell.FAILURE in statuses:
            failed = sum(s == cell.FAILURE for s in statuses)
            status, error = Status.ERROR, f"{failed} of {len(statuses)} tool call(s) failed."
        else:
            status, error = Status.OK, None
        return RunStep(
            id=self.id,
            label=self.label,
            action="tool",
            status=status,
            executor="agent",
            error=error,
            tool_call_ids=[c.get("id") or "" for c in self.cells],
        )


def turn_steps(rows: list[ThreadMessage], run: Run) -> list[RunStep]:
    turns: list[_Turn] = []
    answer: ThreadMessage | None = None
    for row in rows:
        if row.role == "assistant" and row.tool_calls:
            turns.append(_turn_of(row.tool_calls, len(turns) + 1))
        elif row.role == "tool" and row.tool_activity and turns:
            turns[-1].cells.append(row.tool_activity)
        elif row.role == "assistant" and row.content:
            answer = row
    steps = [turn.step() for turn in turns]
    completion = _completion(answer, run)
    return [*steps, completion] if completion is not None else steps


def _turn_of(tool_calls: list[dict[str, Any]], number: int) -> _Turn:
    names = list(dict.fromkeys((c.get("function") or {}).get("name", "") for c in tool_calls))
    if all(str(c.get("id", "")).startswith(PREFLIGHT_CALL_PREFIX) for c in tool_calls):
        return _Turn(id="preflight", label="Pre-flight tool calls: " + ", ".join(names))
    return _Turn(id=f"turn-{number}", label=f"Model turn {number}: " + ", ".join(names))


def _completion(answer: ThreadMessage | None, run: Run) -> RunStep | None:
    status = {
        RunStatus.COMPLETED.value: Status.OK,
        RunStatus.FAILED.value: Status.ERROR,
        RunStatus.CANCELLED.value: Status.SKIPPED if answer is None else Status.ERROR,
    }.get(run.status, Status.IN_PROGRESS)
    if answer is None and status in (Status.IN_PROGRESS, Status.OK):
        return None  # still thinking (or nothing was said)
    error = None
    if status in (Status.ERROR, Status.SKIPPED):
        error = run.error or ("Cancelled." if run.status == RunStatus.CANCELLED.value else None)
    return _model_step("completion", "Answer", status, error=error)


def _model_step(action: TraceAction, label: str, status: Status, **fields: Any) -> RunStep:
    """A step of the model's own (making the plan, the answer): it calls no tools.
    `fields`: its `error`, and `detail`."""
    return RunStep(
        id=action,
        label=label,
        action=action,
        status=status,
        executor="litellm",
        tool_call_ids=[],
        **fields,
    )


def trace_builtins(trace: RunTrace) -> dict[str, Any]:
    """The trace as plain JSON values (e.g. for `choices[0].message.metadata`)."""
    return msgspec.to_builtins(trace)
