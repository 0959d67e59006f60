"""Validation, errors, duplicates, timeouts and events of the executor, field by field."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar, Literal

import msgspec
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Task
from app.tools import assembly
from app.tools.base import Tool, ToolContext, ToolResult
from app.tools.results import ToolError
from app.tools.runtime.executor import SAFE_SYSTEM_ERROR, parse_call, parsed_input
from app.tools.runtime.registry import ToolRegistry
from app.tools.validation import check_params
from tests.tools.conftest import ToolHarness


async def test_unknown_tool_lists_available_tools(harness: ToolHarness) -> None:
    result = await harness.call("calendar", {"action": "list"})
    assert not result.ok
    assert result.error_type == "validation_error"
    assert "calendar" in (result.error or "")
    assert result.details["available_tools"] == [
        "tasks",
        "web",
        "memory",
        "self_authoring",
        "schedules",
    ]


async def test_tool_outside_the_allowed_set_is_unknown(harness: ToolHarness) -> None:
    harness.allowed = ["web"]
    result = await harness.call("tasks", {"action": "list"})
    assert result.error_type == "validation_error"
    assert result.details["available_tools"] == ["web"]


@pytest.mark.parametrize("raw", ["{not json", '"a string"', "[1, 2]", "{'action': 'list'}"])
async def test_arguments_that_are_not_a_json_object(harness: ToolHarness, raw: str) -> None:
    result = await harness.call("tasks", raw)
    assert result.error_type == "validation_error"
    assert result.suggestion and "JSON object" in result.suggestion


async def test_missing_action_is_required_param(harness: ToolHarness) -> None:
    result = await harness.call("tasks", {"title": "x"})
    assert result.error_type == "validation_error"
    assert result.details["required_param"] == "action"
    assert result.details["allowed_actions"] == ["create", "update", "complete", "list"]


async def test_unknown_action_lists_allowed_actions(harness: ToolHarness) -> None:
    result = await harness.call("web", '{"action": "crawl", "query": "x"}')
    assert result.error == "Invalid action 'crawl' for web."
    assert result.details == {"allowed_actions": ["search", "fetch"]}


async def test_missing_parameter_gives_required_param_and_example(harness: ToolHarness) -> None:
    result = await harness.call("web", {"action": "search"})
    assert result.error == "query is required for search action."
    assert result.details["required_param"] == "query"
    assert result.details["action"] == "search"
    assert result.details["example"] == {"action": "search", "query": "litestar websockets"}


async def test_null_counts_as_missing(harness: ToolHarness) -> None:
    result = await harness.call("tasks", {"action": "create", "title": None, "notes": None})
    assert result.details["required_param"] == "title"


async def test_wrong_types_are_reported_field_by_field(harness: ToolHarness) -> None:
    result = await harness.call(
        "tasks",
        {"action": "list", "status": "someday", "limit": "5"},
    )
    assert result.error_type == "validation_error"
    assert result.details["errors"] == [
        {
            "field": "status",
            "message": "Invalid enum value 'someday'",
            "allowed_values": ["active", "completed", "all"],
        },
        {"field": "limit", "message": "Expected `int | null`, got `str`"},
    ]
    assert result.details["allowed_params"] == ["status", "limit"]
    assert "limit" in (result.error or "") and "status" in (result.error or "")


async def test_constraints_and_nested_arrays(harness: ToolHarness) -> None:
    result = await harness.call(
        "memory", {"action": "save", "content": "x", "tags": ["ok", 7, ""], "limit": 3}
    )
    fields = [e["field"] for e in result.details["errors"]]
    assert "tags[1]" in fields  # the path inside the array is kept
    assert "limit" in fields  # a parameter of another action
    messages = {e["field"]: e["message"] for e in result.details["errors"]}
    assert messages["limit"] == "not used by save"


async def test_unknown_parameter(harness: ToolHarness) -> None:
    result = await harness.call("tasks", {"action": "create", "title": "x", "owner_id": "u"})
    assert result.details["errors"] == [{"field": "owner_id", "message": "unknown parameter"}]


async def test_validation_failures_go_through_events(harness: ToolHarness) -> None:
    await harness.call("tasks", {"action": "nope"})
    assert harness.events.kinds() == ["start", "error"]


def test_parse_call_returns_the_parsed_struct() -> None:
    tool, action, params = parse_call(
        assembly.get_registry(), "tasks", '{"action":"create","title":"Buy milk"}'
    )
    assert (tool.name, action, params.title) == ("tasks", "create", "Buy milk")
    assert parsed_input(action, params) == {"action": "create", "title": "Buy milk"}


class _Params(msgspec.Struct, forbid_unknown_fields=True):
    mode: str


class _FlakyTool(Tool):
    name = "flaky"
    description = "test tool"
    actions: ClassVar[dict[str, type[msgspec.Struct]]] = {"go": _Params}
    timeout_seconds = 0.05
    calls: ClassVar[list[str]] = []

    async def go_action(self, ctx: ToolContext, params: _Params) -> Any:
        self.calls.append(params.mode)
        if params.mode == "boom":
            raise RuntimeError("password=hunter2 at db.internal.example:5432")
        if params.mode == "hang":
            await asyncio.Event().wait()
        if params.mode == "bad":
            return {"not": "a ToolResult"}
        await ctx.progress(display_message="working", data={"step": 1})
        return ToolResult.success({"mode": params.mode})


@pytest.fixture
def flaky(monkeypatch: pytest.MonkeyPatch, harness: ToolHarness) -> ToolHarness:
    reg = ToolRegistry([*assembly.builtin_tools(), _FlakyTool()])
    monkeypatch.setattr(assembly, "get_registry", lambda: reg)
    _FlakyTool.calls.clear()
    harness.allowed = [*harness.allowed, "flaky"]
    return harness


async def test_exception_becomes_safe_system_error(flaky: ToolHarness) -> None:
    result = await flaky.call("flaky", {"action": "go", "mode": "boom"})
    assert result.error_type == "system_error"
    assert result.error == SAFE_SYSTEM_ERROR
    content = result.to_model_content()
    assert "hunter2" not in content and "internal" not in content and "Traceback" not in content


async def test_wrong_return_type_is_system_error(flaky: ToolHarness) -> None:
    result = await flaky.call("flaky", {"action": "go", "mode": "bad"})
    assert result.error_type == "system_error"


async def test_timeout(flaky: ToolHarness) -> None:
    result = await flaky.call("flaky", {"action": "go", "mode": "hang"})
    assert result.error_type == "timeout"
    assert flaky.events.kinds() == ["start", "error"]


async def test_progress_goes_through_events_and_context(flaky: ToolHarness) -> None:
    result = await flaky.call("flaky", {"action": "go", "mode": "ok"})
    assert result.ok and result.data == {"mode": "ok"}
    assert flaky.events.kinds() == ["start", "progress", "end"]
    assert flaky.progress.calls == [{"display_message": "working", "data": {"step": 1}}]
    start_call = flaky.events.events[0][1]
    assert start_call.input == {"action": "go", "mode": "ok"}


async def test_identical_call_is_a_duplicate_without_second_run(flaky: ToolHarness) -> None:
    first = await flaky.call("flaky", {"action": "go", "mode": "ok"})
    second = await flaky.call("flaky", '{"mode": "ok", "action": "go"}')
    assert not first.duplicate and second.duplicate
    assert second.data == {**first.data, "duplicate_of": flaky.ctx.tool_call_id}
    assert second.display_message.startswith(f"Duplicate of {flaky.ctx.tool_call_id}")
    assert second.preview[0].startswith(f"Duplicate of {flaky.ctx.tool_call_id}")
    assert _FlakyTool.calls == ["ok"]
    assert '"duplicate":true' in second.to_model_content()


async def test_concurrent_identical_calls_run_once(flaky: ToolHarness) -> None:
    results = await asyncio.gather(
        *(flaky.call("flaky", {"action": "go", "mode": "ok"}) for _ in range(3))
    )
    assert _FlakyTool.calls == ["ok"]
    assert sorted(r.duplicate for r in results) == [False, True, True]


async def test_failed_system_errors_are_not_cached(flaky: ToolHarness) -> None:
    await flaky.call("flaky", {"action": "go", "mode": "boom"})
    await flaky.call("flaky", {"action": "go", "mode": "boom"})
    assert _FlakyTool.calls == ["boom", "boom"]


async def test_new_run_has_a_fresh_cache(flaky: ToolHarness) -> None:
    await flaky.call("flaky", {"action": "go", "mode": "ok"})
    flaky.new_run()
    again = await flaky.call("flaky", {"action": "go", "mode": "ok"})
    assert not again.duplicate and _FlakyTool.calls == ["ok", "ok"]


def test_every_schema_is_strict_friendly() -> None:
    """Server tools' schemas (device tools' are the operator's, declared in YAML)."""
    for tool in assembly.get_registry().catalog():
        if tool.executor == "device":
            continue
        schema = tool.parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert schema["required"] == list(schema["properties"])
        assert schema["properties"]["action"]["enum"] == tool.actions


async def test_the_transaction_commits_on_success_and_rolls_back_on_error(
    harness: ToolHarness, db: AsyncSession
) -> None:
    """ctx.transaction() is the call's unit of work: tools never commit themselves."""
    user_id = harness.ctx.user.id
    async with harness.ctx.transaction() as session:
        session.add(Task(owner_id=user_id, title="kept", status="active"))
    with pytest.raises(RuntimeError):
        async with harness.ctx.transaction() as session:
            session.add(Task(owner_id=user_id, title="dropped", status="active"))
            await session.flush()
            raise RuntimeError("the tool failed after writing")
    titles = list(await db.scalars(select(Task.title).where(Task.owner_id == user_id)))
    assert titles == ["kept"]


def test_allowed_values_are_text_of_one_type_whatever_the_literal() -> None:
    """A number's allowed values mixed with text decoded in no Swift client: each is text."""

    class LevelParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
        level: Literal[1, 2, "max"]

    class LevelTool(Tool):
        name = "test_level"
        description = "Sets a level."
        actions: ClassVar = {"set": LevelParams}

    refused = check_params(LevelTool(), "set", {"level": 7})
    assert isinstance(refused, ToolResult) and refused.details is not None
    [error] = refused.details["errors"]
    assert error["allowed_values"] == ["1", "2", "max"]
    # what the phone receives decodes as the published type
    cell = {"type": "error", "error": refused.error, "error_type": refused.error_type}
    data = msgspec.convert({**refused.details, **cell}, ToolError)
    assert data.errors and data.errors[0].allowed_values == ["1", "2", "max"]
    assert data.allowed_params == ["level"] and data.action == "set"
