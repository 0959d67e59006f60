"""Planning gives each call of a turn one kind, before anything is written or run."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError
from types import SimpleNamespace
from typing import Any

import pytest

from app.db.models import Agent
from app.orchestrator.loop.call_plan import (
    AwaitsApproval,
    Delegate,
    Duplicate,
    PlannedCall,
    Refused,
    RunTool,
    TurnRules,
    plan_turn,
)
from app.orchestrator.loop.context import LoopSpec, RunState
from app.tools.assembly import get_registry
from app.tools.base import ToolResult
from app.tools.runtime.executor import ToolCallCache
from app.tools.runtime.toolsets import AgentTypeConfig, load_agent_types


@pytest.fixture(autouse=True)
def _default_agent_types() -> None:
    load_agent_types(None, tool_names=get_registry().names)  # as create_app does


SAVE = {"action": "save", "content": "likes tea"}
SEARCH = {"action": "search", "query": "tea"}


def _calls(*calls: tuple[str, Any]) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": args}}
        for n, (name, args) in enumerate(calls)
    ]


def _state() -> RunState:
    return RunState(run=SimpleNamespace(id=1), user=SimpleNamespace(id=1), options={})  # type: ignore[arg-type]


def _plan(
    *calls: tuple[str, Any], state: RunState | None = None, budget: int = 8, **rules: Any
) -> list[PlannedCall]:
    spec = LoopSpec(
        agent=Agent(name="assistant"),
        config=AgentTypeConfig(name="t", tools=["memory"], delegation=True),
        allowed=["memory"],
        delegates={"ask_cook": Agent(name="cook")},
    )
    return plan_turn(
        _calls(*calls), TurnRules(spec, budget, approval_seconds=600.0), state or _state(), **rules
    )


def test_each_case_has_its_kind() -> None:
    forget = {"action": "forget", "key": "tea"}
    planned = _plan(
        ("memory", json.dumps(SAVE)),
        ("memory", json.dumps(forget)),
        ("ask_cook", json.dumps({"message": "soup?"})),
        ("ask_cook", "{}"),
        ("ask_baker", "{}"),
        ("memory", "{not json"),
    )
    kinds = [type(call) for call in planned]
    assert kinds == [RunTool, AwaitsApproval, Delegate, Refused, Refused, RunTool]
    assert planned[0].input == SAVE and planned[2].question == "soup?"  # type: ignore[union-attr]
    assert isinstance(planned[5], RunTool) and isinstance(planned[5].parsed, ToolResult)


async def test_an_identical_call_in_the_turn_or_kept_from_before_is_a_duplicate() -> None:
    state = _state()
    first, again = _plan(("memory", json.dumps(SEARCH)), ("memory", SEARCH), state=state)
    assert isinstance(first, RunTool) and isinstance(again, Duplicate)
    _, action, params = again.parsed
    state.cache.claim(ToolCallCache.key("memory", action, params))  # the first one ran
    [later] = _plan(("memory", json.dumps(SEARCH)), state=state)
    assert isinstance(later, Duplicate)


def test_a_spent_budget_refuses_and_stops_while_a_preflight_refusal_does_not() -> None:
    state = _state()
    refusal = ToolResult.failure("named alone", "validation_error")
    search = ("memory", json.dumps(SEARCH))
    first, second, third = _plan(
        search, search, search, state=state, budget=2, refused={1: refusal}
    )
    assert isinstance(second, Refused) and second.result is refusal and not second.spent_budget
    assert isinstance(third, Refused) and third.spent_budget and state.calls_made == 2
    assert isinstance(first, RunTool)


def test_planned_calls_are_immutable() -> None:
    [call] = _plan(("memory", json.dumps(SAVE)))
    with pytest.raises(FrozenInstanceError):
        call.name = "other"  # type: ignore[misc]
