"""One row per live runner process, renewed every half second (see the run worker).

A Core table: rows are only ever written and read by prebuilt statements, never loaded
as objects, and a heartbeat needs no id or audit columns.
"""

from __future__ import annotations

from sqlalchemy import Column, String, Table

from app.db.base import DateTimeUTC, metadata

runner_heartbeats = Table(
    "runner_heartbeats",
    metadata,
    Column("owner", String(100), primary_key=True),  # the owner of its runs' leases
    Column("beat_at", DateTimeUTC(timezone=True), nullable=False),
)
