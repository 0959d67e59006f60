"""MCP servers' tools as ours, against real servers (official SDK, Streamable HTTP, real
sockets): listing, namespacing, progress, structured results, failures, hangs, tokens."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import mcp.types as mcp_types
import msgspec
import pytest

from app.tools.base import ToolContext, ToolResult
from app.tools.events import RecordingToolEvents
from app.tools.mcp import catalog as catalog_module
from app.tools.mcp.catalog import McpCatalog
from app.tools.mcp.demo_server import RunningServer
from app.tools.mcp.naming import tool_name
from app.tools.mcp.tool import McpTool
from app.tools.mcp_config import McpServerSpec, declaration_problem
from app.tools.runtime.executor import ToolCallCache, execute_tool_call
from app.tools.runtime.registry import ToolRegistry
from tests.support.mcp_servers import TOKEN, bearer_required, build_test_app, running

ALLOWED = ["count", "echo", "fail", "hang", "grow", "extra"]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with running(build_test_app()) as found:
        yield found


@pytest.fixture(scope="module")
def guarded() -> Iterator[RunningServer]:
    with running(bearer_required(build_test_app())) as found:
        yield found


def spec_for(url: str, **changes: Any) -> McpServerSpec:
    values: dict[str, Any] = {"name": "t", "url": url, "tools": ALLOWED, "timeout_seconds": 5}
    return McpServerSpec(**{**values, **changes})


@pytest.fixture
async def catalog(server: RunningServer) -> AsyncIterator[McpCatalog]:
    found = McpCatalog({"t": spec_for(server.url, requires_confirmation=["echo"])})
    await found.refresh_all(wait=10)
    yield found
    await found.stop()


def context(progress: list[dict[str, Any]] | None = None) -> ToolContext:
    async def record(**report: Any) -> None:
        if progress is not None:
            progress.append(report)

    return ToolContext(
        user=None, agent=None, thread_id=uuid.uuid4(), run_id=uuid.uuid4(),  # type: ignore[arg-type]
        tool_call_id="call_1", session_factory=None, http=None, settings=None,  # type: ignore[arg-type]
        progress=record,
    )  # fmt: skip


async def call(
    catalog: McpCatalog, name: str, arguments: dict[str, Any], **kwargs: Any
) -> ToolResult:
    registry = ToolRegistry()
    registry.add_source(catalog)
    tool = registry.get(name)
    assert tool is not None, f"{name} not listed: {[t.name for t in catalog.tools()]}"
    allowed = [t.name for t in catalog.tools()]
    from app.tools.validation import validate_call

    parsed = validate_call(tool, msgspec.json.encode(arguments))
    return await execute_tool_call(
        registry,
        kwargs.pop("ctx", None) or context(),
        name,
        msgspec.json.encode(arguments),
        allowed=allowed,
        parsed=parsed,
        **kwargs,
    )


def test_names_are_namespaced_and_acceptable_to_providers() -> None:
    assert tool_name("github", "search_issues") == "github__search_issues"
    odd = tool_name("srv", "files/read.v2")
    long = tool_name("srv", "x" * 100)
    for name in (odd, long, tool_name("srv", "x" * 99)):
        assert len(name) <= 64 and all(c.isalnum() or c in "_-" for c in name)
    assert odd != tool_name("srv", "files_read_v2")  # a substitution never collides
    assert long != tool_name("srv", "x" * 99)


def test_declarations_are_checked() -> None:
    assert declaration_problem(McpServerSpec(name="ok", url="https://x.example/mcp")) is None
    assert "name" in (declaration_problem(McpServerSpec(name="a_b", url="https://x/")) or "")
    assert "url" in (declaration_problem(McpServerSpec(name="a", url="ftp://x/")) or "")
    headers = {"Authorization": "Bearer abc"}  # a value where a variable name belongs
    bad = declaration_problem(McpServerSpec(name="a", url="https://x/", headers=headers))
    assert "environment variable" in (bad or "")


async def test_tools_join_with_schema_description_and_flags(catalog: McpCatalog) -> None:
    names = catalog.names_for("t")
    assert sorted(names) == ["t__count", "t__echo", "t__fail", "t__grow", "t__hang"]
    assert "t__secret_only" not in names  # not on the allow-list
    tool = catalog.get("t__count")
    assert isinstance(tool, McpTool) and tool.executor == "mcp" and tool.mcp_server == "t"
    definition = tool.function_definition()["function"]
    assert definition["parameters"]["properties"]["steps"]["type"] == "integer"
    assert "Count up to" in definition["description"]
    assert catalog.get("t__echo").needs_confirmation("echo")  # type: ignore[union-attr]
    assert not tool.needs_confirmation("count")


async def test_progress_reports_and_structured_content(catalog: McpCatalog) -> None:
    progress: list[dict[str, Any]] = []
    events = RecordingToolEvents()
    result = await call(catalog, "t__count", {"steps": 3}, ctx=context(progress), events=events)
    assert result.ok, result
    assert [p["display_message"] for p in progress] == ["Step 1 of 3", "Step 2 of 3", "Step 3 of 3"]
    assert progress[-1]["data"] == {"type": "progress", "progress": 3, "total": 3}
    assert events.kinds() == ["start", "progress", "progress", "progress", "end"]
    assert result.data is not None
    assert result.data["type"] == "mcp_result" and result.data["server"] == "t"
    assert result.data["tool"] == "count"
    assert result.data["structured_content"] == {"steps": 3, "note": "counted to 3"}
    assert result.preview == ["steps: 3", "note: counted to 3"]
    told = msgspec.json.decode(result.to_model_content())
    assert told["ok"] is True and "counted to 3" in told["text"]
    assert "structured_content" not in told  # the model reads the text once


async def test_text_results_are_what_the_model_reads(catalog: McpCatalog) -> None:
    result = await call(catalog, "t__echo", {"text": "hello"})
    assert result.ok and result.preview == ["echo: hello"]
    assert msgspec.json.decode(result.to_model_content())["text"] == "echo: hello"


async def test_is_error_is_a_failure_the_model_can_correct(catalog: McpCatalog) -> None:
    result = await call(catalog, "t__fail", {"reason": "no cheese"})
    assert not result.ok and result.error_type == "user_error"
    assert "cannot do that: no cheese" in (result.error or "")
    assert result.suggestion


async def test_arguments_off_the_schema_never_reach_the_server(catalog: McpCatalog) -> None:
    result = await call(catalog, "t__count", {"steps": "many"})
    assert result.error_type == "validation_error"
    assert result.details and result.details["errors"][0]["field"] == "steps"


async def test_a_hanging_call_times_out(server: RunningServer) -> None:
    hanging = McpCatalog({"t": spec_for(server.url, timeout_seconds=0.5)})
    await hanging.refresh_all(wait=10)
    started = asyncio.get_running_loop().time()
    result = await call(hanging, "t__hang", {})
    assert result.error_type == "timeout"
    assert asyncio.get_running_loop().time() - started < 3


async def test_a_cancelled_call_raises_to_its_caller(catalog: McpCatalog) -> None:
    task = asyncio.create_task(call(catalog, "t__hang", {}))
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_duplicate_call_is_answered_from_the_first(catalog: McpCatalog) -> None:
    cache = ToolCallCache()
    first = await call(catalog, "t__echo", {"text": "once"}, cache=cache)
    second = await call(catalog, "t__echo", {"text": "once"}, cache=cache)
    assert first.ok and second.duplicate


async def test_an_unreachable_server_leaves_its_tools_out_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    down = McpCatalog({"down": spec_for("http://127.0.0.1:9/mcp", name="down")})
    with caplog.at_level(logging.WARNING, logger="app.tools.mcp"):
        await down.refresh_all(wait=10)
        await down.refresh("down")
    assert down.tools() == [] and down.names_for("down") == []
    lines = [r for r in caplog.records if "left out" in r.getMessage()]
    assert len(lines) == 1 and "cannot be reached" in lines[0].getMessage()


async def test_a_server_gone_mid_run_fails_the_call_as_a_system_error(
    server: RunningServer,
) -> None:
    spec = spec_for("http://127.0.0.1:9/mcp")
    remote = mcp_types.Tool(name="echo", input_schema={"type": "object"})
    result = await McpTool(spec, remote).run(context(), "echo", {})  # type: ignore[arg-type]
    assert result.error_type == "system_error" and "cannot be reached" in (result.error or "")


async def test_a_bearer_token_from_the_environment_is_sent(
    guarded: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = spec_for(guarded.url, headers={"Authorization": "TEST_MCP_AUTH"})
    missing = McpCatalog({"t": spec})
    await missing.refresh_all(wait=10)
    assert missing.tools() == []  # the variable is unset: left out

    monkeypatch.setenv("TEST_MCP_AUTH", f"Bearer {TOKEN}")
    authorised = McpCatalog({"t": spec})
    await authorised.refresh_all(wait=10)
    assert "t__echo" in authorised.names_for("t")
    assert (await call(authorised, "t__echo", {"text": "hi"})).ok

    monkeypatch.setenv("TEST_MCP_AUTH", "Bearer revoked")
    refused = await call(authorised, "t__echo", {"text": "hi"})
    assert refused.error_type == "permission_error"
    assert "needs to be renewed" in (refused.error or "")


async def test_a_changed_list_is_picked_up(server: RunningServer) -> None:
    growing = McpCatalog({"t": spec_for(server.url)})
    await growing.refresh_all(wait=10)
    growing.start()
    try:
        assert "t__extra" not in growing.names_for("t")
        generation = growing.generation
        await asyncio.wait_for(growing.servers["t"].listening.wait(), 10)
        growing.changed.clear()
        assert (await call(growing, "t__grow", {})).ok
        await asyncio.wait_for(growing.changed.wait(), 10)
        assert "t__extra" in growing.names_for("t")
        assert growing.generation > generation
    finally:
        await growing.stop()


async def test_shutdown_goes_on_when_a_listener_holds_its_cancel(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The MCP client shields parts of its cleanup; one that waits on a silent server must
    not hold the app's shutdown. Here the connection holds its first cancel outright."""
    holding: list[asyncio.Task[Any]] = []
    connecting = asyncio.Event()

    @contextlib.asynccontextmanager
    async def connect_holding_its_cancel(*_args: Any, **_kwargs: Any) -> AsyncIterator[Any]:
        holding.append(asyncio.current_task())  # type: ignore[arg-type]
        connecting.set()
        try:
            await asyncio.Event().wait()  # connecting to a server that never answers
        except asyncio.CancelledError:
            await asyncio.Event().wait()  # a shielded cleanup on it: only a second cancel ends
        yield None

    monkeypatch.setattr(catalog_module, "connect", connect_holding_its_cancel)
    monkeypatch.setattr(catalog_module, "STOP_SECONDS", 0.2)
    stubborn = McpCatalog({"t": spec_for(server.url)})
    stubborn.start()
    await asyncio.wait_for(connecting.wait(), 10)
    caplog.set_level(logging.WARNING, logger="app.tools.mcp.catalog")
    try:
        await asyncio.wait_for(stubborn.stop(), 30)  # without the bound: forever
        assert "background task(s) still ending" in caplog.text
    finally:
        for task in holding:
            task.cancel()
        await asyncio.gather(*holding, return_exceptions=True)
