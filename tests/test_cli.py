"""Staff CLI end to end against a fresh database per dialect.

The commands run in this process (tests/support/cli.py); one test runs the real console
entry point in a subprocess to prove the commands are found there too.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from uuid import UUID

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, create_async_engine
from sqlalchemy.pool import NullPool

from app.db.models import Agent, Thread, ThreadMessage, User
from app.settings import PROJECT_ROOT
from tests.support.cli import litestar, ok
from tests.support.databases import migrate, sqlite_url


def counts(database_url: str) -> dict[str, int]:
    async def count() -> dict[str, int]:
        engine = create_async_engine(database_url, poolclass=NullPool)
        try:
            async with engine.connect() as conn:
                return {
                    model.__tablename__: int(
                        await conn.scalar(select(func.count()).select_from(model)) or 0
                    )
                    for model in (User, Agent, Thread, ThreadMessage)
                }
        finally:
            await engine.dispose()

    return asyncio.run(count())


def test_staff_cli(empty_database: str) -> None:
    migrate(empty_database)

    user_id = ok(
        litestar(
            empty_database,
            "users",
            "create",
            "--email",
            "Staff@Example.com",
            "--password",
            "pw-1234567890",
            "--staff",
        )
    ).strip()
    UUID(user_id)
    duplicate = litestar(
        empty_database, "users", "create", "--email", "staff@example.com", "--password", "x"
    )
    assert duplicate.exit_code != 0 and "already exists" in duplicate.output

    weak = litestar(
        empty_database, "users", "create", "--email", "weak@example.com", "--password", "short"
    )
    assert weak.exit_code != 0
    # One line (in click's error frame) naming the rule.
    assert any(
        "too weak" in line and "at least 10 characters" in line for line in weak.stderr.splitlines()
    ), weak.stderr
    assert counts(empty_database)["users"] == 1

    agent_id = ok(
        litestar(
            empty_database,
            "agents",
            "create",
            "--owner",
            "staff@example.com",
            "--name",
            "Helper",
            "--agent-type",
            "assistant",
            "--system-prompt",
            "Be brief.",
        )
    ).strip()
    UUID(agent_id)
    unknown_type = litestar(
        empty_database,
        "agents",
        "create",
        "--owner",
        "staff@example.com",
        "--name",
        "Other",
        "--agent-type",
        "nope",
    )
    assert unknown_type.exit_code != 0
    assert counts(empty_database)["agents"] == 1

    first = ok(litestar(empty_database, "seed", "demo"))
    after_first = counts(empty_database)
    second = ok(litestar(empty_database, "seed", "demo"))
    assert "demo token: tc_" in first and first == second
    assert counts(empty_database) == after_first
    assert after_first["threads"] >= 1 and after_first["thread_messages"] >= 1


def test_users_and_tokens_cli(empty_database: str) -> None:
    migrate(empty_database)
    ok(litestar(empty_database, "seed", "demo"))
    listed = ok(litestar(empty_database, "users", "list"))
    assert listed.startswith("demo@example.com\t-\t1 token(s)\t"), listed

    weak = litestar(
        empty_database, "users", "set-password", "--email", "demo@example.com", "--password", "x"
    )
    assert weak.exit_code != 0 and "at least 10 characters" in weak.stderr, weak.stderr
    changed = "new-password-2026"
    ok(litestar(empty_database, "users", "set-password", "--email", "demo@example.com",
                "--password", changed))  # fmt: skip
    assert asyncio.run(_password_works(empty_database, "demo@example.com", changed))
    missing = litestar(empty_database, "users", "set-password", "--email", "no@example.com",
                       "--password", changed)  # fmt: skip
    assert missing.exit_code != 0 and "No user with email no@example.com" in missing.stderr

    [line] = ok(
        litestar(empty_database, "tokens", "list", "--email", "demo@example.com")
    ).splitlines()
    token_id = line.split("\t")[0]
    other = "00000000-0000-0000-0000-000000000000"
    unknown = litestar(empty_database, "tokens", "revoke", "--email", "demo@example.com",
                       "--token-id", other)  # fmt: skip
    assert unknown.exit_code != 0 and f"No live token {other}" in unknown.stderr
    one = ok(litestar(empty_database, "tokens", "revoke", "--email", "demo@example.com",
                      "--token-id", token_id))  # fmt: skip
    assert one.startswith("Revoked 1 token(s)")
    assert ok(litestar(empty_database, "tokens", "list", "--email", "demo@example.com")) == ""
    assert "\t0 token(s)\t" in ok(litestar(empty_database, "users", "list"))
    # `seed demo` issues the demo token again; revoking every token takes it back.
    ok(litestar(empty_database, "seed", "demo"))
    every = ok(litestar(empty_database, "tokens", "revoke", "--email", "demo@example.com"))
    assert every.startswith("Revoked 1 token(s)"), every


def test_cli_errors_name_the_valid_choices_and_drop_unused_groups(empty_database: str) -> None:
    migrate(empty_database)
    ok(litestar(empty_database, "users", "create", "--email", "o@example.com",
                "--password", "pw-1234567890"))  # fmt: skip
    unknown = litestar(empty_database, "agents", "create", "--owner", "o@example.com",
                       "--name", "X", "--agent-type", "nope")  # fmt: skip
    assert unknown.exit_code != 0
    assert "Unknown agent_type 'nope': one of assistant, specialist" in unknown.stderr
    shared = litestar(empty_database, "agents", "create", "--owner", "o@example.com",
                      "--name", "Everyone's", "--agent-type", "assistant", "--shared")  # fmt: skip
    assert shared.exit_code != 0
    assert "Only a staff user's agent can be shared" in shared.stderr
    lost = litestar(empty_database, "agents", "create", "--owner", "o@example.com",
                    "--name", "Lost", "--agent-type", "assistant", "--model", "nowhere/x")  # fmt: skip
    assert lost.exit_code != 0
    assert "Unknown model 'nowhere/x'" in lost.stderr
    assert "Provider List" not in lost.stdout + lost.stderr  # litellm's own hint stays quiet
    ok(litestar(empty_database, "users", "create", "--email", "s@example.com",
                "--password", "pw-1234567890", "--staff"))  # fmt: skip
    ok(litestar(empty_database, "agents", "create", "--owner", "s@example.com",
                "--name", "Everyone's", "--agent-type", "assistant", "--shared"))  # fmt: skip
    commands = ok(litestar(empty_database, "--help"))
    assert "tokens" in commands and "sessions" not in commands


def test_the_console_entry_point_finds_the_staff_commands(tmp_path: Path) -> None:
    """`python -m litestar` from the project root, as staff run it: it discovers the app and
    migrates the database, and a staff command its plugin adds runs."""
    url = sqlite_url(tmp_path)

    def console(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "litestar", *args],
            cwd=PROJECT_ROOT,
            env={**os.environ, "DATABASE_URL": url, "RUNNER_ENABLED": "0"},
            capture_output=True,
            text=True,
            timeout=120,
        )

    upgraded = console("database", "upgrade", "--no-prompt")
    assert upgraded.returncode == 0, upgraded.stderr
    ok(litestar(url, "users", "create", "--email", "o@example.com",
                "--password", "pw-1234567890"))  # fmt: skip
    listed = console("users", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("o@example.com\t-\t0 token(s)\t"), listed.stdout


async def _password_works(database_url: str, email: str, password: str) -> bool:
    from app.accounts.services import authenticate

    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with AsyncSession(engine) as session:
            return await authenticate(session, email, password) is not None
    finally:
        await engine.dispose()
