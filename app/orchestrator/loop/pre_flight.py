"""A request's pre-flight `tool_calls` (run before the model, their results in its
context), as one turn of calls: each by name and arguments, or by name alone (its
no-argument action); a call that cannot be made fails with the reason, by index."""

from __future__ import annotations

import json
import secrets
from typing import Any

from app.orchestrator.door.llm import ModelTurn
from app.orchestrator.loop.context import LoopSpec, RunState
from app.tools.assembly import get_registry
from app.tools.base import ToolResult
from app.tools.runtime.executor import bare_call_arguments
from app.tools.runtime.toolsets import known_tool_names
from app.tools.validation import not_allowed


def pre_flight_turn(state: RunState, spec: LoopSpec) -> tuple[ModelTurn, dict[int, ToolResult]]:
    """The request's calls as a turn, and those refused (by index) with their result."""
    calls, refused = [], {}
    for index, item in enumerate(state.options["tool_calls"]):
        name = item if isinstance(item, str) else item.get("name", "")
        given = {} if isinstance(item, str) else item.get("args") or {}
        if _outside_allow_list(name, spec):
            args: dict[str, Any] | ToolResult = not_allowed(name, [*spec.allowed, *spec.delegates])
        elif isinstance(item, str):  # by name alone: its no-argument action, or an error
            args = bare_call_arguments(get_registry(), item)
        else:
            args = given
        if isinstance(args, ToolResult):
            refused[index], args = args, given
        calls.append(
            {
                "id": f"call_pre_{secrets.token_hex(6)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        )
    return ModelTurn(tool_calls=calls), refused


def _outside_allow_list(name: str, spec: LoopSpec) -> bool:
    """A tool that exists but that this run may not use (the request's `tools`, the
    agent's toolset): refused as not allowed, not as unknown."""
    if name in spec.allowed or name in spec.delegates:
        return False
    return name in known_tool_names() or name in spec.disabled_delegates
