"""Each user's vector matrix, kept between recalls in this process.

Reading a user's vectors is the cost of a recall (thousands of blobs per user; the
product of the query with them is cheap), and they change rarely next to how often they
are read. So the matrix is kept per (user, model) with the version of the user's vectors
it was read at (`memory_vector_versions`, one row per user: app/memories/vectors.py). A
recall reads that one row and reads the vectors again only when it changed: every store
or delete of a user's vectors bumps it in its own transaction (the database's triggers),
whichever process made it.
The version is read before the vectors, so a change committed between the two reads only
costs one more read of them at the next recall, never a stale matrix kept.

Bounded: the users kept are the most recently recalled, up to the `memory_vector_cache_mib`
setting's bytes of vectors in all (the keeper sizes this process's cache when it starts).
Recalls use it from the server's loop and from the database lane's (app/db/lane.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from dataclasses import dataclass
from uuid import UUID

import numpy as np
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncSession

from app.memories import vectors

MAX_CACHED_BYTES = 256 * 1024 * 1024  # the setting's default: memory_vector_cache_mib


@dataclass(frozen=True, slots=True)
class UserVectors:
    version: int
    ids: list[UUID]
    matrix: np.ndarray  # row i: the vector of ids[i]
    rows: dict[UUID, int]  # ids' rows (built off the loop: thousands of hashes)


def _read(version: int, rows: vectors.RawVectors, dialect: Dialect) -> UserVectors:
    ids = vectors.memory_ids(rows, dialect)
    blobs = [row[1] for row in rows]
    dimensions = len(blobs[0]) // 4 if blobs else 0
    matrix = vectors.unpack_all(blobs, dimensions)
    return UserVectors(version, ids, matrix, {memory_id: i for i, memory_id in enumerate(ids)})


class VectorCache:
    def __init__(self, max_bytes: int = MAX_CACHED_BYTES) -> None:
        self.max_bytes = max_bytes
        self._kept: OrderedDict[tuple[UUID, str], UserVectors] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # used from the server's loop and a lane's

    async def user_vectors(self, session: AsyncSession, owner_id: UUID, model: str) -> UserVectors:
        """The user's memory ids and their vectors of `model`, one row each (of the
        first vector's length: see `vectors.unpack_all`)."""
        version = await vectors.version(session, owner_id)
        key = (owner_id, model)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and kept.version == version:
                self._kept.move_to_end(key)
                return kept
        rows = await vectors.user_vectors(session, owner_id, model)
        entry = await asyncio.to_thread(_read, version, rows, session.bind.dialect)
        with self._lock:
            self._keep(key, entry)
        return entry

    def _keep(self, key: tuple[UUID, str], entry: UserVectors) -> None:
        self._forget(key)
        if entry.matrix.nbytes > self.max_bytes:
            return
        self._kept[key] = entry
        self._bytes += entry.matrix.nbytes
        while self._bytes > self.max_bytes:
            self._forget(next(iter(self._kept)))

    def _forget(self, key: tuple[UUID, str]) -> None:
        gone = self._kept.pop(key, None)
        if gone is not None:
            self._bytes -= gone.matrix.nbytes


cache = VectorCache()  # this process's
