"""memory full-text search

PostgreSQL: a GIN index on the same tsvector expression app/memories/search.py queries.
SQLite: an FTS5 table kept in step with `memories` by triggers (a standalone table keyed
by memory id: external-content FTS would key on the implicit rowid, which VACUUM may
renumber on a table whose primary key is not an INTEGER).

Revision ID: 0002_memory_search
Revises: f37c6ba77ee5
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002_memory_search"
down_revision: str | None = "f37c6ba77ee5"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PG_INDEX = (
    "CREATE INDEX ix_memories_search ON memories USING gin "
    "(to_tsvector('english'::regconfig, (coalesce(key, '') || ' ' || content)))"
)
FTS_ROW = "(new.id, coalesce(new.key, ''), new.content)"
SQLITE_UP = [
    "CREATE VIRTUAL TABLE memories_fts USING fts5("
    "memory_id UNINDEXED, key, content, tokenize = 'porter unicode61')",
    "INSERT INTO memories_fts (memory_id, key, content) "
    "SELECT id, coalesce(key, ''), content FROM memories",
    "CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN "
    f"INSERT INTO memories_fts (memory_id, key, content) VALUES {FTS_ROW}; END",
    "CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN "
    "DELETE FROM memories_fts WHERE memory_id = old.id; END",
    "CREATE TRIGGER memories_fts_update AFTER UPDATE OF key, content ON memories BEGIN "
    "DELETE FROM memories_fts WHERE memory_id = old.id; "
    f"INSERT INTO memories_fts (memory_id, key, content) VALUES {FTS_ROW}; END",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS memories_fts_update",
    "DROP TRIGGER IF EXISTS memories_fts_delete",
    "DROP TRIGGER IF EXISTS memories_fts_insert",
    "DROP TABLE IF EXISTS memories_fts",
]


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute(PG_INDEX)
    elif dialect == "sqlite":
        for statement in SQLITE_UP:
            op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_memories_search")
    elif dialect == "sqlite":
        for statement in SQLITE_DOWN:
            op.execute(statement)
