"""The process's embedding model: the seam between memories and whoever makes vectors.

An `Embedder` turns texts into unit vectors and names its model (stored with each vector:
vectors of different models are not comparable). The default is the offline embedded
model (app/memories/embedded.py, in a thread); `create_app` may hand the keeper a
provider's model through the model door instead (app/orchestrator/door/embeddings.py), or
none (`MEMORY_EMBEDDINGS=off`): recall is then by words only, which startup says in one
log line.
"""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from app.memories import embedded, embedding_batches

logger = logging.getLogger(__name__)
Vectors = NDArray[np.float32]


class Embedder(Protocol):
    model: str  # stored with every vector it makes

    async def embed(self, texts: list[str]) -> Vectors:
        """One unit vector per text, in order; raises when the model cannot answer."""
        ...


class EmbeddedEmbedder:
    """all-MiniLM-L6-v2 from its registry package, on a worker thread of its own (CPU-bound),
    concurrent requests batched (app/memories/embedding_batches.py)."""

    model = embedded.MODEL_NAME

    def __init__(self) -> None:
        self.batches = embedding_batches.Batcher(lambda texts: embedded.model().encode(texts))

    async def embed(self, texts: list[str]) -> Vectors:
        return await self.batches.embed(texts)


# Installed by each running app, last one serving (tests run several apps in one process).
_installed: list[Embedder | None] = []


def install(embedder: Embedder | None) -> None:
    """Serve recall with `embedder` (None: by words only) until `uninstall`."""
    _installed.append(embedder)


def uninstall(embedder: Embedder | None) -> None:
    if embedder in _installed:
        _installed.reverse()
        _installed.remove(embedder)
        _installed.reverse()


def current() -> Embedder | None:
    return _installed[-1] if _installed else None


def chosen(choice: str, given: Embedder | None = None) -> Embedder | None:
    """The embedder for a `MEMORY_EMBEDDINGS` value: `given` (a provider's, made by the
    model door), the embedded model, or None (`off`, or its package missing); startup
    logs which recall serves."""
    embedder = given
    if embedder is None and choice == "embedded" and embedded.available():
        embedder = EmbeddedEmbedder()
    if embedder is None:
        logger.warning(
            "memory recall: by words only (MEMORY_EMBEDDINGS=%s%s)",
            choice,
            "" if choice == "off" else "; no embedding model could be loaded",
        )
    else:
        logger.info("memory recall: by meaning and words (%s)", embedder.model)
    return embedder


def normalized(vectors: Vectors) -> Vectors:
    """Unit length (providers' vectors are not all normalised)."""
    vectors = np.asarray(vectors, np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.maximum(norms, 1e-9)
