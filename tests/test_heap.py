"""A started server keeps the objects of its startup out of full garbage collections
(app/lib/heap.py), unless GC_FREEZE_AFTER_STARTUP is off. Each case is a process of its
own: freezing is per process, and the test process has started apps already."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from app.settings import PROJECT_ROOT

STARTS_AN_APP = """
import asyncio, gc
from app import create_app

async def main():
    app = create_app()
    before = gc.get_freeze_count()
    async with app.lifespan():
        print(before, gc.get_freeze_count())

asyncio.run(main())
"""


def _frozen_before_and_after_startup(tmp_path: Path, **env: str) -> tuple[int, int]:
    environ = {
        **os.environ,
        "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path / 'heap.sqlite3'}",
        "RUNNER_ENABLED": "false",
        **env,
    }
    done = subprocess.run(
        [sys.executable, "-c", STARTS_AN_APP],
        cwd=PROJECT_ROOT, env=environ, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    before, after = done.stdout.split()[-2:]
    return int(before), int(after)


def test_startup_heap_is_frozen(tmp_path: Path) -> None:
    before, after = _frozen_before_and_after_startup(tmp_path)
    assert before == 0
    assert after > 50_000  # the imports, the app, its plugins


def test_freezing_can_be_turned_off(tmp_path: Path) -> None:
    assert _frozen_before_and_after_startup(tmp_path, GC_FREEZE_AFTER_STARTUP="false") == (0, 0)
