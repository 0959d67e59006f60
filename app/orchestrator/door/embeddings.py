"""Embeddings through the model door: memories' vectors from a provider's model.

`MEMORY_EMBEDDINGS=<model>` names the model as an agent's model is named
(`openai/text-embedding-3-small`, `<profile>/<model>`) and resolves through the same
profiles (door/profiles.py): an OpenAI-format provider gets `POST {base}/embeddings` on
our own client (aiohttp, the door's connection pools and error mapping); any other goes
through litellm's public `aembedding`. A batch of texts is one request. Usage is priced
and counted like a completion's (`toolcells_model_*` metrics, agent type `memory`), and
summed into the run's usage when a run asked (recall ahead of its turn). A failure
raises `LLMError`: the keeper retries later, a recall falls back to words.
"""

from __future__ import annotations

import msgspec
import numpy as np

from app.memories.embedding import Vectors, normalized
from app.observability import metrics
from app.orchestrator.door import litellm_client, model_info
from app.orchestrator.door.errors import LLMError
from app.orchestrator.door.llm import run_usage
from app.orchestrator.door.openai_client import WireRequest, open_stream
from app.orchestrator.door.profiles import ProviderProfile, load_profiles, resolve
from app.orchestrator.door.types import ModelTarget, Usage
from app.settings import Settings

USAGE_LABEL = "memory"  # the agent-type label of embedding usage in the metrics
_encode = msgspec.json.Encoder().encode


class _Item(msgspec.Struct):
    embedding: list[float]
    index: int = 0


class _Usage(msgspec.Struct):
    prompt_tokens: int = 0


class _EmbeddingsAnswer(msgspec.Struct):
    data: list[_Item]
    usage: _Usage | None = None


_decode = msgspec.json.Decoder(_EmbeddingsAnswer).decode


class DoorEmbedder:
    """A provider's embedding model, as app/memories/embedding.py's `Embedder`."""

    def __init__(self, target: ModelTarget) -> None:
        self.target = target
        self.model = target.model

    async def embed(self, texts: list[str]) -> Vectors:
        if self.target.kind == "openai":
            vectors, tokens = await self._openai(texts)
        else:
            vectors, tokens = await litellm_client.embed(self.target, texts)
        self._account(tokens)
        return normalized(np.asarray(vectors, np.float32))

    async def _openai(self, texts: list[str]) -> tuple[list[list[float]], int]:
        target = self.target
        headers = {"Content-Type": "application/json", **dict(target.headers)}
        if target.api_key:
            headers["Authorization"] = f"Bearer {target.api_key}"
        body = _encode({"model": target.wire_model or target.model, "input": texts})
        url = f"{(target.api_base or '').rstrip('/')}/embeddings"
        request = WireRequest(url, headers, body, target.api_key, target.provider,
                              target.max_connections)  # fmt: skip
        response = await open_stream(request, target.timeout)
        try:
            raw = await response.read()
        except TimeoutError as exc:
            raise LLMError("timeout", "The embedding model did not answer in time.") from exc
        finally:
            response.release()
            metrics.door_stream_ended(request.provider)
        try:
            answer = _decode(raw)
        except msgspec.DecodeError as exc:
            raise LLMError("bad_response", "The embedding model's answer was unreadable.") from exc
        ordered = sorted(answer.data, key=lambda item: item.index)
        if len(ordered) != len(texts):
            raise LLMError("bad_response", "The embedding model answered for other texts.")
        return [
            item.embedding for item in ordered
        ], answer.usage.prompt_tokens if answer.usage else 0

    def _account(self, tokens: int) -> None:
        usage = Usage(input_tokens=tokens, calls=1)
        usage.cost = model_info.price(self.target, usage)
        metrics.model_usage(self.target.model, USAGE_LABEL, usage)
        if (tally := run_usage.get()) is not None:
            tally.add(usage)


def door_embedder(settings: Settings, profiles: dict[str, ProviderProfile]) -> DoorEmbedder | None:
    """The provider embedder `MEMORY_EMBEDDINGS` names, or None (`embedded`, `off`)."""
    choice = settings.memory_embeddings
    if choice in ("embedded", "off"):
        return None
    base = ModelTarget(
        model=choice, api_base=settings.llm_api_base, api_key=settings.llm_api_key,
        timeout=settings.llm_timeout_seconds, agent_type=USAGE_LABEL,
    )  # fmt: skip
    return DoorEmbedder(resolve(base, profiles))


def configured_embedder(settings: Settings) -> DoorEmbedder | None:
    """`door_embedder` through the configured provider profiles."""
    if settings.memory_embeddings in ("embedded", "off"):
        return None
    return door_embedder(settings, load_profiles(settings.llm_profiles_file, settings.llm_profiles))
