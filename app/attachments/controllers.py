from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any
from urllib.parse import quote
from uuid import UUID

from litestar import Controller, delete, get, post
from litestar.datastructures import UploadFile
from litestar.di import Provide
from litestar.enums import RequestEncodingType
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import Body
from litestar.response import Redirect, Response, Stream
from sqlalchemy.ext.asyncio import AsyncSession

from app.accounts.deps import SignedInController
from app.attachments import services
from app.attachments import storage as keys
from app.attachments.schemas import AttachmentRead
from app.attachments.storage import SignsDownloads, Storage
from app.db.models import Attachment, User
from app.lib.problems import ProblemException, problems
from app.settings import Settings

MULTIPART_OVERHEAD = 64 * 1024  # boundaries and part headers around the largest file


@dataclass
class AttachmentUpload:
    """`multipart/form-data` with one part, `file` (its filename is kept for downloads)."""

    file: UploadFile


def _content_disposition(attachment: Attachment, inline: bool) -> str:
    """Images inline (the app shows them), documents always as a download; the name
    quoted (RFC 6266), so nothing in it can end the header."""
    kind = "inline" if inline else "attachment"
    ascii_name = attachment.filename.encode("ascii", "replace").decode().replace('"', "'")
    return f"{kind}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(attachment.filename)}"


_BYTES = ResponseSpec(None, description="The file's bytes", media_type="application/octet-stream")
_SIGNED = ResponseSpec(
    None,
    description="With object storage (S3): `Location` is a short-lived URL of this one "
    "object (`S3_PRESIGN_SECONDS`); follow it without the Authorization header "
    "(URLSession does so by itself)",
)
_DOWNLOAD = {200: _BYTES, 307: _SIGNED, **problems(404)}


async def provide_owned_attachment(
    attachment_id: UUID, db_session: AsyncSession, current_user: User
) -> Attachment:
    """The path's attachment if it is the caller's (404 otherwise, as for an unknown id)."""
    return await services.get_owned(db_session, current_user.id, attachment_id)


class AttachmentController(SignedInController):
    path = "/api/attachments"
    tags = ["attachments"]
    dependencies = {"owned_attachment": Provide(provide_owned_attachment)}

    @post(
        "/",
        operation_id="UploadAttachment",
        status_code=201,
        responses=problems(400, 413, 415),
    )
    async def upload_attachment(
        self,
        data: Annotated[AttachmentUpload, Body(media_type=RequestEncodingType.MULTI_PART)],
        db_session: AsyncSession,
        current_user: User,
        settings: Settings,
        attachment_storage: Storage,
    ) -> AttachmentRead:
        """Upload a photo or a file (`multipart/form-data`, part `file`), then send its id
        in a message's `attachment_ids`. The type is read from the bytes: JPEG, PNG,
        HEIC/HEIF, WebP, GIF, PDF or plain text (else 415); images are stored upright and
        without their metadata (no location). 413: past the type's limit or your quota."""
        upload = data.file
        try:
            attachment = await services.upload(
                db_session,
                attachment_storage,
                current_user.id,
                upload.file,
                upload.filename,
                settings,
            )
        finally:
            await upload.close()
        return services.attachment_read(attachment)

    @get("/{attachment_id:uuid}", operation_id="GetAttachment", responses=problems(404))
    async def get_attachment(self, owned_attachment: Attachment) -> AttachmentRead:
        return services.attachment_read(owned_attachment)

    @get("/{attachment_id:uuid}/content", operation_id="DownloadAttachment", responses=_DOWNLOAD)
    async def download_attachment(
        self, owned_attachment: Attachment, attachment_storage: Storage
    ) -> Response[Any]:
        """The file as stored (an image cleaned of its metadata, a HEIC as JPEG); with
        object storage, a redirect (307) to a short-lived URL of it."""
        file = owned_attachment
        return await _download(attachment_storage, file, keys.FILE, file.content_type)

    @get(
        "/{attachment_id:uuid}/thumbnail",
        operation_id="DownloadAttachmentThumbnail",
        responses=_DOWNLOAD,
    )
    async def download_thumbnail(
        self, owned_attachment: Attachment, attachment_storage: Storage
    ) -> Response[Any]:
        """An image's thumbnail (JPEG, at most 320 pixels a side); a document has none (404)."""
        if owned_attachment.kind != "image":
            raise ProblemException(404, "A document has no thumbnail.")
        return await _download(attachment_storage, owned_attachment, keys.THUMBNAIL, "image/jpeg")

    @delete("/{attachment_id:uuid}", operation_id="DeleteAttachment", responses=problems(404, 409))
    async def delete_attachment(
        self, owned_attachment: Attachment, db_session: AsyncSession, attachment_storage: Storage
    ) -> None:
        """Delete an upload no message references yet (a sent one goes with its message)."""
        if owned_attachment.message_id is not None:
            raise ProblemException(409, "The attachment is in a message: delete the message.")
        await services.delete_unsent(db_session, attachment_storage, owned_attachment)


async def _download(
    storage: Storage, attachment: Attachment, name: str, media_type: str
) -> Response[Any]:
    """The object's bytes through us, or (object storage) a redirect to a signed URL: the
    owner was checked above, and the URL reads this one object for a short while."""
    key = keys.object_key(attachment.id, name)
    if isinstance(storage, SignsDownloads):
        return Redirect(await storage.sign_get(key), status_code=307)
    return _stream(storage, attachment, key, media_type)


def _stream(storage: Storage, attachment: Attachment, key: str, media_type: str) -> Stream:
    inline = attachment.kind == "image"
    return Stream(
        storage.stream(key),
        media_type=media_type,
        headers={
            "Content-Disposition": _content_disposition(attachment, inline),
            "Cache-Control": "private, max-age=3600",
        },
    )


def attachment_controller(settings: Settings) -> type[Controller]:
    """The controller with this app's upload limit (the largest type's, plus multipart's
    own bytes): a larger body is refused (413) while it arrives, before it is spooled."""
    limit = settings.attachment_max_bytes + MULTIPART_OVERHEAD
    return type("AttachmentController", (AttachmentController,), {"request_max_body_size": limit})
