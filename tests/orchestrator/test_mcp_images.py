"""An MCP tool returning an image: the cell shows it as an attachment of the user."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from app.tools.mcp.demo_server import RunningServer
from tests.attachments.s3_server import s3_server, seeing_model_storage  # noqa: F401
from tests.attachments.support import opened
from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.support.mcp_servers import build_test_app, running
from tests.support.test_tools import register_test_tools, write_agent_types


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[RunningServer]:
    with running(build_test_app()) as server:
        yield server


@pytest.fixture(scope="module")
def agent_types_file(tmp_path_factory: pytest.TempPathFactory, mcp_server: RunningServer) -> Path:
    register_test_tools()
    path = write_agent_types(tmp_path_factory.mktemp("mcp_image_agent_types"))
    data = yaml.safe_load(path.read_text())
    data["mcp_servers"] |= {"t": {"url": mcp_server.url, "tools": ["chart"]}}
    data["agent_types"]["tester"]["mcp_servers"] = ["t"]
    path.write_text(yaml.safe_dump(data))
    return path


async def test_an_image_result_becomes_an_attachment_shown_in_the_cell(
    api: OrchestratorApi,
) -> None:
    api.llm.script(ToolCalls(Call("t__chart", {"title": "sales"})), Text("There it is."))
    thread_id, run = await api.turn("chart my sales")
    assert run["status"] == "completed", run
    [cell] = [m["tool_activity"] for m in await api.tool_messages(thread_id)]
    assert cell["status"] == "success", cell
    [image] = cell["data"]["images"]
    assert image["kind"] == "image" and image["content_type"] == "image/png"
    assert (image["width"], image["height"]) == (64, 48) and image["blurhash"]
    assert cell["data"]["text"].startswith("Here is sales.")

    content = await _download(api, f"/api/attachments/{image['id']}/content")
    assert opened(content).size == (64, 48)
    assert (
        opened(await _download(api, f"/api/attachments/{image['id']}/thumbnail")).format == "JPEG"
    )
    # it belongs to the call's message: deleting the thread deletes it
    await api.client.delete(f"/api/threads/{thread_id}", headers=api.headers)
    gone = await api.client.get(f"/api/attachments/{image['id']}", headers=api.headers)
    assert gone.status_code == 404


async def _download(api: OrchestratorApi, url: str) -> bytes:
    """The bytes, from us or (object storage: a 307) from the signed URL, as a phone does."""
    answer = await api.client.get(url, headers=api.headers)
    if answer.status_code == 307:
        async with httpx.AsyncClient() as plain:
            answer = await plain.get(answer.headers["location"])
    assert answer.status_code == 200, answer.text
    return answer.content


def _tool_images(request: dict) -> list[dict]:
    """The parts of the user message that follows the tool results, if any."""
    messages = request["messages"]
    after = [i for i, m in enumerate(messages) if m["role"] == "tool"]
    if not after or after[-1] + 1 >= len(messages):
        return []
    follower = messages[after[-1] + 1]
    return follower["content"] if follower["role"] == "user" else []


async def test_a_model_that_reads_images_sees_the_tool_image(api: OrchestratorApi) -> None:
    """After the call, and again from the history on the next turn."""
    api.llm.script(
        ToolCalls(Call("t__chart", {"title": "sales"})), Text("A rising line."), Text("Yes.")
    )
    thread_id, run = await api.turn("chart my sales")
    assert run["status"] == "completed", run
    parts = _tool_images(api.llm.requests[1])
    assert [p["type"] for p in parts] == ["text", "image_url"], parts
    seen = opened(base64.b64decode(parts[1]["image_url"]["url"].split(",", 1)[1]))
    assert seen.size == (64, 48)
    response = await api.post(thread_id, "is it rising?")
    await api.wait_run(thread_id, response.json()["run"]["id"])
    replayed = [p["type"] for m in api.llm.requests[2]["messages"] if m["role"] == "user"
                and isinstance(m["content"], list) for p in m["content"]]  # fmt: skip
    assert replayed == ["text", "image_url"]


async def test_a_model_that_cannot_see_reads_a_line_naming_the_tool_image(
    api: OrchestratorApi,
) -> None:
    agent = await api.add_agent(name="blind", model="openai/text-only-model", agent_type="tester")
    api.llm.script(ToolCalls(Call("t__chart", {"title": "sales"})), Text("Made a chart."))
    thread_id = await api.new_thread(agent.id)
    _, run = await api.turn("chart my sales", thread_id)
    assert run["status"] == "completed", run
    parts = _tool_images(api.llm.requests[1])
    assert [p["type"] for p in parts] == ["text", "text"]
    assert "t__chart returned an image" in parts[1]["text"]
    assert "cannot see images" in parts[1]["text"]
