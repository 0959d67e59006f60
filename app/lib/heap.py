"""The objects startup made are kept out of the garbage collector's full collections.

Startup leaves ~190,000 objects the collector tracks (litellm's import alone makes most
of them), and they live as long as the process. Each full collection, which CPython
starts on its own once enough new objects survived, walks every one of them: 50-100 ms
on this project's benchmark machine, during which the event loop answers nobody. That
pause was the REST page's p99. `gc.freeze()` moves them to a permanent generation the
collector skips; everything made later (requests, runs) is collected as before.
"""

from __future__ import annotations

import gc

_done = False


def freeze_startup_heap() -> None:
    """Once per process (another app started in it, as tests do, freezes nothing more)."""
    global _done
    if _done:
        return
    _done = True
    gc.collect()  # startup's garbage goes first: frozen objects are never freed
    gc.freeze()
