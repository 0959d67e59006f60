from __future__ import annotations

from datetime import UTC, datetime

from litestar import Controller, Request, get
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SECURITY
from app.db.models import User
from app.lib.problems import problems
from app.lib.query_params import require_iso_datetime
from app.settings import Settings
from app.usage.budget import budget_of, has_budget, month_bounds
from app.usage.repository import usage_since
from app.usage.schemas import UsageRead


class UsageController(Controller):
    path = "/api/me/usage"
    tags = ["auth"]
    security = SECURITY

    @get("/", operation_id="GetMyUsage", responses=problems())
    async def get_my_usage(
        self,
        request: Request,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
        since: datetime | None = Parameter(
            default=None,
            description="Count runs created at or after this moment (default: the start "
            "of this UTC month); a time without a zone is UTC.",
        ),
    ) -> UsageRead:
        """Tokens and cost of your runs' model calls since `since`, and your monthly budget."""
        require_iso_datetime(request.query_params, "since")
        now = datetime.now(UTC)
        start = (since.replace(tzinfo=since.tzinfo or UTC)) if since else month_bounds(now)[0]
        totals = await usage_since(db_session, current_user.id, start)
        budget = None
        if has_budget(settings):
            month = await usage_since(db_session, current_user.id, month_bounds(now)[0])
            budget = budget_of(settings, month, now)
        return UsageRead(
            since=start,
            runs=totals.runs,
            input_tokens=totals.input_tokens,
            output_tokens=totals.output_tokens,
            cached_tokens=totals.cached_tokens,
            reasoning_tokens=totals.reasoning_tokens,
            cost_usd=totals.cost_usd,
            budget=budget,
        )
