"""Turn benchmark: POST a message -> run completed, for a turn with 3 parallel tool calls.

`uv run python -m bench.turn [--turns 300] [--warmup 30] [--dialect postgresql]`

One process: the real app (runner on) on a fresh migrated database, its model pointed at
a zero-latency fake OpenAI server over real loopback HTTP (litellm is not bypassed), a
no-op tool. Each turn: POST (through the ASGI app) on a new thread -> model asks for 3
calls -> 3 tool cells in_progress -> success -> model answers -> run completed. Latency is
measured from sending the POST to the run's `completed` frame being published. Prints
p50/p99, the model's share (time inside the model door: litellm + HTTP + fake server),
and the cost per tool activity (the tool phase of the turn divided by 3).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, ClassVar

import httpx
import msgspec
import yaml

from app import create_app
from app.orchestrator import runner as runner_module
from app.realtime.events import RunFrame
from app.realtime.publisher import InProcessPublisher, get_publisher
from app.settings import Settings
from app.tools.base import Tool, ToolContext, ToolResult
from app.tools.registry import get_registry
from app.tools.toolsets import DEFAULT_AGENT_TYPES_FILE
from bench.turn.setup import make_user
from tests.support.databases import (
    create_postgres_database,
    drop_postgres_database,
    migrate,
    sqlite_url,
)
from tests.support.fake_llm import Call, FakeLLM, Text, ToolCalls


class NoopParams(msgspec.Struct, kw_only=True):
    n: int = 0


class NoopTool(Tool):
    name = "bench_noop"
    description = "Does nothing, at once."
    actions: ClassVar = {"run": NoopParams}

    async def run_action(self, ctx: ToolContext, params: NoopParams) -> ToolResult:
        return ToolResult.success({"n": params.n})


def respond(body: dict[str, Any]) -> Text | ToolCalls:
    if body["messages"][-1]["role"] == "tool":
        return Text("Done.", pieces=2)
    return ToolCalls(*(Call("bench_noop", {"action": "run", "n": i}) for i in range(3)))


class Timings:
    """Wraps the model door and the tool phase to split a turn's time."""

    def __init__(self) -> None:
        self.model: dict[Any, float] = defaultdict(float)
        self.tools: dict[Any, float] = defaultdict(float)

    def install(self) -> None:
        stream_turn = runner_module.stream_turn
        run_all = runner_module.ToolCallRunner.run_all
        record_turn = runner_module.RunExecution._record_turn
        timings = self

        async def timed_stream(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return await stream_turn(*args, **kwargs)
            finally:
                timings.model[_run_id()] += time.perf_counter() - started

        async def timed_record(self: Any, *args: Any) -> Any:
            started = time.perf_counter()
            try:
                return await record_turn(self, *args)
            finally:
                timings.tools[str(self.run.id)] += time.perf_counter() - started

        async def timed_run_all(self: Any, *args: Any) -> Any:
            started = time.perf_counter()
            try:
                return await run_all(self, *args)
            finally:
                timings.tools[str(self.state.run.id)] += time.perf_counter() - started

        runner_module.stream_turn = timed_stream
        runner_module.ToolCallRunner.run_all = timed_run_all  # type: ignore[method-assign]
        runner_module.RunExecution._record_turn = timed_record  # type: ignore[method-assign]


def _run_id() -> Any:
    task = asyncio.current_task()
    return task.get_name().removeprefix("run-") if task else None


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


async def bench(database_url: str, turns: int, warmup: int) -> None:
    get_registry().register(NoopTool())
    types = yaml.safe_load(DEFAULT_AGENT_TYPES_FILE.read_text())
    types["agent_types"]["bench"] = {"tools": ["bench_noop"], "step_limit": 3}
    types_file = Path(tempfile.mkdtemp()) / "agent_types.yaml"
    types_file.write_text(yaml.safe_dump(types))
    timings = Timings()
    timings.install()
    async with FakeLLM(respond) as llm:
        settings = Settings(
            database_url=database_url,
            llm_model="openai/fake-model",
            llm_api_base=llm.base_url,
            llm_api_key="bench",
            agent_types_file=str(types_file),
        )
        app = create_app(settings)
        done: dict[str, asyncio.Future[str]] = {}

        def on_frame(_: Any, frame: Any) -> None:
            if isinstance(frame, RunFrame) and frame.run.status in ("completed", "failed"):
                future = done.get(str(frame.run.id))
                if future is not None and not future.done():
                    future.set_result(frame.run.status)

        publisher = get_publisher()
        assert isinstance(publisher, InProcessPublisher)
        publisher.add_listener(on_frame)
        async with app.lifespan():
            headers, agent_id = await make_user(app)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://bench", headers=headers
            ) as client:
                latencies, model, tools = [], [], []
                for i in range(warmup + turns):
                    thread = (await client.post("/api/threads", json={"agent_id": agent_id})).json()
                    loop = asyncio.get_running_loop()
                    started = time.perf_counter()
                    response = await client.post(
                        f"/api/threads/{thread['id']}/messages", json={"content": "go"}
                    )
                    run_id = response.json()["run"]["id"]
                    future = done.setdefault(run_id, loop.create_future())
                    status = await asyncio.wait_for(future, 30)
                    elapsed = time.perf_counter() - started
                    assert status == "completed", status
                    if i >= warmup:
                        latencies.append(elapsed)
                        model.append(timings.model.pop(run_id, 0.0))
                        tools.append(timings.tools.pop(run_id, 0.0))
        publisher.remove_listener(on_frame)
    print(
        f"turns: {turns} (after {warmup} warm-up), 3 parallel tool calls each, {_dialect(database_url)}"
    )
    print(f"end-to-end  p50 {pct(latencies, 0.5):6.1f} ms   p99 {pct(latencies, 0.99):6.1f} ms")
    print(
        f"model door  p50 {pct(model, 0.5):6.1f} ms   p99 {pct(model, 0.99):6.1f} ms"
        f"   (2 streamed calls: litellm + HTTP + fake server;"
        f" {statistics.median(model) / statistics.median(latencies):.0%} of the p50 turn)"
    )
    print(
        f"tool phase  p50 {pct(tools, 0.5):6.1f} ms   -> {pct(tools, 0.5) / 3:5.1f} ms per tool activity"
        " (assistant+3 cells in one commit, 3 runs + 3 final writes)"
    )
    fake = llm.handler_seconds[-2 * turns :]
    print(
        f"fake model  mean {1000 * sum(fake) / turns:6.1f} ms per turn"
        " (its own ASGI handler time for the 2 requests; the rest of the model door is"
        " litellm + loopback HTTP)"
    )
    rest = [lat - m - t for lat, m, t in zip(latencies, model, tools, strict=True)]
    print(
        f"rest        p50 {pct(rest, 0.5):6.1f} ms   (POST, claim, history, final message + run commit)"
    )


def _dialect(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgresql"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--dialect", choices=["postgresql", "sqlite"], default="postgresql")
    args = parser.parse_args()
    if args.dialect == "sqlite":
        url, name = sqlite_url(Path(tempfile.mkdtemp())), None
    else:
        url, name = create_postgres_database()
    try:
        migrate(url)
        asyncio.run(bench(url, args.turns, args.warmup))
    finally:
        if name:
            drop_postgres_database(name)


if __name__ == "__main__":
    main()
