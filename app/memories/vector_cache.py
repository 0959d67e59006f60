"""Each user's vector matrix, kept between recalls in this process.

Reading a user's vectors is the cost of a recall (thousands of blobs per user; the
product of the query with them is cheap), and they change rarely next to how often they
are read. So the matrix is kept per (user, model) with a fingerprint of the rows it came
from: their count and newest `memory_updated_at` (one aggregate over the user's index).
A recall reads the fingerprint and reads the vectors again only when it changed: an
added, edited, re-embedded or deleted memory changes it, whichever process made the
change. One change it misses: a memory deleted while an older one, never embedded
before, gets its first vector (same count, same newest time); the deleted one is then
dropped when the recalled rows are read (a gone id finds no memory), and the new one is
found by its words until the user's vectors change again.

Bounded: the users kept are the most recently recalled, up to `MAX_CACHED_BYTES` of
vectors in all.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import memory_vectors
from app.memories import vectors

MAX_CACHED_BYTES = 256 * 1024 * 1024
v = memory_vectors.c

Fingerprint = tuple[int, datetime | None]


@dataclass(frozen=True, slots=True)
class UserVectors:
    fingerprint: Fingerprint
    ids: list[UUID]
    matrix: np.ndarray


class VectorCache:
    def __init__(self, max_bytes: int = MAX_CACHED_BYTES) -> None:
        self.max_bytes = max_bytes
        self._kept: OrderedDict[tuple[UUID, str], UserVectors] = OrderedDict()
        self._bytes = 0

    async def user_matrix(
        self,
        session: AsyncSession,
        owner_id: UUID,
        model: str,
        dimensions: int,
        fingerprint: Fingerprint,
    ) -> tuple[list[UUID], np.ndarray]:
        """The user's memory ids and their vectors of `model`, one row each, as of
        `fingerprint` (`fingerprint()`, read just before)."""
        key = (owner_id, model)
        kept = self._kept.get(key)
        if kept is not None and kept.fingerprint == fingerprint:
            self._kept.move_to_end(key)
            return kept.ids, kept.matrix
        ids, blobs = await vectors.user_vectors(session, owner_id, model)
        matrix = await asyncio.to_thread(vectors.unpack_all, blobs, dimensions)
        self._keep(key, UserVectors(fingerprint, ids, matrix))
        return ids, matrix

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


async def fingerprint(session: AsyncSession, owner_id: UUID, model: str) -> Fingerprint:
    """(how many vectors of `model` the user has, the newest one's memory time)."""
    query = select(func.count(), func.max(v.memory_updated_at)).where(
        v.owner_id == owner_id, v.model == model
    )
    count, newest = (await session.execute(query)).one()
    return int(count), newest


cache = VectorCache()  # this process's
