"""The threads domain's queries: statement builders for threads, runs and messages.

Each function returns a statement (never runs it), so callers compose them (add
columns, a limit, `.scalar_subquery()`) and hot paths can build theirs once with
`bindparam`s. Arguments are values, bind parameters or columns alike.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import CTE, Select, bindparam, case, exists, select

from app.agents.repository import visible_to
from app.db.models import Agent, Run, Thread, ThreadMessage, User
from app.db.models.run import ACTIVE_RUN_STATUSES


# -- threads ------------------------------------------------------------------------------
def owned_thread(thread_id: Any, owner_id: Any, *columns: Any) -> Select[Any]:
    """The thread if `owner_id` owns it (the Thread, or just `columns` of it)."""
    return select(*(columns or (Thread,))).where(
        Thread.id == thread_id, Thread.owner_id == owner_id
    )


# Built once, for the hot paths (every request on a thread, every subscription, every run).
OWNED_THREAD = owned_thread(bindparam("thread_id"), bindparam("owner_id"))
# On the table's own columns (Core): an ORM select of a column costs ~40 µs more per run,
# on every page read and every subscription.
_threads = Thread.__table__
OWNED_LAST_SEQ = select(_threads.c.last_seq).where(
    _threads.c.id == bindparam("thread_id"), _threads.c.owner_id == bindparam("owner_id")
)
# A replay's bound: the thread's last seq and the leaf as of it (one snapshot).
OWNED_LAST_SEQ_AND_LEAF = OWNED_LAST_SEQ.add_columns(_threads.c.current_leaf_id)
LAST_SEQ_AND_LEAF = select(_threads.c.last_seq, _threads.c.current_leaf_id).where(
    _threads.c.id == bindparam("thread_id")
)
# The thread and its agent's type (ORM: the Thread is an instance of the session).
OWNED_THREAD_AND_AGENT_TYPE = (
    select(Thread, Agent.agent_type)
    .join(Agent, Agent.id == Thread.agent_id)
    .where(Thread.id == bindparam("thread_id"), Thread.owner_id == bindparam("owner_id"))
)


# Whether an agent is visible to a user (params `agent_id`, `user_id`): a new thread's check.
AGENT_VISIBLE = select(
    exists().where(Agent.id == bindparam("agent_id"), visible_to(bindparam("user_id")))
)


def current_leaf(thread_id: Any) -> Any:
    """The tip of the thread's current branch (a scalar subquery)."""
    return select(_threads.c.current_leaf_id).where(_threads.c.id == thread_id).scalar_subquery()


_messages = ThreadMessage.__table__
NO_BOUND = 2**31 - 1  # past every position (a 32-bit column)


def branch(start: Any) -> CTE:
    """The branch ending at `start`, walked up by parent (a recursive CTE of `id`,
    `parent_id`, `taken`): the rows before position `bound` (bind parameter) count, at
    most `limit` (bind parameter) of them; rows at or after `bound` are passed over. One
    primary-key probe a row: a page of a long thread costs what a page of a short one does."""
    before = case((_messages.c.position < bindparam("bound"), 1), else_=0)
    first = select(_messages.c.id, _messages.c.parent_id, before.label("taken"))
    path = first.where(_messages.c.id == start).cte("branch", recursive=True)
    up = select(_messages.c.id, _messages.c.parent_id, (path.c.taken + before))
    up = up.where(_messages.c.id == path.c.parent_id, path.c.taken < bindparam("limit"))
    return path.union_all(up)


def in_owned_thread(query: Select[Any], thread_id: Any, owner_id: Any) -> Select[Any]:
    """`query` of messages narrowed to one thread that `owner_id` owns (joins the thread,
    so its columns, e.g. `last_seq`, can be read in the same snapshot)."""
    return query.join(Thread, Thread.id == ThreadMessage.thread_id).where(
        ThreadMessage.thread_id == thread_id, Thread.owner_id == owner_id
    )


# -- runs ---------------------------------------------------------------------------------
def active_run_id(thread_id: Any) -> Select[Any]:
    """The thread's earliest queued or running run (`Thread.id` gives a correlated one)."""
    return (
        select(Run.id)
        .where(Run.thread_id == thread_id, Run.status.in_(ACTIVE_RUN_STATUSES))
        .order_by(Run.created_at, Run.id)
        .limit(1)
    )


def thread_run(thread_id: Any, run_id: Any) -> Select[Any]:
    return select(Run).where(Run.id == run_id, Run.thread_id == thread_id)


def latest_run(thread_id: Any) -> Select[Any]:
    return (
        select(Run)
        .where(Run.thread_id == thread_id)
        .order_by(Run.created_at.desc(), Run.id.desc())
        .limit(1)
    )


def run_triggered_by(message_id: Any) -> Select[Any]:
    return select(Run).where(Run.trigger_message_id == message_id)


# (Thread, Agent, owner User) a run works with: ORM instances (the run's tools may change
# its agent), read once per run.
RUN_CONTEXT = (
    select(Thread, Agent, User)
    .join_from(Thread, Agent, Agent.id == bindparam("agent_id"))
    .join_from(Thread, User, User.id == Thread.owner_id)
    .where(Thread.id == bindparam("thread_id"))
)


SPECIALISTS = (
    select(Agent)
    .where(
        Agent.owner_id == bindparam("owner_id"),
        Agent.agent_type == "specialist",
        Agent.id != bindparam("agent_id"),
    )
    .order_by(Agent.name)
)


# -- messages -----------------------------------------------------------------------------
def thread_message(thread_id: Any, message_id: Any) -> Select[Any]:
    return select(ThreadMessage).where(
        ThreadMessage.id == message_id, ThreadMessage.thread_id == thread_id
    )


def message_by_client_id(thread_id: Any, client_message_id: Any) -> Select[Any]:
    return select(ThreadMessage).where(
        ThreadMessage.thread_id == thread_id,
        ThreadMessage.client_message_id == client_message_id,
    )


def changed_after(query: Select[Any], after_seq: Any) -> Select[Any]:
    """`query` of messages narrowed to those changed after `after_seq`, ascending seq."""
    return query.where(ThreadMessage.seq > after_seq).order_by(ThreadMessage.seq)


def thread_messages_changed_after(thread_id: Any, after_seq: Any) -> Select[Any]:
    return changed_after(
        select(ThreadMessage).where(ThreadMessage.thread_id == thread_id), after_seq
    )


def run_tool_messages(run_id: Any) -> Select[Any]:
    """A run's tool messages in thread order."""
    return (
        select(ThreadMessage)
        .where(ThreadMessage.run_id == run_id, ThreadMessage.role == "tool")
        .order_by(ThreadMessage.position)
    )


def run_messages(run_id: Any) -> Select[Any]:
    """A run's assistant and tool messages (its user message is the trigger) in thread
    order."""
    return (
        select(ThreadMessage)
        .where(ThreadMessage.run_id == run_id, ThreadMessage.role != "user")
        .order_by(ThreadMessage.position)
    )
