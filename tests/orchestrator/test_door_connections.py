"""The model door holds at most its provider's connection limit open: calls beyond it
wait for a connection (and time out waiting, never reaching the provider), whatever
aiohttp's default; each provider has its own pool. A fake model server counts the
requests it holds at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web
from prometheus_client import REGISTRY

from app.orchestrator.door import openai_client, profiles
from app.orchestrator.door.llm import LLMError, ModelTarget, stream_turn

LIMIT = "toolcells_model_door_connection_limit"
MESSAGES = [{"role": "user", "content": "hi"}]
ANSWER = b'data: {"choices":[{"index":0,"delta":{"content":"ok"}}]}\n\ndata: [DONE]\n\n'


@dataclass
class HoldingModel:
    """Answers each request only once `release` is set; counts what it holds at once."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    held: int = 0
    most: int = 0
    served: int = 0
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    expect: int = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        await request.read()
        self.served += 1
        self.held += 1
        self.most = max(self.most, self.held)
        if self.held >= self.expect:
            self.reached.set()
        try:
            await self.release.wait()
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(ANSWER)
            await response.write_eof()
            return response
        finally:
            self.held -= 1


@pytest.fixture
async def model() -> AsyncIterator[tuple[HoldingModel, str]]:
    holding = HoldingModel()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", holding.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield holding, f"http://127.0.0.1:{port}/v1"
    finally:
        holding.release.set()
        await openai_client.close_session()
        await runner.cleanup()


async def _call(target: ModelTarget) -> str:
    async def ignore(_: str) -> None:
        return None

    return (await stream_turn(target, [dict(m) for m in MESSAGES], None, ignore)).text


async def test_calls_beyond_the_limit_wait_for_a_connection(
    model: tuple[HoldingModel, str],
) -> None:
    holding, base = model
    holding.expect = 2
    target = ModelTarget(
        "openai/fake", api_base=base, api_key="k", timeout=30, max_retries=0, max_connections=2
    )
    first = [asyncio.create_task(_call(target)) for _ in range(2)]
    async with asyncio.timeout(10):
        await holding.reached.wait()  # both connections are held by the provider
    # these wait for a connection, never reaching the provider, until they give up
    waiting = ModelTarget(
        "openai/fake", api_base=base, api_key="k", timeout=0.5, max_retries=0, max_connections=2
    )
    results = await asyncio.gather(*(_call(waiting) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, LLMError) and r.kind == "timeout" for r in results), results
    assert holding.served == 2 and holding.most == 2
    limit = REGISTRY.get_sample_value(LIMIT, {"provider": "openai"})
    assert limit == 2

    holding.release.set()
    assert await asyncio.gather(*first) == ["ok", "ok"]
    assert await _call(target) == "ok"  # a connection given back serves the next call


async def test_each_provider_has_its_own_pool_and_a_profile_its_own_limit(
    model: tuple[HoldingModel, str],
) -> None:
    holding, base = model
    holding.expect = 3
    document = f"profiles: {{narrow: {{kind: openai, base_url: '{base}', max_connections: 1}}}}"
    found = profiles.load_profiles(None, document)
    base_target = ModelTarget("narrow/fake", timeout=30, max_retries=0, max_connections=1000)
    narrow = profiles.resolve(base_target, found)
    assert narrow.max_connections == 1 and narrow.provider == "narrow"
    wide = ModelTarget("openai/fake", api_base=base, api_key="k", timeout=30, max_retries=0)
    # one call through the narrow profile, two by the default profile: all three reach
    # the provider at once (the narrow profile's one connection is its own)
    calls = [asyncio.create_task(_call(t)) for t in (narrow, wide, wide)]
    async with asyncio.timeout(10):
        await holding.reached.wait()
    assert holding.most == 3
    holding.release.set()
    assert await asyncio.gather(*calls) == ["ok", "ok", "ok"]
