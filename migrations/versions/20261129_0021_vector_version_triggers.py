"""memory_vector_versions bumped by triggers on memory_vectors

The per-process cache of a user's vectors trusts the user's version row; a writer that
does not bump it (a process still running the code before 0019, during a rolling
deploy) left the caches of the others stale. Triggers make the bump the database's: any
insert, update or delete of a vector, by any code, bumps its owner's row in the same
transaction. Users with vectors but no row (written before 0019) get one now, so a
delete, which only bumps an existing row, always finds it (an insert makes it).

Deletes only bump (never insert): a vector deleted by its user's own deletion cascades
here, and a row written for that user would break the foreign key.

PostgreSQL: statement-level triggers over the transition tables, so a statement
touching many vectors (a user's memories all deleted) bumps each owner once, at its
end, in owner order (concurrent bumps lock the rows in one order). SQLite has only row
triggers; its writers take turns, so no lock order is needed.

Revision ID: 0021_vector_version_triggers
Revises: 0019_memory_vector_versions
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0021_vector_version_triggers"
down_revision: str | None = "0019_memory_vector_versions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BACKFILL = (
    "INSERT INTO memory_vector_versions (owner_id, version, updated_at) "
    "SELECT DISTINCT owner_id, 1, {now} FROM memory_vectors WHERE owner_id NOT IN "
    "(SELECT owner_id FROM memory_vector_versions)"
)

# SQLAlchemy's SQLite DATETIME text (microseconds: strftime's %f has milliseconds).
SQLITE_NOW = "strftime('%Y-%m-%d %H:%M:%f000', 'now')"
SQLITE_UPSERT = (
    "INSERT INTO memory_vector_versions (owner_id, version, updated_at) "
    f"VALUES (new.owner_id, 1, {SQLITE_NOW}) ON CONFLICT (owner_id) DO UPDATE SET "
    "version = memory_vector_versions.version + 1, updated_at = excluded.updated_at;"
)
SQLITE_BUMP_OLD = (
    "UPDATE memory_vector_versions SET version = version + 1, "
    f"updated_at = {SQLITE_NOW} WHERE owner_id = old.owner_id"
)
SQLITE_UP = [
    "CREATE TRIGGER memory_vectors_version_insert AFTER INSERT ON memory_vectors "
    f"BEGIN {SQLITE_UPSERT} END",
    "CREATE TRIGGER memory_vectors_version_update AFTER UPDATE ON memory_vectors "
    f"BEGIN {SQLITE_UPSERT} {SQLITE_BUMP_OLD} AND old.owner_id IS NOT new.owner_id; END",
    "CREATE TRIGGER memory_vectors_version_delete AFTER DELETE ON memory_vectors "
    f"BEGIN {SQLITE_BUMP_OLD}; END",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS memory_vectors_version_delete",
    "DROP TRIGGER IF EXISTS memory_vectors_version_update",
    "DROP TRIGGER IF EXISTS memory_vectors_version_insert",
]

PG_FUNCTION = """
CREATE FUNCTION memory_vectors_bump_versions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    owners uuid[];
    bumped uuid;
BEGIN
    IF TG_OP = 'DELETE' THEN
        owners := ARRAY(SELECT DISTINCT owner_id FROM old_rows ORDER BY 1);
        FOREACH bumped IN ARRAY owners LOOP
            UPDATE memory_vector_versions SET version = version + 1, updated_at = now()
            WHERE owner_id = bumped;
        END LOOP;
        RETURN NULL;
    ELSIF TG_OP = 'UPDATE' THEN
        owners := ARRAY(SELECT owner_id FROM new_rows UNION SELECT owner_id FROM old_rows
                        ORDER BY 1);
    ELSE
        owners := ARRAY(SELECT DISTINCT owner_id FROM new_rows ORDER BY 1);
    END IF;
    FOREACH bumped IN ARRAY owners LOOP
        INSERT INTO memory_vector_versions AS v (owner_id, version, updated_at)
        VALUES (bumped, 1, now())
        ON CONFLICT (owner_id) DO UPDATE SET version = v.version + 1, updated_at = now();
    END LOOP;
    RETURN NULL;
END
$$
"""
# One event per trigger (PostgreSQL allows transition tables only so); the function
# reads the tables its event has (plpgsql plans a query when it first runs it).
PG_TRIGGERS = [
    "CREATE TRIGGER memory_vectors_version_insert AFTER INSERT ON memory_vectors "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memory_vectors_bump_versions()",
    "CREATE TRIGGER memory_vectors_version_update AFTER UPDATE ON memory_vectors "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memory_vectors_bump_versions()",
    "CREATE TRIGGER memory_vectors_version_delete AFTER DELETE ON memory_vectors "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT "
    "EXECUTE FUNCTION memory_vectors_bump_versions()",
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS memory_vectors_version_delete ON memory_vectors",
    "DROP TRIGGER IF EXISTS memory_vectors_version_update ON memory_vectors",
    "DROP TRIGGER IF EXISTS memory_vectors_version_insert ON memory_vectors",
    "DROP FUNCTION IF EXISTS memory_vectors_bump_versions()",
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(BACKFILL.format(now="now()"))
        op.execute(PG_FUNCTION)
        for statement in PG_TRIGGERS:
            op.execute(statement)
    else:
        op.execute(BACKFILL.format(now=SQLITE_NOW))
        for statement in SQLITE_UP:
            op.execute(statement)


def downgrade() -> None:
    statements = PG_DOWN if op.get_bind().dialect.name == "postgresql" else SQLITE_DOWN
    for statement in statements:
        op.execute(statement)
