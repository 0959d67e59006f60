"""`S3Storage` against a real S3-compatible server over HTTP (rclone serve s3)."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from uuid import uuid4

import httpx

from app.attachments.s3 import S3Storage
from app.attachments.storage import FILE, object_key, object_keys, storage_for
from app.settings import Settings
from tests.attachments.s3_server import ACCESS_KEY, BUCKET, SECRET_KEY, s3_server  # noqa: F401


def _storage(endpoint: str, presign_seconds: int = 60) -> S3Storage:
    settings = Settings(
        attachments_storage="s3",
        s3_endpoint=endpoint,
        s3_bucket=BUCKET,
        s3_access_key_id=ACCESS_KEY,
        s3_secret_access_key=SECRET_KEY,
        s3_presign_seconds=presign_seconds,
    )
    storage = storage_for(settings)
    assert isinstance(storage, S3Storage)
    return storage


async def test_an_upload_streams_in_and_out_and_is_deleted(
    s3_server: tuple[str, Path],  # noqa: F811
) -> None:
    endpoint, bucket_dir = s3_server
    storage = _storage(endpoint)
    attachment_id = uuid4()
    key = object_key(attachment_id, FILE)
    body = bytes(range(256)) * 40_000  # ~10 MB: several multipart parts
    source = io.BytesIO(b"skip" + body)
    source.seek(4)

    assert await storage.put_file(key, source) == len(body)
    assert (bucket_dir / key).read_bytes() == body
    assert b"".join([chunk async for chunk in storage.stream(key)]) == body
    assert attachment_id in await storage.attachment_ids()

    await storage.delete(object_keys(attachment_id))  # two of the three never existed
    assert not (bucket_dir / key).exists()
    assert attachment_id not in await storage.attachment_ids()


async def test_a_presigned_url_reads_its_one_object_only(
    s3_server: tuple[str, Path],  # noqa: F811
) -> None:
    endpoint, _ = s3_server
    storage = _storage(endpoint)
    mine, other = object_key(uuid4(), FILE), object_key(uuid4(), FILE)
    await storage.put_bytes(mine, b"my photo")
    await storage.put_bytes(other, b"someone else's")
    url = await storage.sign_get(mine)

    async with httpx.AsyncClient() as client:
        assert (await client.get(url)).content == b"my photo"
        assert (await client.get(url.replace(mine, other))).status_code == 403
        tampered = url.replace("X-Amz-Expires=60", "X-Amz-Expires=6000")
        assert tampered != url
        assert (await client.get(tampered)).status_code == 403


async def test_an_expired_presigned_url_is_refused(
    s3_server: tuple[str, Path],  # noqa: F811
) -> None:
    endpoint, _ = s3_server
    key = object_key(uuid4(), FILE)
    await _storage(endpoint).put_bytes(key, b"photo")
    short = await _storage(endpoint, presign_seconds=1).sign_get(key)
    # The same signing with a lifetime no loaded machine outlasts: the URL itself is good
    # (the short one's first use could come after its second on a busy machine).
    long = await _storage(endpoint, presign_seconds=600).sign_get(key)
    async with httpx.AsyncClient() as client:
        assert (await client.get(long)).content == b"photo"
        # S3 signs in whole seconds: past the one-second lifetime, whatever the rounding
        await asyncio.sleep(2.1)
        assert (await client.get(short)).is_client_error  # refused: 400 or 403 by server
        assert (await client.get(long)).content == b"photo"
