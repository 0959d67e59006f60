"""web.search against a local SearXNG-compatible JSON server."""

from __future__ import annotations

import dataclasses
import json
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.result_schemas import assert_matches_result_schema
from tests.tools.conftest import ToolHarness
from tests.tools.http_servers import Response


def searx(request) -> Response:
    query = parse_qs(urlsplit(request.target).query)
    if query.get("format") != ["json"]:
        return Response(400, b"format")
    q = query["q"][0]
    if q == "broken":
        return Response(200, b"<html>not json</html>", {"Content-Type": "text/html"})
    if q == "down":
        return Response(503, b"")
    results = [
        {"url": f"https://r{i}.example/", "title": f"R{i} {q}", "content": f"snippet {i}"}
        for i in range(15)
    ]
    body = {"query": q, "number_of_results": 1234, "results": results}
    return Response(200, json.dumps(body).encode(), {"Content-Type": "application/json"})


@pytest.fixture
async def searching(harness: ToolHarness, start_server) -> ToolHarness:
    server = await start_server("127.0.0.1", searx)
    harness.ctx.settings = dataclasses.replace(
        harness.ctx.settings, web_search_url=f"http://127.0.0.1:{server.port}"
    )
    harness.server = server
    return harness


async def test_search_returns_at_most_ten_results(searching: ToolHarness) -> None:
    result = await searching.call("web", {"action": "search", "query": "litestar"})
    assert result.ok, result
    assert result.data["type"] == "search_results" and result.data["query"] == "litestar"
    assert len(result.data["results"]) == 10
    assert result.data["results"][0] == {
        "url": "https://r0.example/",
        "title": "R0 litestar",
        "snippet": "snippet 0",
    }
    assert result.data["total_results"] == 1234
    assert searching.server.requests[0].path == "/search"


async def test_search_limit_per_run(searching: ToolHarness) -> None:
    for i in range(10):
        assert (await searching.call("web", {"action": "search", "query": f"q{i}"})).ok
    over = await searching.call("web", {"action": "search", "query": "one too many"})
    assert over.error_type == "user_error" and "limit reached" in over.error
    searching.new_run()
    assert (await searching.call("web", {"action": "search", "query": "fresh run"})).ok


async def test_repeated_search_is_a_duplicate_and_not_counted(searching: ToolHarness) -> None:
    await searching.call("web", {"action": "search", "query": "same"})
    again = await searching.call("web", {"action": "search", "query": "same"})
    assert again.duplicate and searching.server.hits == 1
    assert searching.ctx.state["web_search_count"] == 1


async def test_search_service_errors(searching: ToolHarness) -> None:
    broken = await searching.call("web", {"action": "search", "query": "broken"})
    assert broken.error_type == "system_error" and "Invalid response" in broken.error
    down = await searching.call("web", {"action": "search", "query": "down"})
    assert down.error_type == "system_error" and "503" in down.error


async def test_search_unreachable_and_unconfigured(harness: ToolHarness, start_server) -> None:
    server = await start_server("127.0.0.1")
    port = server.port
    await server.stop()
    harness.ctx.settings = dataclasses.replace(
        harness.ctx.settings, web_search_url=f"http://127.0.0.1:{port}/search"
    )
    unreachable = await harness.call("web", {"action": "search", "query": "x"})
    assert unreachable.error_type == "system_error" and "could not be reached" in unreachable.error
    harness.new_run()
    harness.ctx.settings = dataclasses.replace(
        harness.ctx.settings, web_search_url=None, llm_model="openai/gpt-4o"
    )
    harness.ctx.agent.model = None
    unconfigured = await harness.call("web", {"action": "search", "query": "x"})
    assert unconfigured.error_type == "system_error" and "not configured" in unconfigured.error


async def test_the_demo_model_searches_offline(harness: ToolHarness) -> None:
    """Without WEB_SEARCH_URL, an agent on the demo model gets results from a fixed index."""
    harness.ctx.settings = dataclasses.replace(
        harness.ctx.settings, web_search_url=None, llm_model="demo/tool-demo"
    )
    harness.ctx.agent.model = None
    found = await harness.call("web", {"action": "search", "query": "Swift OpenAPI"})
    assert found.ok and found.display_message == "1 demo result(s) (offline)"
    assert [r["title"] for r in found.data["results"]] == ["Swift OpenAPI Generator"]
    assert_matches_result_schema("web", "search", found.data)
    harness.new_run()
    nothing = await harness.call("web", {"action": "search", "query": "zzz"})
    assert [r["title"] for r in nothing.data["results"]] == ["SearXNG documentation"]


async def test_search_param_errors(harness: ToolHarness) -> None:
    missing = await harness.call("web", {"action": "search"})
    assert missing.details["required_param"] == "query"
    wrong = await harness.call("web", {"action": "search", "query": 42})
    assert wrong.details["errors"] == [{"field": "query", "message": "Expected `str`, got `int`"}]


async def test_search_results_match_the_published_schema(searching: ToolHarness) -> None:
    result = await searching.call("web", {"action": "search", "query": "schema"})
    assert_matches_result_schema("web", "search", result.data)
