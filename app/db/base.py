"""Declarative base and column types shared by every table."""

from __future__ import annotations

from advanced_alchemy.base import UUIDv7AuditBase, orm_registry
from advanced_alchemy.types import GUID, DateTimeUTC
from sqlalchemy import JSON
from sqlalchemy.dialects.postgresql import JSONB

Base = UUIDv7AuditBase
metadata = orm_registry.metadata
# advanced-alchemy's JsonB as it is on SQLite and PostgreSQL (the DDL the migrations
# made): its Oracle variant calls `sqlalchemy.util.portable_instancemethod`, which
# SQLAlchemy 2.1 no longer has, when a table with the column is defined.
JsonB = JSON().with_variant(JSONB(), "postgresql")

__all__ = ("GUID", "Base", "DateTimeUTC", "JsonB", "metadata")
