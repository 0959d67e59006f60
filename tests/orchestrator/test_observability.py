"""A real turn against the fake model moves the metrics at /metrics and leaves spans for
its model and tool calls (OpenTelemetry on, spans kept in memory)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.observability import tracing
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Error, Text, ToolCalls
from tests.support.metrics import Scrape

MODEL = "openai/fake-model"


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with pytest.MonkeyPatch.context() as patch:
        # What OTEL_ENABLED exports to: here memory instead of an OTLP endpoint.
        patch.setattr(tracing, "default_provider", lambda: provider)
        yield exporter


@pytest.fixture(scope="module")
def settings_overrides(spans: InMemorySpanExporter) -> dict:
    # generous: the first model call of a process imports half of litellm
    return {"otel_enabled": True, "llm_timeout_seconds": 30.0}


async def turn(api: OrchestratorApi) -> dict:
    thread_id = await api.new_thread()
    response = await api.post(thread_id, "go")
    assert response.status_code == 202, response.text
    return await api.wait_run(thread_id, response.json()["run"]["id"], timeout=60)


async def scrape(api: OrchestratorApi) -> Scrape:
    response = await api.client.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    return Scrape(response.text)


async def test_a_turn_with_a_tool_call_moves_the_metrics(api: OrchestratorApi) -> None:
    before = await scrape(api)
    api.llm.script(ToolCalls(Call("test_echo", {"action": "echo", "text": "x"})), Text("Done."))
    run = await turn(api)
    assert run["status"] == "completed", run
    moved = await scrape(api) - before

    assert moved.value("toolcells_runs_total", status="completed") == 1
    assert moved.value("toolcells_turn_seconds_count", status="completed") == 1
    assert moved.value("toolcells_turn_seconds_sum", status="completed") > 0
    assert moved.value("toolcells_tool_calls_total", tool="test_echo", status="success") == 1
    assert moved.value("toolcells_model_call_seconds_count", model=MODEL, outcome="ok") == 2
    assert moved.value("toolcells_model_errors_total") == 0
    # Litestar's request metrics, by route template (not one series per thread id)
    path = "/api/threads/{thread_id}/messages"
    assert moved.value("toolcells_requests_total", method="POST", path=path) == 1


async def test_failed_tool_calls_and_model_errors_are_counted_by_kind(
    api: OrchestratorApi,
) -> None:
    before = await scrape(api)
    api.llm.script(
        ToolCalls(Call("test_echo", {"action": "no_such_action"})),
        Error(401, "bad key"),
    )
    run = await turn(api)
    assert run["status"] == "failed", run
    moved = await scrape(api) - before

    assert moved.value("toolcells_runs_total", status="failed") == 1
    assert moved.value("toolcells_runs_total", status="completed") == 0
    assert (
        moved.value("toolcells_tool_calls_total", tool="test_echo", status="validation_error") == 1
    )
    assert moved.value("toolcells_model_errors_total", kind="auth") == 1
    assert moved.value("toolcells_model_call_seconds_count", model=MODEL, outcome="error") == 1


async def test_model_and_tool_calls_are_spans(
    api: OrchestratorApi, spans: InMemorySpanExporter
) -> None:
    spans.clear()
    api.llm.script(ToolCalls(Call("test_echo", {"action": "echo", "text": "x"})), Text("Done."))
    run = await turn(api)
    assert run["status"] == "completed", run

    finished = spans.get_finished_spans()
    by_name: dict[str, list] = {}
    for span in finished:
        by_name.setdefault(span.name, []).append(span)
    model_spans = by_name.get(f"chat {MODEL}", [])
    assert len(model_spans) == 2, sorted(by_name)
    assert model_spans[0].attributes["gen_ai.request.model"] == MODEL
    (tool_span,) = by_name["execute_tool test_echo.echo"]
    assert tool_span.attributes["gen_ai.tool.name"] == "test_echo"
    assert tool_span.attributes["action"] == "echo"
    # Litestar's OpenTelemetry plugin traces the requests themselves
    assert any(name.startswith("POST /api/threads") for name in by_name), sorted(by_name)
