"""Images an MCP tool returns (`ImageContent`, or an `EmbeddedResource` with an image
blob) become attachments of the user, referenced by the call's cell: cleaned and
measured like an upload (app/attachments), so the app shows them as it shows photos
(thumbnail, BlurHash) and the bytes are served with the same authorization.

An image that cannot be stored (not an image, past the limits or the user's quota) is
named in the result's text instead; it never fails the call.
"""

from __future__ import annotations

import base64
import binascii
import io
import logging

import mcp.types as mcp_types

from app.attachments import services as attachments
from app.attachments.schemas import AttachmentRead
from app.attachments.storage import storage_for
from app.lib.problems import ProblemException
from app.tools.base import ToolContext

logger = logging.getLogger("app.tools.mcp")
MAX_IMAGES = 8  # of one result; the rest are named only


def _image_blobs(result: mcp_types.CallToolResult) -> list[str]:
    blobs = []
    for block in result.content:
        if isinstance(block, mcp_types.ImageContent):
            blobs.append(block.data)
        elif isinstance(block, mcp_types.EmbeddedResource):
            resource = block.resource
            mime = resource.mime_type or ""
            if isinstance(resource, mcp_types.BlobResourceContents) and mime.startswith("image/"):
                blobs.append(resource.blob)
    return blobs


async def store_images(
    ctx: ToolContext, server: str, tool: str, result: mcp_types.CallToolResult
) -> tuple[list[AttachmentRead], list[str]]:
    """The result's images as the user's attachments, and a note for each one refused."""
    blobs = _image_blobs(result)
    if not blobs or result.is_error:
        return [], []
    stored: list[AttachmentRead] = []
    notes: list[str] = []
    storage = storage_for(ctx.settings)
    for index, blob in enumerate(blobs):
        if index >= MAX_IMAGES:
            notes.append(f"[{len(blobs) - MAX_IMAGES} more image(s) not kept]")
            break
        try:
            raw = base64.b64decode(blob, validate=True)
            async with ctx.transaction() as session:
                attachment = await attachments.upload(
                    session,
                    storage,
                    ctx.user.id,
                    io.BytesIO(raw),
                    f"{server}-{tool}.png",
                    ctx.settings,
                )
                await attachments.mark_tool_image(
                    session, attachment, ctx.thread_id, ctx.tool_call_id
                )
            stored.append(attachments.attachment_read(attachment))
        except (binascii.Error, ValueError):
            notes.append("[an image that is not valid base64]")
        except ProblemException as exc:
            notes.append(f"[an image not kept: {exc.detail}]")
    return stored, notes
