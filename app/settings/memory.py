"""Settings of memory: the embedding model that lets memories recall by meaning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from msgspec import Meta

from app.settings.base import PositiveFloat


@dataclass(frozen=True)
class MemorySettings:
    memory_embeddings: Annotated[
        Literal["embedded", "off"],
        Meta(
            description="how memories get vectors for recall by meaning: `embedded` (the "
            "offline all-MiniLM-L6-v2 a package ships, run on the server's CPU) or `off` "
            "(recall by words only)"
        ),
    ] = "embedded"
    memory_vectors_retry_seconds: Annotated[
        PositiveFloat,
        Meta(description="how often memories whose embedding failed are embedded again"),
    ] = 30.0
