"""What GET /api/me/usage answers: a user's usage since a moment, and the month's budget."""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.attachments.services import stored_bytes
from app.settings import Settings
from app.usage.budget import budget_of, has_budget, month_bounds
from app.usage.repository import usage_since
from app.usage.schemas import UsageRead


async def usage_report(
    session: AsyncSession, user_id: UUID, settings: Settings, since: datetime | None
) -> UsageRead:
    """Usage since `since` (a time without a zone is UTC; None: the start of this UTC
    month), and the budget of this month when there is one."""
    now = datetime.now(UTC)
    start = since.replace(tzinfo=since.tzinfo or UTC) if since else month_bounds(now)[0]
    totals = await usage_since(session, user_id, start)
    budget = None
    if has_budget(settings):
        month = await usage_since(session, user_id, month_bounds(now)[0])
        budget = budget_of(settings, month, now)
    stored = await stored_bytes(session, user_id)
    return UsageRead(since=start, **asdict(totals), attachment_bytes=stored, budget=budget)
