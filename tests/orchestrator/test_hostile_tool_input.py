"""Hostile tool arguments and tool output from the outside world, on both dialects.

One bad call becomes one failed cell with a self-correcting error; the other calls of the
turn still run, the run completes, and what is stored is storable on PostgreSQL (jsonb and
text refuse NUL) as well as SQLite.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from tests.orchestrator.support import OrchestratorApi
from tests.support.fake_llm import Call, Text, ToolCalls
from tests.tools.http_servers import LocalServer, Request, Response

DEEP = 10_000


@pytest.fixture(scope="module")
def settings_overrides() -> dict:
    return {"web_fetch_allow_hosts": ("127.0.0.1",)}  # the local page server below


@pytest.fixture
async def page_server() -> AsyncIterator[LocalServer]:
    def page(_: Request) -> Response:
        body = b"Before\x00after, and a NUL in the middle."
        return Response(200, body, {"Content-Type": "text/plain; charset=utf-8"})

    server = LocalServer("127.0.0.1", page)
    await server.start()
    yield server
    await server.stop()


async def _turn(
    api: OrchestratorApi, content: str, thread_id: str | None = None
) -> tuple[str, dict]:
    """api.turn with a longer wait: the first model call of a session (litellm warming up)
    can take most of the default 10 s on a busy machine."""
    thread_id = thread_id or await api.new_thread()
    response = await api.post(thread_id, content)
    assert response.status_code == 202, response.text
    return thread_id, await api.wait_run(thread_id, response.json()["run"]["id"], timeout=60)


def _tool_results(api: OrchestratorApi) -> list[dict]:
    return [
        json.loads(m["content"]) for m in api.llm.requests[1]["messages"] if m["role"] == "tool"
    ]


async def test_deeply_nested_arguments_fail_one_call_only(api: OrchestratorApi) -> None:
    nested = '{"action": "echo", "text": ' + "[" * DEEP + "]" * DEEP + "}"
    api.llm.script(
        ToolCalls(Call("test_echo", nested), Call("test_echo", {"action": "echo", "text": "ok"})),
        Text("Done."),
    )
    thread_id, run = await _turn(api, "go")
    assert run["status"] == "completed", run
    hostile, fine = [t["tool_activity"] for t in await api.tool_messages(thread_id)]
    assert (hostile["status"], hostile["error_type"]) == ("failure", "validation_error")
    assert "nested" in hostile["error"]
    assert fine["status"] == "success" and fine["data"] == {"text": "ok"}
    to_model = _tool_results(api)
    assert to_model[0]["error_type"] == "validation_error" and "suggestion" in to_model[0]


async def test_a_nul_character_in_arguments_fails_one_call_only(api: OrchestratorApi) -> None:
    api.llm.script(
        ToolCalls(
            Call("test_echo", {"action": "echo", "text": "a\u0000b"}),
            Call("tasks", {"action": "create", "title": "Still created"}),
        ),
        Text("Done."),
    )
    thread_id, run = await _turn(api, "go")
    assert run["status"] == "completed", run
    hostile, fine = [t["tool_activity"] for t in await api.tool_messages(thread_id)]
    assert (hostile["status"], hostile["error_type"]) == ("failure", "validation_error")
    assert "NUL" in hostile["error"] and "text" in hostile["error"]
    assert "\x00" not in json.dumps(hostile["input"], ensure_ascii=False)
    assert hostile["input"]["action"] == "echo"
    assert fine["status"] == "success" and fine["data"]["task_title"] == "Still created"


async def test_a_nul_character_in_a_fetched_page_is_stored(
    api: OrchestratorApi, page_server: LocalServer
) -> None:
    assistant = await api.add_agent(name="Web reader", agent_type="assistant")
    thread_id = await api.new_thread(assistant.id)
    api.llm.script(
        ToolCalls(
            Call("web", {"action": "fetch", "url": f"{page_server.origin}/page.txt"}),
            Call("tasks", {"action": "create", "title": "Read it"}),
        ),
        Text("Done."),
    )
    _, run = await _turn(api, "read it", thread_id)
    assert run["status"] == "completed", run
    fetched, created = [t["tool_activity"] for t in await api.tool_messages(thread_id)]
    assert fetched["status"] == "success", fetched
    assert fetched["data"]["content"].startswith("Before") and "after" in fetched["data"]["content"]
    assert "\x00" not in fetched["data"]["content"]
    assert created["status"] == "success"
    assert "\\u0000" not in _tool_results(api)[0]["content"]
