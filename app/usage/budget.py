"""The optional per-user monthly budget (tokens and/or USD): checked when a message
would start a new run, never during one, so a running turn is never cut in half (a run
already going may take the month past its budget; the next message is refused)."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from sqlalchemy.ext.asyncio import AsyncSession

from app.lib.problems import ProblemException
from app.settings import Settings
from app.usage.repository import Totals, usage_since
from app.usage.schemas import UsageBudget


def month_bounds(now: datetime) -> tuple[datetime, datetime]:
    """The UTC calendar month holding `now`: its start and the next one's."""
    start = now.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    if start.month == 12:
        return start, start.replace(year=start.year + 1, month=1)
    return start, start.replace(month=start.month + 1)


def has_budget(settings: Settings) -> bool:
    return bool(settings.user_monthly_token_budget or settings.user_monthly_cost_budget_usd)


def budget_of(settings: Settings, totals: Totals, now: datetime) -> UsageBudget:
    start, end = month_bounds(now)
    return UsageBudget(
        period_start=start,
        resets_at=end,
        tokens_limit=settings.user_monthly_token_budget or None,
        cost_limit_usd=settings.user_monthly_cost_budget_usd or None,
        tokens_used=totals.tokens,
        cost_used_usd=totals.cost_usd,
    )


def spent(settings: Settings, totals: Totals) -> bool:
    tokens, cost = settings.user_monthly_token_budget, settings.user_monthly_cost_budget_usd
    return bool((tokens and totals.tokens >= tokens) or (cost and totals.cost_usd >= cost))


class BudgetSpent(ProblemException):
    """429 with `Retry-After` at the period's end (a problem, like every refusal)."""

    def __init__(self, resets_at: datetime, now: datetime) -> None:
        super().__init__(
            429,
            f"Your monthly model usage budget is spent; it renews on {resets_at:%Y-%m-%d} (UTC).",
        )
        self.headers = {"Retry-After": str(max(1, int((resets_at - now).total_seconds())))}


async def refuse_if_spent(session: AsyncSession, user_id: UUID, settings: Settings) -> None:
    """Raise `BudgetSpent` when the user's month is over budget (no query without one)."""
    if not has_budget(settings):
        return
    now = datetime.now(UTC)
    start, end = month_bounds(now)
    if spent(settings, await usage_since(session, user_id, start)):
        raise BudgetSpent(end, now)
