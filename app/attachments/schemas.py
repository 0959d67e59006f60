from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from app.lib.schema import Schema

AttachmentKind = Literal["image", "document"]


class AttachmentRead(Schema, kw_only=True):
    """A stored file: an upload, or an image a tool returned. Its bytes:
    `GET /api/attachments/{id}/content`; an image's thumbnail: `…/thumbnail`."""

    id: UUID
    kind: AttachmentKind
    content_type: str  # as served: HEIC is served (and shown to models) as JPEG
    filename: str
    size_bytes: int
    width: int | None = None  # images: upright, after orientation
    height: int | None = None
    page_count: int | None = None  # PDFs
    blurhash: str | None = None  # images: the app's placeholder while the thumbnail loads
    # In a message: whether the model that answered it saw this image (false: it read only
    # a line naming the file; tell the user). Absent until a run answers the message.
    model_saw: bool | None = None
    created_at: datetime
