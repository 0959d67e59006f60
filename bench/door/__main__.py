"""Model door benchmark: CPU per streamed chunk and per call, three ways in one run.

`uv run python -m bench.door [--calls 40] [--chunks 300] [--rounds 3]`

Against the fake OpenAI server over loopback (in its own process, so only the door's CPU
is counted), each call is measured with `time.process_time`:

- raw:     aiohttp streams the SSE, each `data:` line decoded with msgspec: the floor;
- fast:    `stream_turn` through our own OpenAI-compatible client (app/orchestrator/door/);
- litellm: `stream_turn` through `litellm.acompletion` (LLM_FAST_STREAM=false).

Answers: a text of `--chunks` chunks, a 1-chunk text (the fixed cost of a call) and a
turn with 2 parallel tool calls. Per chunk is the slope between the long and the short
text; per call is the 1-chunk text's whole cost. Goal: fast within 2x of raw per chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import time
from collections.abc import Awaitable, Callable

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import aiohttp
import msgspec

from app.orchestrator.door import openai_client
from app.orchestrator.door.llm import ModelTarget, stream_turn
from app.tools.assembly import get_registry
from app.tools.runtime.toolsets import load_agent_types
from bench.common import start_url_process

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant. Be brief."},
    {"role": "user", "content": "Remind me to buy milk and to call the plumber."},
]


async def _nothing(_: str) -> None:
    return None


def door_call(base_url: str, fast: bool, tools: list) -> Callable[[str], Awaitable[object]]:
    async def call(model: str) -> object:
        target = ModelTarget(
            f"openai/{model}", api_base=base_url, api_key="bench", max_retries=0, fast_stream=fast
        )
        wanted = tools if model.startswith("tools") else None
        return await stream_turn(target, [dict(m) for m in MESSAGES], wanted, _nothing)

    return call


def raw_call(
    client: aiohttp.ClientSession, base_url: str, tools: list
) -> Callable[[str], Awaitable[object]]:
    headers = {"Authorization": "Bearer bench", "Content-Type": "application/json"}
    decode = msgspec.json.decode

    async def call(model: str) -> object:
        body = {"model": model, "messages": MESSAGES, "stream": True}
        if model.startswith("tools"):
            body["tools"] = tools
        content = msgspec.json.encode(body)
        url = f"{base_url}/chat/completions"
        chunks = []
        async with client.post(url, headers=headers, data=content) as response:
            pending = b""
            async for data in response.content.iter_any():
                lines = (pending + data).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line.startswith(b"data:") and (payload := line[5:].strip()) != b"[DONE]":
                        chunks.append(decode(payload))
        return chunks

    return call


async def cpu_per_call(call: Callable[[str], Awaitable[object]], model: str, calls: int) -> float:
    for _ in range(max(3, calls // 5)):  # warm: imports, connections, litellm's caches
        await call(model)
    started = time.process_time()
    for _ in range(calls):
        await call(model)
    return (time.process_time() - started) / calls * 1000


def start_fake() -> tuple[subprocess.Popen[str], str]:
    return start_url_process("bench.door.fake_server")


async def run(calls: int, chunks: int, rounds: int) -> None:
    fake, base_url = start_fake()
    load_agent_types(tool_names=get_registry().names)  # as create_app does at startup
    tools = get_registry().function_definitions(("tasks",))
    client = aiohttp.ClientSession()
    ways = {
        "raw": raw_call(client, base_url, tools),
        "fast": door_call(base_url, True, tools),
        "litellm": door_call(base_url, False, tools),
    }
    try:
        print(f"CPU ms, best of {rounds} rounds of {calls} calls each (the box is shared)")
        print(f"a {chunks}-chunk text is {chunks + 2} chunks with the role and the stop chunks")
        best: dict[str, list[float]] = {}
        for _ in range(rounds):  # interleaved, so a busy moment hits every path alike
            for name, call in ways.items():
                measured = [
                    await cpu_per_call(call, model, calls)
                    for model in (f"text-{chunks}", "text-1", "tools-2")
                ]
                old = best.get(name, measured)
                best[name] = [min(a, b) for a, b in zip(old, measured, strict=True)]
        print(f"{'path':8} {'per chunk':>10} {'per call':>9} {'text':>9} {'2 tools':>9}")
        per_chunk = {}
        for name, (long, short, tools_turn) in best.items():
            per_chunk[name] = (long - short) / (chunks - 1)
            print(f"{name:8} {per_chunk[name]:10.4f} {short:9.3f} {long:9.3f} {tools_turn:9.3f}")
        print(
            f"fast/raw per chunk: {per_chunk['fast'] / per_chunk['raw']:.2f}x; "
            f"litellm/fast per chunk: {per_chunk['litellm'] / per_chunk['fast']:.1f}x"
        )
    finally:
        await client.close()
        await openai_client.close_session()
        assert fake.stdin is not None
        fake.stdin.close()
        fake.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--chunks", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.calls, args.chunks, args.rounds))


if __name__ == "__main__":
    main()
