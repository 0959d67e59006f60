"""Fusion sees the whole ranking by meaning though only a few memories come back from the
worker thread: a memory the words found keeps its rank by meaning however deep it is,
and the order is the one of the full ranking (no database: the vectors are made here)."""

from __future__ import annotations

from uuid import UUID, uuid4

import numpy as np

from app.memories import recall, vectors
from app.memories.vector_cache import UserVectors

DIMENSIONS = 4


def _user_vectors(rows: list[list[float]]) -> tuple[list[UUID], UserVectors]:
    matrix = np.asarray(rows, np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = [uuid4() for _ in rows]
    unpacked = vectors.unpack_all([vectors.pack(row) for row in matrix], DIMENSIONS)
    return ids, UserVectors(1, ids, unpacked, {memory_id: i for i, memory_id in enumerate(ids)})


def _fused(kept: UserVectors, worded: list[UUID], limit: int) -> list[tuple[UUID, str, float]]:
    query = np.asarray([1, 0, 0, 0], np.float32)
    return recall._fuse(recall._meaning(kept, query, worded, limit), worded, limit)


def test_a_memory_found_by_words_keeps_its_deep_rank_by_meaning() -> None:
    # 8 memories close to the query, the closest first; then one far from it
    close = [[1.0, 0.1 * i, 0, 0] for i in range(8)]
    ids, kept = _user_vectors([*close, [0, 0, 1.0, 0]])
    deep, far = ids[7], ids[8]
    not_embedded = uuid4()

    fused = _fused(kept, [deep, far, not_embedded], limit=3)

    k = recall.RRF_K
    # deep: 8th by meaning and 1st by words; far is too far for its words to count;
    # the memory without a vector counts by its words (2nd of the words kept)
    assert fused[0] == (deep, "both", 1 / (k + 8) + 1 / (k + 1))
    assert fused[1] == (ids[0], "meaning", 1 / (k + 1))
    assert fused[2] == (ids[1], "meaning", 1 / (k + 2))
    assert far not in [i for i, _, _ in _fused(kept, [deep, far, not_embedded], limit=20)]
    wider = _fused(kept, [deep, far, not_embedded], limit=20)
    assert (not_embedded, "words", 1 / (k + 2)) in wider
    assert [i for i, how, _ in wider if how == "meaning"] == ids[:7]


def test_equal_similarities_rank_in_the_vectors_order() -> None:
    ids, kept = _user_vectors([[1.0, 0.2, 0, 0]] * 5)
    assert [i for i, _, _ in _fused(kept, [], limit=5)] == ids
