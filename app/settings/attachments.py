"""Settings of attachments: where files are stored, how large each type may be, each
user's quota, how long an upload no message references is kept, and which models see
images."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from msgspec import Meta

from app.settings.base import PROJECT_ROOT, NonNegativeInt, PositiveInt

_MB = 1024 * 1024


@dataclass(frozen=True)
class AttachmentSettings:
    attachments_dir: Annotated[
        str,
        Meta(description="directory of the stored attachments (relative: to the project root)"),
    ] = "var/attachments"
    attachments_storage: Annotated[
        Literal["local", "s3"],
        Meta(description="where attachment bytes live: `local` (ATTACHMENTS_DIR) or `s3`"),
    ] = "local"
    s3_endpoint: Annotated[
        str | None,
        Meta(description="S3-compatible endpoint URL (R2, MinIO); unset: AWS S3 of S3_REGION"),
    ] = None
    s3_bucket: Annotated[str, Meta(description="bucket of the attachments (storage `s3`)")] = ""
    s3_region: Annotated[str, Meta(description="region of the bucket")] = "us-east-1"
    s3_access_key_id: Annotated[
        str | None, Meta(description="S3 access key id (secret: never logged or returned)")
    ] = None
    s3_secret_access_key: Annotated[
        str | None, Meta(description="S3 secret access key (secret: never logged or returned)")
    ] = None
    s3_presign_seconds: Annotated[
        PositiveInt,
        Meta(description="seconds a presigned download URL of one attachment stays valid"),
    ] = 300
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
    attachment_processing_workers: Annotated[
        PositiveInt,
        Meta(
            description="threads that clean images and read documents, per process (a 12-megapixel "
            "photo takes ~190 MB while it is cleaned, and the thread keeps it); the others wait"
        ),
    ] = 1
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
