"""A provider's embedding model through the model door: a fake OpenAI-compatible server
over real HTTP. Usage is recorded; a failed call (500, timeout) never loses the memory,
which is embedded at the keeper's next try."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY, generate_latest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app import create_app
from app.db.models import memory_vectors
from app.memories.keeper import embed_pending
from app.orchestrator.door.embeddings import door_embedder
from app.orchestrator.door.errors import LLMError
from app.settings import Settings
from tests.conftest import ApiUser, running_lifespan
from tests.memories.support import save
from tests.support.fake_llm import Error, FakeLLM, Hang, Raw
from tests.support.metrics import Scrape

MODEL = "openai/text-embedding-fake"


def embeddings_answer(body: dict[str, Any]) -> Raw:
    """A vector per input (its length and vowels: enough to tell texts apart)."""
    data = [
        {"index": i, "embedding": [len(text), sum(c in "aeiou" for c in text), 1.0]}
        for i, text in enumerate(body["input"])
    ]
    usage = {"prompt_tokens": 7 * len(body["input"]), "total_tokens": 7 * len(body["input"])}
    payload = json.dumps({"object": "list", "data": data, "usage": usage}).encode()
    return Raw(payload, content_type="application/json")


def input_tokens() -> float:
    scrape = Scrape(generate_latest(REGISTRY).decode())
    return scrape.value("toolcells_model_tokens_total", model=MODEL, agent_type="memory",
                        kind="input")  # fmt: skip


@pytest.fixture
async def fake() -> AsyncIterator[FakeLLM]:
    async with FakeLLM() as server:
        yield server


def provider_settings(settings: Settings, fake: FakeLLM) -> Settings:
    return replace(
        settings, memory_embeddings=MODEL, llm_api_base=fake.base_url, llm_api_key="key",
        llm_timeout_seconds=0.5, memory_vectors_retry_seconds=0.2,
    )  # fmt: skip


async def vectors_of(factory: async_sessionmaker[AsyncSession], model: str) -> list[Any]:
    async with factory() as session:
        query = select(memory_vectors).where(memory_vectors.c.model == model)
        return list((await session.execute(query)).all())


async def test_a_failed_call_loses_nothing_and_usage_is_recorded(
    alice: ApiUser, settings: Settings, fake: FakeLLM,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:  # fmt: skip
    embedder = door_embedder(provider_settings(settings, fake), {})
    assert embedder is not None
    memory = await save(session_factory, alice.user.id, "I drink my coffee black")

    fake.script(Error(500, "upstream down"))
    with pytest.raises(LLMError):
        await embed_pending(session_factory, embedder)
    fake.script(Hang())
    with pytest.raises(LLMError, match="in time"):
        await embed_pending(session_factory, embedder)
    assert await vectors_of(session_factory, MODEL) == []

    before = input_tokens()
    fake.respond_with(embeddings_answer)
    assert await embed_pending(session_factory, embedder) == 1
    [row] = await vectors_of(session_factory, MODEL)
    assert row.memory_id == memory.id
    assert fake.paths[-1] == "/v1/embeddings"
    assert fake.requests[-1] == {"model": "text-embedding-fake", "input": [memory.content]}
    assert fake.headers[-1]["authorization"] == "Bearer key"
    assert input_tokens() - before == 7


async def test_the_keeper_embeds_a_memory_whose_first_embedding_failed(
    client: httpx.AsyncClient, alice: ApiUser, settings: Settings, fake: FakeLLM,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:  # fmt: skip
    fake.script(Error(500))  # the keeper's first try, woken by the save
    fake.respond_with(embeddings_answer)  # then every retry
    app = create_app(provider_settings(settings, fake))
    async with running_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            memory = await save(session_factory, alice.user.id, "Allergic to peanuts")
            await fake.wait_for_requests(2)  # refused, then answered at the retry
            async with asyncio.timeout(10):
                # the keeper announces no stored vector: read it as a client would
                while not await vectors_of(session_factory, MODEL):  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
            listed = await http.get("/api/memories", headers=alice.headers)
    assert [m["id"] for m in listed.json()["items"]] == [str(memory.id)]
    assert any(r.get("input") == ["Allergic to peanuts"] for r in fake.requests)


OLLAMA_MODEL = "ollama/nomic-embed-text"


def ollama_answer(body: dict[str, Any]) -> Raw:
    """Ollama's `POST /api/embed` answer (a provider litellm speaks, we do not)."""
    vectors = [[len(text), sum(c in "aeiou" for c in text), 1.0] for text in body["input"]]
    payload = {"model": "nomic-embed-text", "embeddings": vectors, "prompt_eval_count": 11}
    return Raw(json.dumps(payload).encode(), content_type="application/json")


async def test_a_provider_off_the_openai_wire_embeds_through_litellm(
    alice: ApiUser, settings: Settings, fake: FakeLLM,
    session_factory: async_sessionmaker[AsyncSession],
) -> None:  # fmt: skip
    ollama = replace(
        settings, memory_embeddings=OLLAMA_MODEL, llm_api_base=fake.base_url.removesuffix("/v1")
    )
    embedder = door_embedder(ollama, {})
    assert embedder is not None and embedder.target.kind == "litellm"
    memory = await save(session_factory, alice.user.id, "I drink my coffee black")
    scrape = Scrape(generate_latest(REGISTRY).decode())
    labels = {"model": OLLAMA_MODEL, "agent_type": "memory", "kind": "input"}
    before = scrape.value("toolcells_model_tokens_total", **labels)

    fake.respond_with(ollama_answer)
    assert await embed_pending(session_factory, embedder) == 1
    [row] = await vectors_of(session_factory, OLLAMA_MODEL)
    assert row.memory_id == memory.id
    assert fake.paths[-1] == "/api/embed"
    assert fake.requests[-1]["input"] == [memory.content]
    after = Scrape(generate_latest(REGISTRY).decode()).value(
        "toolcells_model_tokens_total", **labels
    )
    assert after - before == 11
