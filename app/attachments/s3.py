"""`S3Storage`: the `Storage` seam on an S3-compatible bucket (AWS S3, R2, MinIO).

Built on obstore (Rust `object_store`): its calls are async and run off the event loop.
An upload goes up in parts (`use_multipart`, `PART_BYTES` each) straight from the
spooled file, so it is never whole in memory; a download streams the object's chunks.
The phone may also fetch an object itself through a presigned GET URL (`sign_get`):
signed for that one key, valid for `S3_PRESIGN_SECONDS`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import BinaryIO
from uuid import UUID

import obstore
from obstore.exceptions import NotFoundError
from obstore.store import S3Store

from app.settings.attachments import AttachmentSettings

# S3 parts are at least 5 MB (but the last); reads come in pieces the size LocalStorage uses
PART_BYTES, CHUNK_BYTES = 5 * 1024 * 1024, 256 * 1024


def s3_store(settings: AttachmentSettings) -> S3Store:
    return S3Store(
        settings.s3_bucket,
        endpoint=settings.s3_endpoint,
        region=settings.s3_region,
        access_key_id=settings.s3_access_key_id,
        secret_access_key=settings.s3_secret_access_key,
        virtual_hosted_style_request=False,  # MinIO / rclone / R2 address buckets by path
        client_options={"allow_http": bool(settings.s3_endpoint)},
    )


class S3Storage:
    def __init__(self, store: S3Store, presign_seconds: int) -> None:
        self.store = store
        self.presign_seconds = presign_seconds

    async def put_file(self, key: str, source: BinaryIO) -> int:
        start = source.tell()
        await obstore.put_async(self.store, key, source, use_multipart=True, chunk_size=PART_BYTES)
        return await asyncio.to_thread(source.seek, 0, 2) - start

    async def put_bytes(self, key: str, data: bytes) -> None:
        await obstore.put_async(self.store, key, data)

    async def read_bytes(self, key: str) -> bytes:
        result = await obstore.get_async(self.store, key)
        return bytes(await result.bytes_async())

    async def stream(self, key: str) -> AsyncIterator[bytes]:
        result = await obstore.get_async(self.store, key)
        async for chunk in result.stream(min_chunk_size=CHUNK_BYTES):
            yield bytes(chunk)

    async def delete(self, keys: list[str]) -> None:
        for key in keys:
            try:
                await obstore.delete_async(self.store, key)
            except NotFoundError:  # a missing key is no error (S3 itself says so too)
                continue

    async def attachment_ids(self) -> list[UUID]:
        found = set()
        async for batch in obstore.list(self.store):
            for meta in batch:
                try:
                    found.add(UUID(meta["path"].split("/", 1)[0]))
                except ValueError:
                    continue  # not ours
        return list(found)

    async def sign_get(self, key: str) -> str:
        """A URL that GETs this one object, valid for `presign_seconds`."""
        return await obstore.sign_async(
            self.store, "GET", key, timedelta(seconds=self.presign_seconds)
        )
