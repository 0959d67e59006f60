"""WAL checkpoints of a SQLite database, on a thread of their own.

A checkpoint copies the WAL's pages back into the database file and syncs it to disk:
milliseconds to tens of milliseconds. By default SQLite runs one inside whichever COMMIT
finds the WAL past 1,000 pages, and our commits run on the event loop
(app/db/sqlite_driver.py), so that commit would stall every request of the process. The
driver's connections therefore set `wal_autocheckpoint=0`, and count their commits here;
every `EVERY_COMMITS` commits, or on the first commit `EVERY_SECONDS` after the last
checkpoint, a PASSIVE checkpoint (it waits for no reader or writer, and copies what it can)
runs on the process's checkpoint thread, on a short-lived connection of its own. One at a
time per database: commits meanwhile count towards the next, started as this one ends if
due.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

logger = logging.getLogger(__name__)
EVERY_COMMITS = 200
EVERY_SECONDS = 1.0
_thread = ThreadPoolExecutor(1, thread_name_prefix="sqlite-checkpoint")  # every database's


class Checkpointer:
    def __init__(self, database: str) -> None:
        self.database = database
        self._lock = threading.Lock()  # commits count on any thread; checkpoints end on theirs
        self._commits = 0
        self._last = time.monotonic()
        self._running = False
        self.checkpoints = 0  # run so far (tests)

    def committed(self) -> None:
        """A write transaction committed: checkpoint if one is due and none is running."""
        with self._lock:
            self._commits += 1
            if not self._start_if_due():
                return
        _thread.submit(self._checkpoint).add_done_callback(self._done)

    def _start_if_due(self) -> bool:
        due = self._commits >= EVERY_COMMITS or time.monotonic() - self._last >= EVERY_SECONDS
        if self._running or not due or self._commits == 0:
            return False
        self._running, self._commits, self._last = True, 0, time.monotonic()
        return True

    def _checkpoint(self) -> None:
        connection = sqlite3.connect(self.database, timeout=0)
        try:
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        finally:
            connection.close()
        self.checkpoints += 1

    def _done(self, future: Future[None]) -> None:
        if (error := future.exception()) is not None:  # the next one tries again
            logger.warning("WAL checkpoint of %s failed: %s", self.database, error)
        with self._lock:
            self._running = False
            again = self._start_if_due()  # enough commits came in meanwhile
        if again:
            _thread.submit(self._checkpoint).add_done_callback(self._done)


_checkpointers: dict[str, Checkpointer] = {}
_registry_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A forked worker has none of its parent's threads: a checkpoint thread of its own,
    and counts of its own commits."""
    global _thread, _registry_lock
    _thread = ThreadPoolExecutor(1, thread_name_prefix="sqlite-checkpoint")
    _registry_lock = threading.Lock()
    _checkpointers.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def for_database(database: str) -> Checkpointer:
    """The process's checkpointer of a database file (one per path)."""
    with _registry_lock:
        found = _checkpointers.get(database)
        if found is None:
            found = _checkpointers[database] = Checkpointer(database)
        return found
