"""The server under test: `uvicorn --factory bench.uploads.server:create`, the app with
the loop-lag probe of `bench.looplag.server` and one bare upload endpoint, the baseline.

`POST /bench/upload-bare` takes the same multipart body as `POST /api/attachments`
(parsed by Litestar the same way: the part spooled to a temporary file) and does nothing
else: no auth, no sniffing, no image work, no storage, no row. What `/api/attachments`
costs beyond it is ours.
"""

from __future__ import annotations

from typing import Annotated

from litestar import Litestar, post
from litestar.enums import RequestEncodingType
from litestar.params import Body

from app.attachments.controllers import MULTIPART_OVERHEAD, AttachmentUpload
from app.settings import get_settings
from bench.looplag.server import create as create_with_probe


def create() -> Litestar:
    app = create_with_probe()
    limit = get_settings().attachment_max_bytes + MULTIPART_OVERHEAD

    @post(
        "/bench/upload-bare",
        status_code=201,
        include_in_schema=False,
        request_max_body_size=limit,
    )
    async def upload_bare(
        data: Annotated[AttachmentUpload, Body(media_type=RequestEncodingType.MULTI_PART)],
    ) -> dict[str, int]:
        size = data.file.file.seek(0, 2)  # the spooled file's end: its size
        await data.file.close()
        return {"size_bytes": size}

    app.register(upload_bare)
    return app
