"""Declarative base and column types shared by every table."""

from __future__ import annotations

from advanced_alchemy.base import UUIDv7AuditBase, orm_registry
from advanced_alchemy.types import GUID, DateTimeUTC, JsonB

Base = UUIDv7AuditBase
metadata = orm_registry.metadata

__all__ = ("GUID", "Base", "DateTimeUTC", "JsonB", "metadata")
