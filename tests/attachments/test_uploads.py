"""Uploading through the API as the app does: what is stored, what is refused."""

from __future__ import annotations

import io

import httpx
from PIL import Image
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Attachment
from tests.api.support import assert_problem
from tests.attachments.support import GPS_IFD, opened, pdf, photo, upload
from tests.conftest import ApiUser


async def test_an_iphone_heic_is_stored_upright_as_jpeg_without_its_location(
    files: httpx.AsyncClient, ann: ApiUser
) -> None:
    # landscape pixels, EXIF orientation 6: the phone was held upright
    response = await upload(files, ann, photo("HEIF", (120, 80), orientation=6))
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["kind"] == "image" and body["content_type"] == "image/jpeg"
    assert body["filename"] == "IMG_0001.jpg"
    assert (body["width"], body["height"]) == (80, 120)
    assert len(body["blurhash"]) >= 6

    content = await files.get(f"/api/attachments/{body['id']}/content", headers=ann.headers)
    assert content.status_code == 200
    assert content.headers["content-type"] == "image/jpeg"
    assert content.headers["x-content-type-options"] == "nosniff"
    assert content.headers["content-disposition"].startswith("inline;")
    served = opened(content.content)
    assert served.format == "JPEG" and served.size == (80, 120)
    assert not served.getexif() and not served.getexif().get_ifd(GPS_IFD)
    assert len(content.content) == body["size_bytes"]

    thumb = await files.get(f"/api/attachments/{body['id']}/thumbnail", headers=ann.headers)
    assert thumb.status_code == 200 and opened(thumb.content).format == "JPEG"
    got = await files.get(f"/api/attachments/{body['id']}", headers=ann.headers)
    assert got.json() == body


async def test_png_webp_and_gif_keep_their_look_and_lose_their_metadata(
    files: httpx.AsyncClient, ann: ApiUser
) -> None:
    for image_format, served_type in (
        ("PNG", "image/png"),
        ("WEBP", "image/webp"),
        ("GIF", "image/png"),
    ):
        response = await upload(files, ann, photo(image_format), filename=f"x.{image_format}")
        assert response.status_code == 201, (image_format, response.text)
        assert response.json()["content_type"] == served_type
        content = await files.get(
            f"/api/attachments/{response.json()['id']}/content", headers=ann.headers
        )
        assert not opened(content.content).getexif()


async def test_a_pdf_keeps_its_pages_and_downloads_as_a_file(
    files: httpx.AsyncClient, ann: ApiUser
) -> None:
    data = pdf(pages=3)
    response = await upload(files, ann, data, filename="bill.pdf")
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["kind"] == "document" and body["content_type"] == "application/pdf"
    assert body["page_count"] == 3 and body["size_bytes"] == len(data)
    content = await files.get(f"/api/attachments/{body['id']}/content", headers=ann.headers)
    assert content.content == data
    assert content.headers["content-disposition"].startswith('attachment; filename="bill.pdf"')
    thumb = await files.get(f"/api/attachments/{body['id']}/thumbnail", headers=ann.headers)
    assert_problem(thumb, 404)


async def test_the_type_comes_from_the_bytes_never_from_the_client(
    files: httpx.AsyncClient, ann: ApiUser, db: AsyncSession
) -> None:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    # text is accepted as text: served as a text/plain download, never as markup
    as_text = await upload(files, ann, svg, filename="x.svg", content_type="image/svg+xml")
    assert as_text.status_code == 201 and as_text.json()["content_type"] == "text/plain"
    content = await files.get(
        f"/api/attachments/{as_text.json()['id']}/content", headers=ann.headers
    )
    assert content.headers["content-type"].startswith("text/plain")
    assert content.headers["content-disposition"].startswith("attachment;")
    for data, name in (
        (b"\x7fELF\x02\x01\x01" + bytes(200), "photo.jpg"),  # an executable called a photo
        (b"PK\x03\x04" + bytes(100), "a.zip"),
        (photo("JPEG")[:200], "cut.jpg"),  # a truncated JPEG
        (b"%PDF-1.7\n" + b"\x00garbage" * 50, "fake.pdf"),  # a PDF in its first bytes only
    ):
        response = await upload(files, ann, data, filename=name, content_type="image/jpeg")
        assert_problem(response, 415)
    assert_problem(await upload(files, ann, b"", filename="empty.jpg"), 400)
    count = await db.scalar(select(func.count()).select_from(Attachment))
    assert count == 1  # nothing of the refused ones is stored


async def test_limits_per_type_and_the_quota_answer_413(
    files: httpx.AsyncClient, ann: ApiUser, db: AsyncSession
) -> None:
    too_long = b"word " * (70 * 1024 // 5)  # plain text is limited to 64 KiB here
    assert_problem(await upload(files, ann, too_long, filename="a.txt"), 413)
    assert (await upload(files, ann, photo())).status_code == 201
    # the quota (5 MiB here) counts every stored byte of the user's attachments
    db.add(
        Attachment(
            owner_id=ann.user.id,
            kind="document",
            content_type="text/plain",
            source_type="text/plain",
            filename="big.txt",
            size_bytes=5 * 1024 * 1024 - 100,
            stored_bytes=5 * 1024 * 1024 - 100,
        )
    )
    await db.commit()
    body = assert_problem(await upload(files, ann, photo()), 413)
    assert "quota" in body["detail"] or "more than your" in body["detail"]


async def test_another_users_attachment_is_not_found(
    files: httpx.AsyncClient, ann: ApiUser, ben: ApiUser
) -> None:
    body = (await upload(files, ann, photo())).json()
    for path in ("", "/content", "/thumbnail"):
        assert_problem(
            await files.get(f"/api/attachments/{body['id']}{path}", headers=ben.headers), 404
        )
    assert_problem(await files.delete(f"/api/attachments/{body['id']}", headers=ben.headers), 404)
    deleted = await files.delete(f"/api/attachments/{body['id']}", headers=ann.headers)
    assert deleted.status_code == 204
    assert_problem(await files.get(f"/api/attachments/{body['id']}", headers=ann.headers), 404)


async def test_usage_counts_the_bytes_attachments_take(
    files: httpx.AsyncClient, ann: ApiUser
) -> None:
    before = (await files.get("/api/me/usage", headers=ann.headers)).json()
    assert before["attachment_bytes"] == 0
    await upload(files, ann, photo())
    after = (await files.get("/api/me/usage", headers=ann.headers)).json()
    # the served image, the model's copy and the thumbnail
    assert after["attachment_bytes"] > 0


async def test_a_decompression_bomb_is_refused_before_its_pixels_are_decoded(
    files: httpx.AsyncClient, ann: ApiUser, db: AsyncSession
) -> None:
    # 60 million pixels in a few kilobytes (the limit is 50 million)
    bomb = io.BytesIO()
    Image.new("1", (10_000, 6_000)).save(bomb, "PNG")
    assert len(bomb.getvalue()) < 100_000
    body = assert_problem(await upload(files, ann, bomb.getvalue(), filename="x.png"), 415)
    assert "too large" in body["detail"]
    assert await db.scalar(select(func.count()).select_from(Attachment)) == 0


async def test_a_polyglot_photo_is_served_as_the_image_alone(
    files: httpx.AsyncClient, ann: ApiUser
) -> None:
    """A JPEG that is also an HTML page (markup after the image's end): stored re-encoded,
    so nothing of the page is kept, and served as an image the browser may not sniff."""
    page = b"<html><body><script>alert(document.cookie)</script></body></html>"
    response = await upload(files, ann, photo("JPEG") + page, filename="cat.jpg")
    assert response.status_code == 201, response.text
    content = await files.get(
        f"/api/attachments/{response.json()['id']}/content", headers=ann.headers
    )
    assert content.headers["content-type"] == "image/jpeg"
    assert content.headers["x-content-type-options"] == "nosniff"
    assert b"<script>" not in content.content and opened(content.content).format == "JPEG"
