"""Tools configured with arguments in the agent-types file (`tool_instances:`): two `web`
tools under their own names, each searching its own service with its own result cap."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml

from app import create_app
from app.settings import Settings
from app.tools.runtime.toolsets import AgentTypesError, load_agent_types
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.test_tools import register_test_tools, write_agent_types
from tests.tools.http_servers import LocalServer, Request, Response


def searx(label: str) -> LocalServer:
    """A SearXNG-like endpoint answering five hits named after `label`."""

    def answer(request: Request) -> Response:
        hits = [{"url": f"https://{label}.example/{i}", "title": f"{label} {i}", "content": ""}
                for i in range(5)]  # fmt: skip
        body = json.dumps({"results": hits, "number_of_results": 5}).encode()
        return Response(200, body, {"Content-Type": "application/json"})

    return LocalServer("127.0.0.1", answer)


@pytest.fixture(scope="module")
async def services() -> AsyncIterator[tuple[LocalServer, LocalServer]]:
    news, docs = searx("news"), searx("docs")
    await news.start()
    await docs.start()
    yield news, docs
    await news.stop()
    await docs.stop()


@pytest.fixture(scope="module")
def agent_types_file(
    tmp_path_factory: pytest.TempPathFactory, services: tuple[LocalServer, LocalServer]
) -> Iterator[Path]:
    register_test_tools()
    path = write_agent_types(tmp_path_factory.mktemp("instances"))
    data = yaml.safe_load(path.read_text())
    news, docs = services
    data["tool_instances"] = {
        "web_news": {"tool": "web", "description": "Search the news.",
                     "options": {"search_url": f"{news.origin}/search", "result_limit": 2}},
        "web_docs": {"tool": "web", "options": {"search_url": docs.origin, "result_limit": 4}},
    }  # fmt: skip
    data["agent_types"]["tester"]["tools"] += ["web_news", "web_docs"]
    path.write_text(yaml.safe_dump(data))
    yield path
    load_agent_types(None)


async def test_two_web_instances_search_their_own_services(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(
            Call("web_news", {"action": "search", "query": "launch"}),
            Call("web_docs", {"action": "search", "query": "launch"}),
        ),
        Text("Found both."),
    )
    thread_id, run = await api.turn("search both")
    assert run["status"] == "completed", run
    news, docs = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert news["name"] == "web_news" and news["status"] == "success", news
    assert [hit["title"] for hit in news["data"]["results"]] == ["news 0", "news 1"]
    assert [hit["title"] for hit in docs["data"]["results"]] == [f"docs {i}" for i in range(4)]
    offered = {t["function"]["name"]: t["function"] for t in api.llm.requests[0]["tools"]}
    assert offered["web_news"]["description"] == "Search the news."
    assert "web" not in offered  # the tester type names the instances only
    catalog = (await api.client.get("/api/tools", headers=api.headers)).json()["items"]
    listed = {t["name"]: t for t in catalog}
    assert listed["web_news"]["actions"] == ["search", "fetch"]
    assert "tester" in listed["web_docs"]["agent_types"]


def test_an_instance_with_bad_options_stops_startup_in_one_line(
    tmp_path: Path, settings: Settings
) -> None:
    path = write_agent_types(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["tool_instances"] = {"web_big": {"tool": "web", "options": {"result_limit": 50}}}
    path.write_text(yaml.safe_dump(data))
    try:
        with pytest.raises(AgentTypesError) as raised:
            create_app(dataclasses.replace(settings, agent_types_file=str(path)))
    finally:
        load_agent_types(None)
    assert str(raised.value) == (
        "tool instance 'web_big': web options: Expected `int` <= 10 - at `$.result_limit`"
    )
