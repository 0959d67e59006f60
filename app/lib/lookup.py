"""The one row a request names: found, or a 404 problem (another user's row is not found)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession

from app.lib.problems import ProblemException


async def one_or_404(
    session: AsyncSession,
    statement: Select[Any],
    what: str,
    params: Mapping[str, Any] | None = None,
) -> Any:
    """The statement's one row, or `404 {what} not found.`"""
    row = await session.scalar(statement, params)
    if row is None:
        raise ProblemException(404, f"{what} not found.")
    return row
