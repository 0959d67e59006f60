"""The attachments API on S3 storage (a real rclone serve s3), on each test dialect."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from litestar import Litestar
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.attachments.services import deletions_settled
from tests.attachments.conftest import files_app_with, phone_of
from tests.attachments.s3_server import ACCESS_KEY, BUCKET, SECRET_KEY, s3_server  # noqa: F401
from tests.attachments.support import opened, photo, upload
from tests.conftest import ApiUser, make_api_user


@pytest.fixture(scope="module")
async def s3_app(
    database_url: str,
    s3_server: tuple[str, Path],  # noqa: F811
) -> AsyncIterator[Litestar]:
    async with files_app_with(
        database_url,
        attachments_storage="s3",
        s3_endpoint=s3_server[0],
        s3_bucket=BUCKET,
        s3_access_key_id=ACCESS_KEY,
        s3_secret_access_key=SECRET_KEY,
    ) as app:
        yield app


@pytest.fixture
async def phone(
    s3_app: Litestar, session_factory: async_sessionmaker[AsyncSession]
) -> AsyncIterator[httpx.AsyncClient]:
    async with phone_of(s3_app, session_factory) as client:
        yield client


async def test_a_photo_goes_to_the_bucket_comes_back_to_its_owner_and_is_deleted(
    phone: httpx.AsyncClient,
    db: AsyncSession,
    s3_server: tuple[str, Path],  # noqa: F811
) -> None:
    ann: ApiUser = await make_api_user(db)
    ben: ApiUser = await make_api_user(db)
    response = await upload(phone, ann, photo("HEIF", (120, 80)))
    assert response.status_code == 201, response.text
    attachment_id = response.json()["id"]
    stored = s3_server[1] / attachment_id
    assert (stored / "file").is_file() and (stored / "thumb.jpg").is_file()

    url = f"/api/attachments/{attachment_id}/content"
    redirect = await phone.get(url, headers=ann.headers)
    assert redirect.status_code == 307  # to the bucket, signed for this one object
    async with httpx.AsyncClient() as storage:  # as URLSession follows: no Authorization
        content = await storage.get(redirect.headers["location"])
        assert content.status_code == 200
        assert opened(content.content).size == (120, 80)
        thumb = await phone.get(f"/api/attachments/{attachment_id}/thumbnail", headers=ann.headers)
        assert (
            thumb.status_code == 307 and thumb.headers["location"] != redirect.headers["location"]
        )
        assert max(opened((await storage.get(thumb.headers["location"])).content).size) <= 320
    assert (await phone.get(url, headers=ben.headers)).status_code == 404

    deleted = await phone.delete(f"/api/attachments/{attachment_id}", headers=ann.headers)
    assert deleted.status_code == 204
    await deletions_settled()  # the objects go once the row's delete committed
    assert not (stored / "file").exists() and not (stored / "thumb.jpg").exists()
