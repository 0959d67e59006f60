"""A registry of listeners: added and removed at startup and shutdown, told in order.

Each module-level list of callbacks the app kept by hand is one (the change sinks and
transaction hooks of app/threads/changes.py, the runner's wake-up listeners and relays,
the push sender's wakers, the Live Activity updaters). A listener added twice is told
twice; removing one that is not there does nothing.

With a `logger`, one listener's failure is logged (one record, with its traceback) and
the others are still told; without, it propagates to the caller and the listeners after
it are not told. Listeners are told in a copy of the list: one that adds or removes a
listener while being told changes the next telling, not this one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, Generic, TypeVar

L = TypeVar("L")


class Listeners(Generic[L]):
    __slots__ = ("_items", "_logger", "name")

    def __init__(self, name: str, *, logger: logging.Logger | None = None) -> None:
        """`name` says what a listener is in the failure's log line ("change sink")."""
        self.name = name
        self._logger = logger
        self._items: list[L] = []

    def add(self, listener: L) -> None:
        self._items.append(listener)

    def remove(self, listener: L) -> None:
        if listener in self._items:
            self._items.remove(listener)

    def clear(self) -> None:
        self._items.clear()

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[L]:
        """A copy of the list, in order of adding (the caller's own loop: failures propagate)."""
        return iter(list(self._items))

    def notify(self, *args: Any) -> None:
        """Call every listener (each a callable) with `args`."""
        if self._logger is None:
            for listener in list(self._items):
                listener(*args)  # type: ignore[operator]
            return
        for listener in list(self._items):
            try:
                listener(*args)  # type: ignore[operator]
            except Exception:  # one listener must not keep the others from hearing
                self._logger.exception("%s %r failed", self.name, listener)

    def emit(self, method: str, *args: Any) -> None:
        """Call the method `method` of every listener (each an object) with `args`."""
        if self._logger is None:
            for listener in list(self._items):
                getattr(listener, method)(*args)
            return
        for listener in list(self._items):
            try:
                getattr(listener, method)(*args)
            except Exception:  # one listener must not keep the others from hearing
                self._logger.exception("%s %r failed on %s", self.name, listener, method)
