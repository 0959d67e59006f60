"""Settings of attachments: where files are stored, how large each type may be, each
user's quota, how long an upload no message references is kept, and which models see
images."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from msgspec import Meta

from app.settings.base import PROJECT_ROOT, NonNegativeInt, PositiveInt

_MB = 1024 * 1024


@dataclass(frozen=True)
class AttachmentSettings:
    attachments_dir: Annotated[
        str,
        Meta(description="directory of the stored attachments (relative: to the project root)"),
    ] = "var/attachments"
    attachment_image_max_bytes: Annotated[
        PositiveInt,
        Meta(description="largest image upload (JPEG, PNG, HEIC/HEIF, WebP, GIF); past it 413"),
    ] = 20 * _MB
    attachment_image_max_pixels: Annotated[
        PositiveInt,
        Meta(description="most pixels an uploaded image may decode to (decompression bombs: 415)"),
    ] = 50_000_000
    attachment_pdf_max_bytes: Annotated[
        PositiveInt, Meta(description="largest PDF upload; past it 413")
    ] = 20 * _MB
    attachment_text_max_bytes: Annotated[
        PositiveInt, Meta(description="largest plain-text upload; past it 413")
    ] = 1 * _MB
    attachment_text_max_chars: Annotated[
        PositiveInt,
        Meta(description="characters of a document's text the model reads (extracted once)"),
    ] = 20_000
    user_attachment_quota_bytes: Annotated[
        NonNegativeInt,
        Meta(description="bytes of attachments a user may store (0: no quota); past it 413"),
    ] = 1024 * _MB
    attachment_unreferenced_hours: Annotated[
        PositiveInt,
        Meta(description="hours an upload no message references is kept before it expires"),
    ] = 24
    llm_vision_models: Annotated[
        tuple[str, ...],
        Meta(
            description="models (as agents name them) that read images, besides those "
            "litellm's model map says do; the others get a short text instead"
        ),
    ] = ()

    @property
    def attachments_path(self) -> Path:
        return PROJECT_ROOT / self.attachments_dir  # an absolute directory stays as it is

    @property
    def attachment_max_bytes(self) -> int:
        """The largest upload of any type: the upload route's body limit."""
        return max(
            self.attachment_image_max_bytes,
            self.attachment_pdf_max_bytes,
            self.attachment_text_max_bytes,
        )
