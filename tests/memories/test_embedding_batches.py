"""The embedded model's requests batched on its one thread: what arrives while it works goes
together, each caller gets its own texts' vectors, one bad request fails alone, and a
batch's vectors are the ones each text gets alone (padding changes nothing)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import numpy as np
import pytest

from app.memories import embedding, embedding_batches
from app.memories.embedding_batches import MAX_TEXTS, Batcher


class Model:
    """Vectors that name their text (its length), the calls made, and a gate holding the
    first call so that requests pile up behind it."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.gate = threading.Event()

    def encode(self, texts: list[str]) -> np.ndarray:
        if not self.calls:
            self.gate.wait(10)
        self.calls.append(list(texts))
        if any(text == "poison" for text in texts):
            raise ValueError("the model cannot read this")
        return np.array([[float(len(text))] for text in texts], np.float32)


async def test_requests_arriving_while_the_model_works_go_as_one_batch() -> None:
    model = Model()
    batcher = Batcher(model.encode)
    first = asyncio.create_task(batcher.embed(["a"]))
    await asyncio.sleep(0.05)  # the first is on the thread, held by the gate
    rest = [asyncio.create_task(batcher.embed(["b" * n, "c" * n * 10])) for n in range(2, 6)]
    await asyncio.sleep(0.05)
    model.gate.set()
    assert (await first).tolist() == [[1.0]]
    for n, task in zip(range(2, 6), rest, strict=True):
        assert (await task).tolist() == [[float(n)], [float(n * 10)]]
    assert len(model.calls) == 2  # the first alone, the four others together
    assert len(model.calls[1]) == 8


async def test_a_batch_holds_at_most_max_texts_and_a_larger_request_goes_alone() -> None:
    model = Model()
    batcher = Batcher(model.encode)
    first = asyncio.create_task(batcher.embed(["a"]))
    await asyncio.sleep(0.05)
    small = [asyncio.create_task(batcher.embed(["x"] * 10)) for _ in range(4)]
    large = asyncio.create_task(batcher.embed(["y"] * (MAX_TEXTS + 5)))
    await asyncio.sleep(0.05)
    model.gate.set()
    await asyncio.gather(first, *small, large)
    assert [len(call) for call in model.calls] == [1, 30, 10, MAX_TEXTS + 5]


async def test_one_bad_request_fails_alone() -> None:
    model = Model()
    batcher = Batcher(model.encode)
    first = asyncio.create_task(batcher.embed(["a"]))
    await asyncio.sleep(0.05)
    good = asyncio.create_task(batcher.embed(["good"]))
    bad = asyncio.create_task(batcher.embed(["poison"]))
    await asyncio.sleep(0.05)
    model.gate.set()
    await first
    assert (await good).tolist() == [[4.0]]
    with pytest.raises(ValueError, match="cannot read"):
        await bad


async def test_the_embedded_model_gives_a_text_the_same_vector_in_a_batch_as_alone() -> None:
    texts = [
        "what do I like to drink",
        "I'm allergic to peanuts, and my sister lives in Lisbon with her two cats",
        "tea",
    ]
    embedder = embedding.EmbeddedEmbedder()
    alone = [await embedder.embed([text]) for text in texts]
    together = await asyncio.gather(*(embedder.embed([text]) for text in texts))
    for one, batched in zip(alone, together, strict=True):
        np.testing.assert_allclose(batched, one, atol=1e-5)


@pytest.mark.skipif(sys.platform != "linux", reason="a nice value is a thread's on Linux only")
async def test_the_model_runs_behind_the_server_threads() -> None:
    """Its passes wait for a core the event loop's thread wants, not the other way round."""

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    model_thread = await asyncio.get_running_loop().run_in_executor(
        embedding_batches.MODEL_THREAD, niceness
    )
    assert model_thread == min(19, niceness() + embedding_batches.MODEL_NICE)
