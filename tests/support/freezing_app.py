"""`uvicorn --factory tests.support.freezing_app:create`: the test app (with the test
tools) that stops itself (SIGSTOP) just before it sends a chosen statement, so a test can
SIGKILL it at that exact point: a host killed at the moment it matters, not at a moment
picked by a sleep.

`FREEZE_BEFORE`: the statement's start (e.g. `INSERT INTO push_events`); `FREEZE_IF`: a
text its parameters must contain (optional); `FREEZE_MARKER`: a file written (with the
statement) just before the process stops, for the test to wait on.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from litestar import Litestar
from sqlalchemy import event
from sqlalchemy.engine import Engine

from tests.support.orchestrator_app import create as create_test_app


def create() -> Litestar:
    before, marker = os.environ["FREEZE_BEFORE"], Path(os.environ["FREEZE_MARKER"])
    needle = os.environ.get("FREEZE_IF", "")

    def freeze(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().startswith(before) and needle in str(parameters):
            marker.write_text(statement)
            os.kill(os.getpid(), signal.SIGSTOP)  # the statement is never sent

    event.listen(Engine, "before_cursor_execute", freeze)
    return create_test_app()
