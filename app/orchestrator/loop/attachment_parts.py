"""A user message's attachments as the model reads them (OpenAI content parts).

Images become references the model door resolves after the prompt is fitted
(app/orchestrator/door/images.py): a data URL for a model that reads images, a one-line
stand-in for the others. Only the thread's latest MAX_REPLAYED_IMAGES images are sent
again on later turns; older ones are named in a line of text (their pixels would crowd
out the conversation). Documents are their extracted text with a header naming the file
(and its page count), read in one query for the whole history.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Attachment
from app.orchestrator.door.images import image_reference

MAX_REPLAYED_IMAGES = 8


def _attachments(rows: Iterable[Any]) -> Iterable[dict[str, Any]]:
    for row in rows:
        if row.role == "user" and row.attachments:
            yield from row.attachments
        elif row.role == "tool":
            yield from tool_images(row.tool_activity)


def tool_images(activity: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The images a call returned (an MCP tool's `data.images`: AttachmentRead dicts)."""
    images = ((activity or {}).get("data") or {}).get("images")
    return [a for a in images if isinstance(a, dict)] if isinstance(images, list) else []


def tool_images_message(
    returned: list[tuple[str, dict[str, Any]]], replay: set[str]
) -> dict[str, Any] | None:
    """The images the calls just answered returned, as one user message after their
    results: a chat tool message carries text only, so this is how a model that reads
    images sees a chart or a map a tool made (others get the line naming it)."""
    if not returned:
        return None
    parts: list[dict[str, Any]] = [{"type": "text", "text": "Images the tools above returned:"}]
    for tool, image in returned:
        key, label = str(image["id"]), f"[{tool} returned an image: {image['filename']}]"
        if key in replay:
            parts.append(image_reference(UUID(key), label))
        else:
            parts.append({"type": "text", "text": f"{label} (shown earlier)"})
    return {"role": "user", "content": parts}


def replayed_images(rows: Sequence[Any]) -> set[str]:
    """The ids of the latest images (rows in position order), which the model sees."""
    images = [a["id"] for a in _attachments(rows) if a.get("kind") == "image"]
    return set(images[-MAX_REPLAYED_IMAGES:])


async def document_texts(session: AsyncSession, rows: Sequence[Any]) -> dict[str, str]:
    ids = [UUID(str(a["id"])) for a in _attachments(rows) if a.get("kind") == "document"]
    if not ids:
        return {}
    query = select(Attachment.id, Attachment.text).where(Attachment.id.in_(ids))
    return {str(row.id): row.text or "" for row in await session.execute(query)}


def _image_label(attachment: dict[str, Any]) -> str:
    size = f", {attachment['width']}×{attachment['height']}" if attachment.get("width") else ""
    return f"[The user attached a photo: {attachment['filename']}{size}]"


def _document_part(attachment: dict[str, Any], text: str) -> dict[str, Any]:
    pages = attachment.get("page_count")
    what = f"PDF, {pages} page{'s' if pages != 1 else ''}" if pages is not None else "text"
    header = f"[The user attached a file: {attachment['filename']} ({what})]"
    body = text or "(no text could be read from it)"
    return {"type": "text", "text": f"{header}\n{body}"}


def user_content(
    content: str, attachments: list[dict[str, Any]] | None, texts: dict[str, str], replay: set[str]
) -> str | list[dict[str, Any]]:
    """The user message's `content`: its text alone, or its text and attachments' parts."""
    if not attachments:
        return content
    # A photo sent with nothing to say has no text part (providers refuse an empty one).
    parts: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
    for attachment in attachments:
        key = str(attachment["id"])
        if attachment.get("kind") == "document":
            parts.append(_document_part(attachment, texts.get(key, "")))
        elif key in replay:
            parts.append(image_reference(UUID(key), _image_label(attachment)))
        else:
            parts.append({"type": "text", "text": f"{_image_label(attachment)} (sent earlier)"})
    return parts
