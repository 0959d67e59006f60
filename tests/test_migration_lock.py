"""Replicas starting together each run `litestar database upgrade` (the image's entrypoint
does): they take turns under the migration lock (app/db/schema.py), a PostgreSQL advisory
lock or, on SQLite, a file lock, and none of them fails.

The commands run as the entrypoint runs them: `python -m litestar` processes of their own
(a replica is a process; alembic's env.py is not safe to run twice at once in one).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import inspect, pool
from sqlalchemy.ext.asyncio import create_async_engine

from app.db.schema import WAITING, expected_schema, migration_lock, missing_revisions
from app.settings import PROJECT_ROOT


def upgrade_process(database_url: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "litestar", "database", "upgrade", "--no-prompt"],
            cwd=PROJECT_ROOT,
            env={**os.environ, "DATABASE_URL": database_url, "RUNNER_ENABLED": "0"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def finished(process: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + 180
    while process.poll() is None:
        if time.monotonic() > deadline:
            process.kill()
            raise AssertionError("the upgrade did not finish")
        await asyncio.sleep(0.2)
    return process.returncode


async def tables(database_url: str) -> set[str]:
    engine = create_async_engine(database_url, poolclass=pool.NullPool)
    try:
        async with engine.connect() as connection:
            return set(await connection.run_sync(lambda sync: inspect(sync).get_table_names()))
    finally:
        await engine.dispose()


async def test_an_upgrade_waits_while_another_process_migrates(
    empty_database: str, tmp_path: Path
) -> None:
    log = tmp_path / "upgrade.log"
    async with migration_lock(empty_database):  # another replica, migrating
        process = upgrade_process(empty_database, log)
        try:
            deadline = time.monotonic() + 180
            while WAITING not in log.read_text():
                assert process.poll() is None, log.read_text()[-3000:]  # it did not wait
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                await asyncio.sleep(0.2)
            await asyncio.sleep(1)
            assert process.poll() is None
            assert "alembic_version" not in await tables(empty_database)
        except BaseException:
            process.kill()
            raise
    assert await finished(process) == 0, log.read_text()[-3000:]
    assert await missing_revisions(empty_database) == set()


async def test_two_replicas_upgrading_at_once_both_start(
    empty_database: str, tmp_path: Path
) -> None:
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    processes = [upgrade_process(empty_database, log) for log in logs]
    codes = [await finished(process) for process in processes]
    assert codes == [0, 0], [log.read_text()[-3000:] for log in logs]
    assert await missing_revisions(empty_database) == set()


async def test_readiness_knows_every_revision_of_the_code(empty_database: str) -> None:
    expected = expected_schema(empty_database)
    assert len(expected.heads) == 1 and expected.heads <= expected.known
    assert expected.behind(set())  # nothing applied
    assert not expected.behind(set(expected.heads))
    older = next(iter(expected.known - expected.heads))
    assert expected.behind({older})
    assert not expected.behind({"a_newer_release_s_revision"})  # ahead: rolling deploy
