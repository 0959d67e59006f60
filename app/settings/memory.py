"""Settings of memory: the embedding model that lets memories recall by meaning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import PositiveFloat, PositiveInt


@dataclass(frozen=True)
class MemorySettings:
    memory_embeddings: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=200,
            description="how memories get vectors for recall by meaning: `embedded` (the "
            "offline all-MiniLM-L6-v2 a package ships, run on the server's CPU), a "
            "provider's embedding model named like an agent's model "
            "(`openai/text-embedding-3-small`, `<profile>/<model>`), or `off` (recall by "
            "words only)",
        ),
    ] = "embedded"
    memory_vectors_retry_seconds: Annotated[
        PositiveFloat,
        Meta(description="how often memories whose embedding failed are embedded again"),
    ] = 30.0
    memory_vector_cache_mib: Annotated[
        PositiveInt,
        Meta(
            description="MiB of memory vectors each server process keeps between recalls "
            "(the most recently recalled users'; 10,000 memories of the embedded model "
            "take about 15 MiB): a recall of a user not kept reads all their vectors"
        ),
    ] = 256
