"""Settings of memory: the embedding model that lets memories recall by meaning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import PositiveFloat


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
