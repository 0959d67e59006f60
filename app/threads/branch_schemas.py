"""What the branch operations take: edit a question, regenerate an answer."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from app.lib.schema import Input
from app.threads.schemas import ClientMessageId, MessageContent

# What to do when a run of the thread is under way: stop it (`cancel`), answer after it
# (`queue`), or refuse (`reject`: 409 naming the run). Unset: as posting a message does,
# the agent type's `double_texting` (`queue`, or `reject`).
IfRunning = Literal["cancel", "queue", "reject"]


class MessageEdit(Input):
    """A new version of a user message: a new branch from the same point, answered by a
    new run; the old version and its branch stay, as a sibling."""

    content: MessageContent
    # Idempotency key: a repeat answers 200 with the version first created (as posting).
    client_message_id: ClientMessageId | None = None
    if_running: IfRunning | None = None


class ReplyRegenerate(Input):
    """Another answer to the same user message: a new run, its reply a sibling of the
    others (the old ones stay, each in its branch)."""

    # Another agent of yours (or a shared one) answers instead of the thread's.
    agent_id: UUID | None = None
    # Idempotency key: a repeat answers 200 with the run first queued.
    client_message_id: ClientMessageId | None = None
    if_running: IfRunning | None = None
