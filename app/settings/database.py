"""Settings of the database: where it is, its connections and their timeouts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from msgspec import Meta

from app.settings.base import (
    PROJECT_ROOT,
    NonNegativeFloat,
    PositiveFloat,
    PositiveInt,
)

DEFAULT_SQLITE_PATH = PROJECT_ROOT / "var" / "app.sqlite3"


@dataclass(frozen=True)
class DatabaseSettings:
    database_url: Annotated[
        str, Meta(description="SQLAlchemy async URL; `postgresql+asyncpg://…` in production")
    ] = f"sqlite+aiosqlite:///{DEFAULT_SQLITE_PATH}"
    database_echo: Annotated[bool, Meta(description="log every SQL statement")] = False
    # The app's, the runner's and the database lane's pools together (app/db/config.py splits it).
    database_max_connections: Annotated[
        PositiveInt,
        Meta(
            description="database connections this process may hold at once (app + runner + database lane)"
        ),
    ] = 20
    database_pool_timeout_seconds: Annotated[
        PositiveFloat,
        Meta(
            description="longest wait for a free database connection before answering 503",
            extra={"env": "DATABASE_POOL_TIMEOUT"},
        ),
    ] = 30.0
    database_statement_timeout_seconds: Annotated[
        NonNegativeFloat,
        Meta(
            description="PostgreSQL: longest wait for one statement's answer; past it the "
            "statement fails as the database being unavailable (503) and its connection "
            "is dropped, so a host cut off without a reset does not wait on a dead socket "
            "(0: no limit; migrations have none)",
            extra={"env": "DATABASE_STATEMENT_TIMEOUT"},
        ),
    ] = 30.0
    database_idle_in_transaction_timeout_seconds: Annotated[
        NonNegativeFloat,
        Meta(
            description="PostgreSQL: the server ends a session that left a transaction "
            "open and silent this long (a host cut off between a write and its COMMIT), "
            "releasing its locks: how long a cut-off host's run can wait before it is "
            "taken over. Set by the app on each of its connections (0: the server's "
            "setting)",
        ),
    ] = 15.0

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")
