from __future__ import annotations

from uuid import UUID

from litestar import Controller, post
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SECURITY
from app.db.models import User
from app.lib.problems import problems
from app.push import live_activities
from app.push.schemas import LiveActivityCreate, LiveActivityRead
from app.settings import Settings
from app.threads import services as threads


class LiveActivityController(Controller):
    path = "/api/threads/{thread_id:uuid}/live-activity"
    tags = ["push"]
    security = SECURITY

    @post("/", operation_id="RegisterLiveActivity", responses=problems(404))
    async def register_live_activity(
        self,
        thread_id: UUID,
        data: LiveActivityCreate,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> LiveActivityRead:
        """Follow the thread's current run (or its next one) with a Live Activity: the
        server sends `liveactivity` pushes to this ActivityKit token until the run ends."""
        thread = await threads.get_owned_thread(db_session, current_user, thread_id)
        activity = await live_activities.register(
            db_session, settings, current_user, thread, data.push_token.lower(), data.environment
        )
        return LiveActivityRead(
            id=activity.id,
            thread_id=activity.thread_id,
            run_id=activity.run_id,
            created_at=activity.created_at,
        )
