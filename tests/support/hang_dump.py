"""A test that outlives pytest-timeout's `timeout` dumps where each asyncio task waits.

pytest-timeout's SIGALRM handler prints every thread's stack, but an async test's thread
is idle in the event loop's `select`, which says nothing of what the test awaits. This
plugin takes over the timer (the same signal, the same limit) and prints every task's
stack of the running loop to stderr first, then lets pytest-timeout fail the test.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from typing import Any

import pytest
import pytest_timeout


def print_tasks() -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return  # not inside the loop: the thread dump says all
    print(
        f"\n+++ asyncio tasks of the running loop ({len(asyncio.all_tasks(loop))}) +++",
        file=sys.stderr,
    )
    for task in asyncio.all_tasks(loop):
        task.print_stack(limit=12, file=sys.stderr)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    if settings.method != "signal" or threading.current_thread() is not threading.main_thread():
        return None  # pytest-timeout's own timer

    def handler(signum: int, frame: Any) -> None:
        print_tasks()
        pytest_timeout.timeout_sigalrm(item, settings)

    def cancel() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)

    item.cancel_timeout = cancel  # type: ignore[attr-defined]
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, settings.timeout)
    return True
