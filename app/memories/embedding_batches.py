"""The embedded model's requests, batched on one worker thread.

Each recall embeds its query; many users recalling at once would each run the model on
a worker thread of their own. The model's forward pass is many small numpy steps that
hold the GIL between its matrix products, so several passes at once contend with the
event loop's thread for it (the loop waits) and cost more in all than one pass over the
same texts together. So the embedded model has one thread, and the requests that arrive
while it works go together as the next batch (up to `MAX_TEXTS`; a larger request, the
keeper's, goes alone): a burst of recalls costs a few passes, and the loop competes with
one thread, not one per request.

That thread runs at a lower CPU priority than the server's (`MODEL_NICE` above it, on
Linux, where a nice value is a thread's): the model's passes are most of the CPU a burst
of recalls asks for, and a woken event loop waiting for a core behind them was most of
the loop's lag left (figures: docs/benchmarks.md, bench.recall --users). The model still
has every core nothing else wants.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

MAX_TEXTS = 32
MODEL_NICE = 10


def _behind_the_server() -> None:
    """The calling thread's nice value raised by `MODEL_NICE` (Linux's nice(2) is the
    calling thread's; elsewhere it would be the whole process's, so it is left)."""
    if sys.platform == "linux":
        os.nice(MODEL_NICE)


# The process's one thread for the model (started on first use), whichever app serves.
MODEL_THREAD = ThreadPoolExecutor(
    1, thread_name_prefix="embedded-model", initializer=_behind_the_server
)
Encode = Callable[[list[str]], NDArray[np.float32]]


@dataclass
class _Request:
    texts: list[str]
    answer: asyncio.Future[NDArray[np.float32]]


@dataclass
class Batcher:
    encode: Encode
    _waiting: list[_Request] = field(default_factory=list)
    _draining: asyncio.Task[None] | None = None

    async def embed(self, texts: list[str]) -> NDArray[np.float32]:
        request = _Request(texts, asyncio.get_running_loop().create_future())
        self._waiting.append(request)
        if self._draining is None or self._draining.done():
            self._draining = asyncio.create_task(self._drain())
        return await request.answer

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._waiting:
            batch = self._next_batch()
            texts = [text for request in batch for text in request.texts]
            try:
                vectors = await loop.run_in_executor(MODEL_THREAD, self.encode, texts)
            except Exception as error:
                await self._alone(batch, error)
                continue
            start = 0
            for request in batch:
                end = start + len(request.texts)
                _answer(request, vectors[start:end])
                start = end

    async def _alone(self, batch: list[_Request], error: Exception) -> None:
        """A batch failed: one request's texts must not fail the others', so each is
        run again alone (a batch of one takes the failure as it is)."""
        if len(batch) == 1:
            _answer(batch[0], error)
            return
        loop = asyncio.get_running_loop()
        for request in batch:
            try:
                _answer(
                    request, await loop.run_in_executor(MODEL_THREAD, self.encode, request.texts)
                )
            except Exception as alone:
                _answer(request, alone)

    def _next_batch(self) -> list[_Request]:
        """The oldest request and those after it that fit in `MAX_TEXTS` with it."""
        batch = [self._waiting.pop(0)]
        count = len(batch[0].texts)
        while self._waiting and count + len(self._waiting[0].texts) <= MAX_TEXTS:
            count += len(self._waiting[0].texts)
            batch.append(self._waiting.pop(0))
        return batch


def _answer(request: _Request, outcome: NDArray[np.float32] | Exception) -> None:
    if request.answer.done():  # its caller was cancelled
        return
    if isinstance(outcome, Exception):
        request.answer.set_exception(outcome)
    else:
        request.answer.set_result(outcome)
