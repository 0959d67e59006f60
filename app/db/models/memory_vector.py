"""One embedding per memory: the vector recall by meaning compares (app/memories/recall.py).

A Core table: vectors are written and scanned by prebuilt statements, never loaded as
objects. `model` names the embedding model that made the vector (a vector of another
model is not comparable; a memory has one per model, so a new model's vectors are made
while the old ones still serve); `memory_updated_at` is the memory's `updated_at` the vector was
made from, so an edited memory's vector is known stale without any write at edit time
(app/memories/vectors.py). The vector is float32, little-endian, as bytes: scanned per
user with numpy on both dialects (docs/memory.md says why not pgvector).

`memory_vector_versions` is one row per user, bumped in the transaction of every change
to the user's vectors by triggers on `memory_vectors` (migration 0021, whichever code
writes the vectors): the per-process cache of a user's
vectors (app/memories/vector_cache.py) reads that one row to know whether it is still
good, rather than an aggregate over the rows that hold the blobs. No row: version 0.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, LargeBinary, String, Table

from app.db.base import GUID, DateTimeUTC, metadata

memory_vectors = Table(
    "memory_vectors",
    metadata,
    Column(
        "memory_id",
        GUID(),
        ForeignKey("memories.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("owner_id", GUID(), ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("model", String(100), primary_key=True),
    Column("memory_updated_at", DateTimeUTC(timezone=True), nullable=False),
    Column("vector", LargeBinary(), nullable=False),
    Index("ix_memory_vectors_owner_model", "owner_id", "model"),
)

memory_vector_versions = Table(
    "memory_vector_versions",
    metadata,
    Column("owner_id", GUID(), ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("version", BigInteger(), nullable=False),
    Column("updated_at", DateTimeUTC(timezone=True), nullable=False),
)
