"""Live Activities the app manages: register (on a thread, or on one run), list, end,
unregister; push-to-start tokens. Every activity is its owner's alone: another user's is
a 404, as if it did not exist."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from litestar import delete, get, post
from litestar.params import Parameter
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.db.models import LiveActivity, LiveActivityStartToken, Run, User
from app.lib.lookup import one_or_404
from app.lib.pagination import DEFAULT_PAGE_SIZE, PageLimit, page_size
from app.lib.problems import ProblemException, problems
from app.push import live_activities
from app.push.schemas import (
    LiveActivityContentState,
    LiveActivityCreate,
    LiveActivityEnd,
    LiveActivityList,
    LiveActivityRead,
    StartTokenCreate,
    StartTokenRead,
)
from app.settings import Settings
from app.threads import repository as threads_repository
from app.threads import services as threads


def activity_read(activity: LiveActivity) -> LiveActivityRead:
    return LiveActivityRead(
        id=activity.id,
        thread_id=activity.thread_id,
        run_id=activity.run_id,
        scope=activity.scope,  # type: ignore[arg-type]
        environment=activity.environment,  # type: ignore[arg-type]
        created_at=activity.created_at,
        ended_at=activity.ended_at,
    )


def start_token_read(token: LiveActivityStartToken) -> StartTokenRead:
    return StartTokenRead(
        id=token.id,
        environment=token.environment,  # type: ignore[arg-type]
        created_at=token.created_at,
    )


async def _active_run(session: AsyncSession, thread_id: UUID, run_id: UUID) -> Run:
    run = await one_or_404(session, threads_repository.thread_run(thread_id, run_id), "Run")
    if run.status not in live_activities.ACTIVE:
        raise ProblemException(409, "This run has ended: there is nothing to follow.")
    return run


class LiveActivityController(SignedInController):
    path = "/api"
    tags = ["push"]

    @post(
        "/threads/{thread_id:uuid}/live-activity",
        operation_id="RegisterLiveActivity",
        responses=problems(404),
    )
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
        return activity_read(activity)

    @post(
        "/threads/{thread_id:uuid}/runs/{run_id:uuid}/live-activity",
        operation_id="RegisterRunLiveActivity",
        responses=problems(404, 409),
    )
    async def register_run_live_activity(
        self,
        thread_id: UUID,
        run_id: UUID,
        data: LiveActivityCreate,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> LiveActivityRead:
        """Follow this one run (queued or running; 409 once it has ended) with a Live
        Activity: what the app does with the token of an activity a push-to-start began."""
        thread = await threads.get_owned_thread(db_session, current_user, thread_id)
        run = await _active_run(db_session, thread.id, run_id)
        activity = await live_activities.register(
            db_session,
            settings,
            current_user,
            thread,
            data.push_token.lower(),
            data.environment,
            run=run,
        )
        return activity_read(activity)

    @get("/live-activities", operation_id="ListLiveActivities", responses=problems())
    async def list_live_activities(
        self,
        db_session: AsyncSession,
        current_user: User,
        limit: PageLimit = DEFAULT_PAGE_SIZE,
        include_ended: Annotated[
            bool, Parameter(description="also those ended in the last 7 days")
        ] = False,
    ) -> LiveActivityList:
        """Your Live Activities, newest first: open ones (and ended ones on request)."""
        found = await live_activities.list_owned(
            db_session, current_user, include_ended=include_ended, limit=page_size(limit)
        )
        return LiveActivityList(items=[activity_read(a) for a in found])

    @post(
        "/live-activities/{activity_id:uuid}/end",
        operation_id="EndLiveActivity",
        responses=problems(404, 409),
        status_code=200,
    )
    async def end_live_activity(
        self,
        activity_id: UUID,
        data: LiveActivityEnd,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> LiveActivityRead:
        """End it now: one `end` push with the final content state (yours, or the followed
        run's now) and its dismissal date; no pushes after it. 409 if it has ended."""
        activity = await live_activities.get_owned(db_session, current_user, activity_id)
        given = data.content_state
        state = given.to_payload() if isinstance(given, LiveActivityContentState) else None
        activity = await live_activities.end(db_session, settings, activity, state, data.dismiss_at)
        return activity_read(activity)

    @delete(
        "/live-activities/{activity_id:uuid}",
        operation_id="UnregisterLiveActivity",
        responses=problems(404),
    )
    async def unregister_live_activity(
        self, activity_id: UUID, db_session: AsyncSession, current_user: User
    ) -> None:
        """Stop all pushes to this activity's token (the user dismissed it on the phone),
        without an `end` push."""
        activity = await live_activities.get_owned(db_session, current_user, activity_id)
        await live_activities.unregister(db_session, activity)

    @post(
        "/live-activities/push-to-start",
        operation_id="RegisterPushToStartToken",
        responses=problems(),
    )
    async def register_push_to_start_token(
        self,
        data: StartTokenCreate,
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
    ) -> StartTokenRead:
        """Register this install's push-to-start token (iOS 17.2+, once per install;
        idempotent by token): a run you start elsewhere starts a Live Activity here."""
        token = await live_activities.register_start_token(
            db_session, settings, current_user, data.push_token.lower(), data.environment
        )
        return start_token_read(token)

    @delete(
        "/live-activities/push-to-start/{token_id:uuid}",
        operation_id="DeletePushToStartToken",
        responses=problems(404),
    )
    async def delete_push_to_start_token(
        self, token_id: UUID, db_session: AsyncSession, current_user: User
    ) -> None:
        """No more Live Activities started by push on that install."""
        await live_activities.delete_start_token(db_session, current_user, token_id)
