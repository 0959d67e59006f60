"""Attachments belong to a user: uploaded, looked up (another user's: 404), referenced
by one message, deleted with it."""

from __future__ import annotations

import asyncio
from typing import Any, BinaryIO
from uuid import UUID

import msgspec
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from uuid_utils.compat import uuid7

from app.attachments import processing
from app.attachments.schemas import AttachmentRead
from app.attachments.sniffing import kind_of
from app.attachments.storage import Storage, object_keys
from app.db.models import Attachment, ThreadMessage
from app.db.outbox import on_commit
from app.lib.problems import ProblemException
from app.settings import Settings

FILENAME_MAX = 255


def attachment_read(attachment: Attachment) -> AttachmentRead:
    return msgspec.convert(attachment, AttachmentRead, from_attributes=True)


def snapshot(attachment: Attachment) -> dict[str, Any]:
    """The attachment as a message row keeps it (and every read and frame shows it)."""
    return msgspec.to_builtins(attachment_read(attachment))


def clean_filename(name: str | None, content_type: str) -> str:
    """The client's name without any path, bounded; a HEIC served as JPEG says `.jpg`."""
    base = (name or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    base = "".join(ch for ch in base if ch.isprintable())[:FILENAME_MAX] or "file"
    if content_type == "image/jpeg" and base.lower().endswith((".heic", ".heif")):
        base = base.rsplit(".", 1)[0] + ".jpg"
    return base


async def stored_bytes(session: AsyncSession, owner_id: UUID) -> int:
    query = select(func.coalesce(func.sum(Attachment.stored_bytes), 0)).where(
        Attachment.owner_id == owner_id
    )
    return int(await session.scalar(query) or 0)


async def _refuse_past_limits(
    session: AsyncSession, owner_id: UUID, size: int, source_type: str, settings: Settings
) -> None:
    limit = processing.limit_for(source_type, settings)
    if size > limit:
        raise ProblemException(
            413, f"The file is larger than {limit} bytes, the limit for its type."
        )
    quota = settings.user_attachment_quota_bytes
    if quota and await stored_bytes(session, owner_id) + size > quota:
        raise ProblemException(
            413, f"Your attachments would take more than your {quota} bytes: delete some first."
        )


async def upload(
    session: AsyncSession,
    storage: Storage,
    owner_id: UUID,
    source: BinaryIO,
    filename: str | None,
    settings: Settings,
) -> Attachment:
    """Sniff, check, clean and store an upload; the row is flushed (not committed)."""
    source_type = processing.sniffed_type(source)
    await _refuse_past_limits(session, owner_id, processing.size_of(source), source_type, settings)
    attachment_id = uuid7()
    stored = await processing.store_upload(storage, attachment_id, source, source_type, settings)
    attachment = Attachment(
        id=attachment_id,
        owner_id=owner_id,
        kind=kind_of(source_type),
        filename=clean_filename(filename, stored.content_type),
        **{name: getattr(stored, name) for name in _STORED_FIELDS},
    )
    session.add(attachment)
    try:
        await session.flush()
    except BaseException:
        await storage.delete(stored.objects)
        raise
    return attachment


_STORED_FIELDS = (
    "content_type",
    "source_type",
    "size_bytes",
    "stored_bytes",
    "width",
    "height",
    "page_count",
    "blurhash",
    "text",
)


async def get_owned(session: AsyncSession, owner_id: UUID, attachment_id: UUID) -> Attachment:
    query = select(Attachment).where(
        Attachment.id == attachment_id, Attachment.owner_id == owner_id
    )
    attachment = await session.scalar(query)
    if attachment is None:
        raise ProblemException(404, "Attachment not found.")
    return attachment


async def unsent_attachments(
    session: AsyncSession, owner_id: UUID, attachment_ids: list[UUID]
) -> list[Attachment]:
    """The attachments a new message is to reference, in the order given: each must be
    the user's (else 404) and in no message yet (else 409)."""
    if len(set(attachment_ids)) != len(attachment_ids):
        raise ProblemException(400, "An attachment is listed twice.")
    query = select(Attachment).where(
        Attachment.id.in_(attachment_ids), Attachment.owner_id == owner_id
    )
    found = {row.id: row for row in await session.scalars(query)}
    missing = [str(i) for i in attachment_ids if i not in found]
    if missing:
        raise ProblemException(404, f"Attachment not found: {', '.join(missing)}.")
    used = [str(i) for i in attachment_ids if found[i].message_id is not None]
    if used:
        raise ProblemException(409, f"Already sent in a message: {', '.join(used)}.")
    return [found[i] for i in attachment_ids]


async def mark_sent(session: AsyncSession, attachment_ids: list[UUID], message_id: UUID) -> None:
    """Reference the attachments from the message; conditional, so of two messages
    claiming one upload at once only one wins (the other's transaction rolls back)."""
    claim = (
        update(Attachment)
        .where(Attachment.id.in_(attachment_ids), Attachment.message_id.is_(None))
        .values(message_id=message_id)
        .execution_options(synchronize_session=False)
    )
    result = await session.execute(claim)
    if result.rowcount != len(attachment_ids):  # type: ignore[attr-defined]
        raise ProblemException(409, "An attachment was sent in another message meanwhile.")


async def delete_objects(storage: Storage, attachment_ids: list[UUID]) -> None:
    """The stored objects of deleted attachments (after their rows' delete committed)."""
    await storage.delete([key for i in attachment_ids for key in object_keys(i)])


async def delete_unsent(session: AsyncSession, storage: Storage, attachment: Attachment) -> None:
    """The row now, its objects once the delete committed (a failed commit keeps both)."""
    attachment_id = attachment.id
    await session.delete(attachment)
    await session.flush()
    delete_after_commit(session, storage, [attachment_id])


_deleting: set[asyncio.Task[None]] = set()  # held until done (the loop keeps weak refs)


async def deletions_settled() -> None:
    """Wait for the objects' deletions under way (a server's stop, a test)."""
    await asyncio.gather(*_deleting, return_exceptions=True)


def delete_after_commit(
    session: AsyncSession, storage: Storage, attachment_ids: list[UUID]
) -> None:
    """Delete the objects once the rows' delete commits: a rolled-back delete keeps
    them; a crash in between leaves orphans, which the sweep removes."""
    if not attachment_ids:
        return

    def start() -> None:
        task = asyncio.get_running_loop().create_task(delete_objects(storage, attachment_ids))
        _deleting.add(task)
        task.add_done_callback(_deleting.discard)

    on_commit(session, start)


async def ids_in_thread(session: AsyncSession, thread_id: UUID) -> list[UUID]:
    """The attachments the thread's messages reference (deleted with the thread)."""
    query = (
        select(Attachment.id)
        .join(ThreadMessage, ThreadMessage.id == Attachment.message_id)
        .where(ThreadMessage.thread_id == thread_id)
    )
    return list(await session.scalars(query))


async def mark_tool_image(
    session: AsyncSession, attachment: Attachment, thread_id: UUID, tool_call_id: str
) -> None:
    """A tool's image belongs to the call's message (deleted with it, never expired)."""
    query = select(ThreadMessage.id).where(
        ThreadMessage.thread_id == thread_id, ThreadMessage.tool_call_id == tool_call_id
    )
    attachment.message_id = await session.scalar(query.limit(1))
    await session.flush()
