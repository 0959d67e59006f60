"""Streamed tool output over /api/ws: every chunk live (`tool_output`, with offsets), the
cell's `data.output` written coalesced and capped, so a late subscriber sees it so far.

A real server (uvicorn, runner on) whose model is the fake OpenAI server; the tool is
`test_stream` (tests/support/test_tools.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

import app.orchestrator.worker  # noqa: F401  (imports litellm now, not in the server's startup)
from app.tools.runtime.toolsets import load_agent_types
from tests.conftest import ApiUser
from tests.realtime.conftest import ServerFactory, new_thread
from tests.realtime.support import Server, WsClient
from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls
from tests.support.test_tools import StreamTool, register_test_tools, write_agent_types
from tests.tools.http_servers import LocalServer, html


@pytest.fixture
async def fake() -> AsyncIterator[FakeLLM]:
    async with FakeLLM() as server:
        yield server


@pytest.fixture
async def tester(alice: ApiUser, db: AsyncSession) -> ApiUser:
    alice.agent.agent_type = "tester"
    await db.commit()
    return alice


@pytest.fixture
def running(start_server: ServerFactory, fake: FakeLLM, tmp_path: Path) -> Any:
    register_test_tools()
    agent_types = write_agent_types(tmp_path)

    @asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[tuple[Server, httpx.AsyncClient]]:
        settings = dict(
            runner_enabled=True,
            runner_poll_seconds=0.2,
            llm_model="openai/fake-model",
            llm_api_base=fake.base_url,
            llm_api_key="test-key",
            agent_types_file=str(agent_types),
        )
        try:
            async with (
                start_server(**(settings | overrides)) as server,
                httpx.AsyncClient(base_url=server.http) as http,
            ):
                yield server, http
        finally:
            load_agent_types(None)  # the default agent types for the other modules

    return start


def stream_call(**args: Any) -> ToolCalls:
    return ToolCalls(Call("test_stream", {"action": "stream", **args}))


def expected(chunks: int, size: int) -> str:
    return "".join(StreamTool.chunk(i, size) for i in range(chunks))


async def post(http: httpx.AsyncClient, user: ApiUser, thread_id: str) -> str:
    response = await http.post(
        f"/api/threads/{thread_id}/messages", json={"content": "go"}, headers=user.headers
    )
    assert response.status_code == 202, response.text
    return response.json()["run"]["id"]


def outputs(ws: WsClient) -> list[dict[str, Any]]:
    return [f for f in ws.frames if f["type"] == "tool_output"]


def tool_frames(ws: WsClient) -> list[dict[str, Any]]:
    return [f for f in ws.frames if f["type"] == "message" and f["message"]["role"] == "tool"]


async def run_ended(ws: WsClient, run_id: str) -> dict[str, Any]:
    # generous: a process's first model call (litellm warming up) is slow on a busy machine
    return await ws.wait_for(
        lambda f: f["type"] == "run" and f["run"]["id"] == run_id and f["run"]["finished_at"],
        within=60,
    )


async def test_a_live_subscriber_gets_every_chunk_in_order(
    running: Any, fake: FakeLLM, tester: ApiUser
) -> None:
    fake.script(stream_call(chunks=60, size=10), Text("done"))
    async with running() as (server, http), WsClient.connect(server.ws, tester.token) as ws:
        thread_id = await new_thread(http, tester)
        await ws.subscribe(thread_id)
        await ws.wait_type("subscribed")
        run_id = await post(http, tester, thread_id)
        assert (await run_ended(ws, run_id))["run"]["status"] == "completed"

        frames = outputs(ws)
        message_id = tool_frames(ws)[0]["message"]["id"]
        assert {f["message_id"] for f in frames} == {message_id}
        assert [f["offset"] for f in frames] == [10 * i for i in range(60)]
        assert "".join(f["chunk"] for f in frames) == expected(60, 10)
        final = tool_frames(ws)[-1]["message"]["tool_activity"]
        assert final["status"] == "success"
        assert final["data"] == {"chunks": 60, "output": expected(60, 10)}
        assert final["preview"] == ["Streamed", "chunks: 60"]
        # coalesced: far fewer cell writes than chunks (and progress updates)
        assert len(tool_frames(ws)) < 60


async def test_a_late_subscriber_reads_the_output_so_far_then_goes_live(
    running: Any, fake: FakeLLM, tester: ApiUser
) -> None:
    StreamTool.gate, StreamTool.paused = asyncio.Event(), asyncio.Event()
    fake.script(stream_call(chunks=12, size=10, pause_after=5), Text("done"))
    async with running() as (server, http):
        thread_id = await new_thread(http, tester)
        run_id = await post(http, tester, thread_id)
        async with asyncio.timeout(15):
            await StreamTool.paused.wait()
        so_far = expected(5, 10)
        while True:  # the cell is written a moment after the chunks (coalesced)
            page = await http.get(f"/api/threads/{thread_id}/messages", headers=tester.headers)
            tools = [m for m in page.json()["items"] if m["role"] == "tool"]
            if tools and (tools[0]["tool_activity"].get("data") or {}).get("output") == so_far:
                break
            await asyncio.sleep(0.05)  # polling the API, as a reconnecting client would

        async with WsClient.connect(server.ws, tester.token) as ws:
            await ws.subscribe(thread_id)
            await ws.wait_type("subscribed")
            replayed = tool_frames(ws)[0]["message"]["tool_activity"]
            assert replayed["status"] == "in_progress" and replayed["data"]["output"] == so_far
            assert replayed["display_message"] == "5 of 12 chunks"
            StreamTool.gate.set()
            assert (await run_ended(ws, run_id))["run"]["status"] == "completed"

            held = replayed["data"]["output"]  # what the app shows: the cell, then chunks
            for frame in outputs(ws):
                if frame["offset"] == len(held):
                    held += frame["chunk"]
            assert held == expected(12, 10)
            assert outputs(ws)[0]["offset"] == 50
            final = tool_frames(ws)[-1]["message"]["tool_activity"]
            assert final["data"]["output"] == expected(12, 10)


async def test_the_cell_keeps_a_capped_output_and_says_so(
    running: Any, fake: FakeLLM, tester: ApiUser
) -> None:
    fake.script(stream_call(chunks=2, size=2500), Text("done"))
    async with (
        running(tool_output_max_chars=3000) as (server, http),
        WsClient.connect(server.ws, tester.token) as ws,
    ):
        thread_id = await new_thread(http, tester)
        await ws.subscribe(thread_id)
        await ws.wait_type("subscribed")
        run_id = await post(http, tester, thread_id)
        await run_ended(ws, run_id)

        full = expected(2, 2500)
        frames = outputs(ws)  # live: everything, long chunks split into small frames
        assert [f["offset"] for f in frames] == [0, 1000, 2000, 2500, 3500, 4500]
        assert "".join(f["chunk"] for f in frames) == full
        stored = await http.get(f"/api/threads/{thread_id}/messages", headers=tester.headers)
        tool = next(m for m in stored.json()["items"] if m["role"] == "tool")["tool_activity"]
        assert tool["data"]["output"] == full[:3000]
        assert tool["data"]["truncated"] is True


def frame_index(ws: WsClient, predicate: Any) -> int:
    return next(i for i, frame in enumerate(ws.frames) if predicate(frame))


def ended_cell(message_id: str) -> Any:
    def ended(frame: dict[str, Any]) -> bool:
        if frame["type"] != "message" or frame["message"]["id"] != message_id:
            return False
        return frame["message"]["tool_activity"]["status"] in ("success", "failure")

    return ended


async def test_a_specialists_answer_streams_into_its_ask_cell(
    running: Any, fake: FakeLLM, tester: ApiUser
) -> None:
    answer = "The researcher looked it up: x is 42, as three sources agree."
    fake.script(
        ToolCalls(Call("ask_researcher", {"message": "what is x?"})),
        Text(answer, pieces=5, pause=0.05),  # the specialist, written in five pieces
        Text("x is 42."),
    )
    async with running() as (server, http), WsClient.connect(server.ws, tester.token) as ws:
        created = await http.post(
            "/api/agents",
            json={"name": "Researcher", "agent_type": "specialist"},
            headers=tester.headers,
        )
        assert created.status_code == 201, created.text
        thread_id = await new_thread(http, tester)
        await ws.subscribe(thread_id)
        await ws.wait_type("subscribed")
        run_id = await post(http, tester, thread_id)
        assert (await run_ended(ws, run_id))["run"]["status"] == "completed"

        ask_id = tool_frames(ws)[0]["message"]["id"]
        frames = [f for f in outputs(ws) if f["message_id"] == ask_id]
        assert len(frames) >= 2 and "".join(f["chunk"] for f in frames) == answer
        assert [f["offset"] for f in frames] == [
            sum(len(f["chunk"]) for f in frames[:i]) for i in range(len(frames))
        ]
        # live: the answer's frames came before the cell ended
        last_chunk = frame_index(ws, lambda f: f is frames[-1])
        assert last_chunk < frame_index(ws, ended_cell(ask_id))
        final = tool_frames(ws)[-1]["message"]["tool_activity"]
        assert final["name"] == "ask_researcher" and final["status"] == "success"
        assert final["data"]["answer"] == answer
        assert "output" not in final["data"]  # the live preview of the answer: not kept twice


async def test_a_fetched_page_streams_its_readable_text(
    running: Any, fake: FakeLLM, tester: ApiUser, db: AsyncSession
) -> None:
    paragraphs = [f"Paragraph {i} of a long page about streaming." for i in range(600)]
    body = (
        "<html><head><title>Long</title></head><body>"
        + "".join(f"<p>{p}</p>" for p in paragraphs)
        + "</body></html>"
    )
    site = LocalServer("127.0.0.1", lambda _: html(body))
    await site.start()
    tester.agent.agent_type = "tester_web"
    await db.commit()
    fake.script(
        ToolCalls(Call("web", {"action": "fetch", "url": f"{site.origin}/long"})), Text("ok")
    )
    try:
        async with (
            running(web_fetch_allow_hosts=("127.0.0.1",)) as (server, http),
            WsClient.connect(server.ws, tester.token) as ws,
        ):
            thread_id = await new_thread(http, tester)
            await ws.subscribe(thread_id)
            await ws.wait_type("subscribed")
            run_id = await post(http, tester, thread_id)
            assert (await run_ended(ws, run_id))["run"]["status"] == "completed"
    finally:
        await site.stop()
    fetch_id = tool_frames(ws)[0]["message"]["id"]
    frames = [f for f in outputs(ws) if f["message_id"] == fetch_id]
    final = tool_frames(ws)[-1]["message"]["tool_activity"]
    assert final["status"] == "success", final
    streamed = "".join(f["chunk"] for f in frames)
    assert streamed.strip() == final["data"]["content"]
    assert final["data"]["content"].splitlines()[0] == paragraphs[0]
    # The page (about 28,000 characters) is stored once, whole: the streamed copy, cut at
    # TOOL_OUTPUT_MAX_CHARS, was its preview; the cell says what the model read.
    assert "output" not in final["data"] and final["data"]["truncated"] is False
    assert len({f["offset"] for f in frames}) == len(frames) > 2  # piece by piece
    assert frame_index(ws, lambda f: f is frames[-1]) < frame_index(ws, ended_cell(fetch_id))
