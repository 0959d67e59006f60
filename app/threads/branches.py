"""Branches: edit a question, regenerate an answer, switch branch, delete a branch.

A thread's messages are a tree (`parent_id`); the thread shows, and its model reads, the
branch ending at its current leaf. Editing a user message adds a version beside it (same
parent) answered by a new run; regenerating queues a new run for the same user message,
whose reply becomes a version beside the old ones. Both make the new branch current.

While a run of the thread is under way, a request says what to do (`if_running`), by
default as posting a message does (the agent type's `double_texting`): `reject` answers
409; `cancel` stops the runs under way; `queue` lets them finish. In both of the latter the
new branch becomes current when its run starts (the run carries `switch_to`): a run
writes below the current leaf, so the one still finishing must end on its own branch
first. The effects of earlier calls (a task created) are not undone. A switch follows
`if_running` too: under `queue` (or `cancel` of a run still stopping) it is kept for the
end of the runs under way (app/threads/pending_switch.py).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from uuid_utils.compat import uuid7

from app.db import direct
from app.db.models import Run, Thread, ThreadMessage
from app.db.models.run import ACTIVE_RUN_STATUSES
from app.lib.problems import ProblemException
from app.threads import repository
from app.threads.branch_schemas import IfRunning, MessageEdit, ReplyRegenerate
from app.threads.branch_tree import MESSAGE, SUBTREE_IDS, newest_below, stored
from app.threads.messages import find_duplicate, rejects_double_texting
from app.threads.pending_switch import hold, lock_active_runs
from app.threads.records import StoredMessage
from app.threads.runs import queue_run, request_cancel
from app.threads.writer import (
    create_message,
    delete_messages,
    lock_thread,
    move_leaf,
    record_versions,
    versions_of,
)


async def _policy(
    session: AsyncSession,
    thread: Thread,
    agent_type: str | None,
    if_running: IfRunning | None,
    active: list[Run],
) -> IfRunning:
    """What the request does about the runs under way: `cancel` or `queue`; `reject`
    (asked, or the agent type refuses double texting): 409 naming the run."""
    rejects = await rejects_double_texting(session, thread, agent_type)
    policy = if_running or ("reject" if rejects else "queue")
    if policy == "reject" or (policy == "queue" and rejects):
        raise ProblemException(
            409,
            "The agent is still working on the previous message.",
            active_run_id=str(active[0].id),
        )
    return policy


async def _make_way(
    session: AsyncSession,
    thread: Thread,
    agent_type: str | None,
    if_running: IfRunning | None,
    active: list[Run],
) -> bool:
    """Apply the request's policy to the runs under way (`lock_active_runs`'); whether
    one is still under way after it."""
    if not active:
        return False
    policy = await _policy(session, thread, agent_type, if_running, active)
    await hold(session, active, None)  # this request's branch replaces a switch kept
    if policy == "cancel":
        return bool(await _cancel(session, active))
    return True


async def _cancel(session: AsyncSession, active: list[Run]) -> list[Run]:
    """Cancel the runs: a queued one ends now, a running one is asked to stop; those
    still under way (stopping)."""
    ended = [await request_cancel(session, run) for run in active]
    return [run for run in ended if run.status in ACTIVE_RUN_STATUSES]


async def edit_message(
    session: AsyncSession,
    thread: Thread,
    agent_type: str | None,
    message_id: UUID,
    data: MessageEdit,
) -> tuple[StoredMessage | ThreadMessage, Run, bool]:
    """A new version of a user message and the run that answers it; `created` False for
    a repeated client id (the version first created and its run)."""
    original = await stored(session, thread.id, message_id)
    if original.role != "user":
        raise ProblemException(409, "Only a user message can be edited; regenerate a reply.")
    active = await lock_active_runs(session, thread)
    if data.client_message_id is not None:
        duplicate = await find_duplicate(session, thread, data.client_message_id)
        if duplicate is not None:
            return duplicate[0], duplicate[1], False
    busy = await _make_way(session, thread, agent_type, data.if_running, active)
    run_id = uuid7()
    fields = {"content": data.content, "client_message_id": data.client_message_id}
    version = await create_message(
        session, thread.id, role="user", run_id=run_id, parent_id=original.parent_id, **fields
    )
    run = await _answer(session, thread, version, busy, run_id=run_id)
    return version, run, True


async def regenerate_reply(
    session: AsyncSession,
    thread: Thread,
    agent_type: str | None,
    message_id: UUID,
    data: ReplyRegenerate,
) -> tuple[StoredMessage, Run, bool]:
    """A new run answering the user message `message_id` is (or answers): the user message
    and the run; `created` False for a repeated client id."""
    question = await _question_of(session, thread.id, await stored(session, thread.id, message_id))
    active = await lock_active_runs(session, thread)
    if data.client_message_id is not None:
        for run in await session.scalars(repository.run_triggered_by(question.id)):
            if (run.options or {}).get("client_message_id") == data.client_message_id:
                return question, run, False
    busy = await _make_way(session, thread, agent_type, data.if_running, active)
    options = {"client_message_id": data.client_message_id} if data.client_message_id else {}
    run = await _answer(session, thread, question, busy, options=options, agent_id=data.agent_id)
    return question, run, True


async def _question_of(
    session: AsyncSession, thread_id: UUID, message: StoredMessage
) -> StoredMessage:
    """The user message a reply answers: its run's trigger (itself, for a user message)."""
    if message.role == "user":
        return message
    run = await session.get(Run, message.run_id) if message.run_id else None
    if run is None or run.trigger_message_id is None:
        raise ProblemException(409, "This message answers no user message.")
    return await stored(session, thread_id, run.trigger_message_id)


async def _answer(
    session: AsyncSession,
    thread: Thread,
    question: StoredMessage,
    busy: bool,
    *,
    run_id: UUID | None = None,
    options: dict[str, Any] | None = None,
    agent_id: UUID | None = None,
) -> Run:
    """Queue the run answering `question` below it; the branch current now, or when the
    run starts if another is still under way."""
    options = dict(options or {})
    if busy:
        options["switch_to"] = str(question.id)
    else:
        await move_leaf(session, thread.id, question.id)
    return await queue_run(
        session,
        thread,
        run_id=run_id or uuid7(),
        trigger_message_id=question.id,
        options=options or None,
        agent_id=agent_id,
    )


async def follow_branch(
    session: AsyncSession, thread_id: UUID, message_id: str, run_id: UUID
) -> None:
    """A run that waited for another makes its branch current as it starts (`switch_to`);
    a message deleted meanwhile leaves the thread as it is, and so does a parked run taken
    up again (it wrote its calls on its branch, which stayed current: no switch while a
    run is under way)."""
    if await session.scalar(repository.run_messages(run_id).limit(1)) is not None:
        return
    params = {"thread_id": thread_id, "message_id": UUID(message_id)}
    rows = (await direct.execute(session, MESSAGE, params)).mappings()
    if rows:
        await move_leaf(session, thread_id, rows[0]["id"])


async def _refuse_under_a_run(
    session: AsyncSession, thread_id: UUID, doomed: list[UUID], leaf_id: UUID | None
) -> None:
    """409 when a run under way writes in the doomed messages: it answers one of them, or
    it writes below the thread's current leaf and the leaf is one. Another branch's
    messages go while a run answers elsewhere."""
    gone = set(doomed)
    active = select(Run.id, Run.trigger_message_id).where(
        Run.thread_id == thread_id, Run.status.in_(ACTIVE_RUN_STATUSES)
    )
    for run_id, trigger_id in (await session.execute(active)).all():
        if trigger_id in gone or leaf_id in gone:
            raise ProblemException(
                409,
                "A run of this thread writes in this branch: cancel it first, or delete the "
                "branch once it ended.",
                active_run_id=str(run_id),
            )


async def switch_branch(
    session: AsyncSession,
    thread: Thread,
    agent_type: str | None,
    message_id: UUID,
    if_running: IfRunning | None,
) -> bool:
    """Show the branch through `message_id`, up to its newest message: now (True), or,
    while a run is under way, as `if_running` says (False: kept for the end of the runs
    under way, app/threads/pending_switch.py)."""
    active = await lock_active_runs(session, thread)
    await stored(session, thread.id, message_id)
    if active:
        policy = await _policy(session, thread, agent_type, if_running, active)
        await hold(session, active, None)
        if policy == "cancel":
            active = await _cancel(session, active)
    if active:
        await hold(session, active, message_id)
        return False
    await move_leaf(session, thread.id, await newest_below(session, thread.id, message_id))
    return True


async def delete_branch(session: AsyncSession, thread: Thread, message_id: UUID) -> None:
    """Delete a message and every message below it. The versions beside it stay (their
    counts change); if the thread showed the deleted branch it shows the newest version
    left, else the message above."""
    await lock_thread(session, thread.id)
    message = await stored(session, thread.id, message_id)
    params = {"thread_id": thread.id, "message_id": message_id}
    doomed = [row[0] for row in (await direct.execute(session, SUBTREE_IDS, params)).rows]
    leaf_id = await session.scalar(select(Thread.current_leaf_id).where(Thread.id == thread.id))
    await _refuse_under_a_run(session, thread.id, doomed, leaf_id)
    await delete_messages(session, thread.id, doomed)
    versions = await versions_of(session, thread.id, message.parent_id)
    if versions:
        await record_versions(session, versions[0])
    if leaf_id in doomed:
        rest = versions[-1].id if versions else message.parent_id
        leaf_id = None if rest is None else await newest_below(session, thread.id, rest)
    # Moved even when it stays: the move's frame tells every device what was deleted.
    await move_leaf(session, thread.id, leaf_id, doomed)
