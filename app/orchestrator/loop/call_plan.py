"""What each tool call of a turn will be, decided before anything is written or run.

Planning validates a call once and gives it one immutable kind: `Refused` (fails at once
with a self-correcting result), `Duplicate` (the run already made this very call),
`Delegate` (a specialist answers), `AwaitsApproval`, `AwaitsDevice` (the phone runs it)
or `RunTool`. `tool_calls.py` executes each kind with one `match`; no phase fills in
fields later, so a call's kind is all there is to know about how it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.agents.delegates import is_delegate_name
from app.db.models import Agent
from app.orchestrator.door.types import StreamedCall
from app.orchestrator.loop import delegation
from app.orchestrator.loop.context import LoopSpec, RunState
from app.threads import activity as cell
from app.tools.assembly import get_registry
from app.tools.base import ToolResult
from app.tools.device import DeviceToolSpec, validate_device_call
from app.tools.runtime.executor import ToolCallCache, parse_call, parsed_input
from app.tools.runtime.toolsets import get_device_tool
from app.tools.validation import ParsedCall, decode_arguments


@dataclass(frozen=True, kw_only=True, slots=True)
class CallBase:
    """What every planned call has: the model's call and what its cell shows."""

    id: str
    name: str
    arguments: str | dict[str, Any]  # as the model gave them
    input: dict[str, Any] | None  # the cell's `input`
    user_facing: bool = True
    start_message: str | None = None  # the tool's own word for the running cell
    step_id: str | None = None  # the plan step this call executes (planner runs)


@dataclass(frozen=True, kw_only=True, slots=True)
class Refused(CallBase):
    """Fails at once: budget spent, an ask_* this loop may not make or asks nothing, a
    device call off its schema, a pre-flight call that cannot be made by its name alone."""

    result: ToolResult
    spent_budget: bool = False  # the loop stops after this turn


@dataclass(frozen=True, kw_only=True, slots=True)
class Duplicate(CallBase):
    """The run already made this very call (an earlier turn, or earlier in this one). The
    executor answers it from that call's result, waiting for it if it still runs; it
    stays the judge, since a concurrent write of the same tool may drop a kept read."""

    parsed: ParsedCall


@dataclass(frozen=True, kw_only=True, slots=True)
class Delegate(CallBase):
    """A specialist agent answers `question` in a loop of its own (delegation.py)."""

    agent: Agent = field(repr=False)
    question: str


@dataclass(frozen=True, kw_only=True, slots=True)
class AwaitsApproval(CallBase):
    """Runs once the user approves it; a denial or the expiry answers it instead."""

    parsed: ParsedCall
    # how long the user has: the agent type's (or tool's) `approval_wait`, else
    # APPROVAL_TTL_SECONDS; infinite: until answered
    wait_seconds: float


@dataclass(frozen=True, kw_only=True, slots=True)
class AwaitsDevice(CallBase):
    """The phone runs it: the cell waits until the app posts the result or it expires."""

    wait_seconds: float


@dataclass(frozen=True, kw_only=True, slots=True)
class RunTool(CallBase):
    """Runs now. An invalid call (`parsed` is its validation error) runs too: the executor
    fails it the way it fails every call, events and metrics included."""

    parsed: ParsedCall | ToolResult


PlannedCall = Refused | Duplicate | Delegate | AwaitsApproval | AwaitsDevice | RunTool


@dataclass(frozen=True, slots=True)
class TurnRules:
    """What bounds the calls of one loop: its spec, the run's budget, delegation's depth,
    and how long an approval waits unless the agent type says otherwise."""

    spec: LoopSpec
    budget: int
    approval_seconds: float
    max_depth: int = 1


def plan_turn(
    calls: list[dict[str, Any]],
    rules: TurnRules,
    state: RunState,
    *,
    step_id: str | None = None,
    refused: dict[int, ToolResult] | None = None,
) -> list[PlannedCall]:
    """One turn's calls, in order; `refused` (by index) fail with the given result.
    Every call within the budget counts against it, refused or not."""
    refused = refused or {}
    made_this_turn: set[tuple[str, bytes]] = set()  # identical siblings share one run
    planned: list[PlannedCall] = []
    for index, call in enumerate(calls):
        function = call.get("function") or {}
        name, arguments = str(function.get("name") or ""), function.get("arguments") or ""
        base = _Base(call["id"], name, arguments, step_id, rules.spec.delegated_by)
        spent = state.calls_made >= rules.budget
        state.calls_made += not spent
        if index in refused or spent:
            result = refused[index] if index in refused else _budget_spent(rules.budget)
            one: PlannedCall = Refused(
                **base.shown(), result=result, spent_budget=index not in refused
            )
        else:
            one = _plan_allowed(base, rules, state.cache, made_this_turn)
        if isinstance(one, RunTool) and not isinstance(one.parsed, ToolResult):
            made_this_turn.add(_cache_key(name, one.parsed))
        planned.append(one)
    return planned


@dataclass(frozen=True, slots=True)
class _Base:
    """The fields every kind shares, while the kind is being decided."""

    id: str
    name: str
    arguments: str | dict[str, Any]
    step_id: str | None
    marks: dict[str, Any] | None  # a specialist's calls say whom they answer

    def shown(self, input_: dict[str, Any] | None = None, **cell: Any) -> dict[str, Any]:
        """The kind's common fields; without `input_`, the arguments as they came (not a
        valid call of ours)."""
        if input_ is None:
            input_ = _input_of(self.arguments)
        if self.marks is not None:
            input_ = {**(input_ or {}), "delegated_by": self.marks}
        fields = {"id": self.id, "name": self.name, "arguments": self.arguments}
        return {**fields, "step_id": self.step_id, "input": input_, **cell}


def _plan_allowed(
    base: _Base, rules: TurnRules, cache: ToolCallCache, made_this_turn: set[tuple[str, bytes]]
) -> PlannedCall:
    """A call within the budget: by the name it calls, then by what its arguments say."""
    spec, name = rules.spec, base.name
    if name in spec.delegates:
        question = delegation.question_of(name, base.arguments)
        if isinstance(question, ToolResult):
            return Refused(**base.shown(), result=question)
        agent = spec.delegates[name]
        shown = base.shown(start_message=f"Asking {agent.name}…")
        return Delegate(**shown, agent=agent, question=question)
    if name in spec.allowed and (device := get_device_tool(name)) is not None:
        return _plan_device_call(base, device)
    if spec.config.delegation and is_delegate_name(name):
        return Refused(**base.shown(), result=delegation.refusal(name, spec, rules.max_depth))
    parsed = parse_call(
        get_registry(), name, base.arguments, allowed=spec.allowed, actions=spec.actions
    )
    if isinstance(parsed, ToolResult):
        return RunTool(**base.shown(), parsed=parsed)
    tool, action, params = parsed
    shown = base.shown(
        parsed_input(action, params),
        user_facing=tool.is_user_facing_call(action),
        start_message=tool.start_message(action, params),
    )
    if tool.needs_confirmation(action):  # asked again even when repeated, as always
        wait = spec.config.approval_wait_seconds(name, rules.approval_seconds)
        return AwaitsApproval(**shown, parsed=parsed, wait_seconds=wait)
    key = _cache_key(name, parsed)
    if cache.holds(key) or key in made_this_turn:
        return Duplicate(**shown, parsed=parsed)
    return RunTool(**shown, parsed=parsed)


def _plan_device_call(base: _Base, device: DeviceToolSpec) -> Refused | AwaitsDevice:
    """Valid arguments make the cell wait for the phone's answer; others fail at once
    (the model corrects itself)."""
    checked = validate_device_call(device, base.arguments)
    if isinstance(checked, ToolResult):
        return Refused(**base.shown(), result=checked)
    return AwaitsDevice(
        **base.shown(checked, user_facing=device.is_user_facing),
        wait_seconds=device.timeout_seconds,
    )


def tool_message_row(call: PlannedCall, run_id: Any) -> dict[str, Any]:
    """The new tool message of a planned call: in_progress, or waiting for the user."""
    approval_ttl = call.wait_seconds if isinstance(call, AwaitsApproval) else None
    device_ttl = call.wait_seconds if isinstance(call, AwaitsDevice) else None
    return {
        "role": "tool",
        "run_id": run_id,
        "tool_call_id": call.id,
        "is_user_facing": call.user_facing,
        "tool_activity": cell.started(
            call.id,
            call.name,
            call.input,
            approval_ttl=approval_ttl,
            device_ttl=device_ttl,
            display_message=call.start_message,
            step_id=call.step_id,
        ),
    }


def preparing_row(call: StreamedCall, spec: LoopSpec, run_id: Any) -> dict[str, Any]:
    """The new tool message of a call the model is still writing (`preparing`): nothing
    is planned yet (its arguments are incomplete); `tool_message_row`'s values replace
    these once it is. A specialist's call already says whom it answers."""
    marks = spec.delegated_by
    return {
        "role": "tool",
        "run_id": run_id,
        "tool_call_id": call.id,
        "is_user_facing": _user_facing(call.name),
        "tool_activity": cell.preparing(
            call.id,
            call.name,
            {"delegated_by": marks} if marks is not None else None,
            display_message=_preparing_message(call.name, spec),
        ),
    }


def _preparing_message(name: str, spec: LoopSpec) -> str:
    if (specialist := spec.delegates.get(name)) is not None:
        return f"Asking {specialist.name}…"
    if (tool := get_registry().get(name)) is not None:
        return tool.preparing_message()
    return f"Preparing {name}…"


def _user_facing(name: str) -> bool:
    """Whether the tool's cells are shown (an action's own say comes once it is known)."""
    if (device := get_device_tool(name)) is not None:
        return device.is_user_facing
    tool = get_registry().get(name)
    return tool.is_user_facing if tool is not None else True


def _budget_spent(budget: int) -> ToolResult:
    return ToolResult.failure(
        f"The tool-call budget of this run ({budget} calls) is used up; the call was not made.",
        "user_error",
        suggestion="Answer with what you have.",
    )


def _cache_key(name: str, parsed: ParsedCall) -> tuple[str, bytes]:
    """The executor's key: by the name called (a legacy name is a call of its own)."""
    _, action, params = parsed
    return ToolCallCache.key(name, action, params)


def _input_of(arguments: str | dict[str, Any]) -> dict[str, Any] | None:
    decoded = decode_arguments(arguments)
    return decoded if isinstance(decoded, dict) else None
