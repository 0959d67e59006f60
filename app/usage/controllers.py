from __future__ import annotations

from datetime import datetime

from litestar import Request, get
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import User
from app.lib.problems import problems
from app.lib.query_params import require_iso_datetime
from app.settings import Settings
from app.usage.schemas import UsageRead
from app.usage.services import usage_report


class UsageController(SignedInController):
    path = "/api/me/usage"
    tags = ["auth"]

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
        return await usage_report(db_session, current_user.id, settings, since)
