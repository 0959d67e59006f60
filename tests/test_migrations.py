"""Migrations go up, all the way down and up again on both dialects, and the models
have no drift from them (checked on PostgreSQL; SQLite reports false type changes)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from app.settings import PROJECT_ROOT
from tests.support.databases import (
    DIALECTS,
    create_postgres_database,
    drop_postgres_database,
)


def alembic(database_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alembic", *args],
        cwd=PROJECT_ROOT,
        env={**os.environ, "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_single_head() -> None:
    heads = _ok(alembic("sqlite+aiosqlite:///:memory:", "heads"))
    assert heads.count("(head)") == 1, heads


def test_upgrade_downgrade_upgrade(empty_database: str) -> None:
    _ok(alembic(empty_database, "upgrade", "head"))
    _ok(alembic(empty_database, "downgrade", "base"))
    assert "(head)" not in _ok(alembic(empty_database, "current"))
    _ok(alembic(empty_database, "upgrade", "head"))
    assert "(head)" in _ok(alembic(empty_database, "current"))


@pytest.mark.skipif("postgresql" not in DIALECTS, reason="drift is checked on PostgreSQL")
def test_models_match_migrations_on_postgresql() -> None:
    url, name = create_postgres_database()
    try:
        _ok(alembic(url, "upgrade", "head"))
        result = alembic(url, "check")
        assert result.returncode == 0, "model/migration drift:\n" + result.stdout + result.stderr
    finally:
        drop_postgres_database(name)
