"""Files as a phone sends them, made in the test (no binary fixtures checked in)."""

from __future__ import annotations

import io
from typing import Any

import httpx
import pillow_heif
from PIL import Image
from pypdf import PdfWriter

from tests.conftest import ApiUser

pillow_heif.register_heif_opener()

GPS_IFD, ORIENTATION = 0x8825, 0x0112
PARIS = {1: "N", 2: (48.0, 51.0, 30.0), 3: "E", 4: (2.0, 17.0, 40.0)}


def iphone_exif(orientation: int = 1) -> Image.Exif:
    """What an iPhone writes: its make, the orientation and where the photo was taken."""
    exif = Image.Exif()
    exif[0x010F] = "Apple"
    exif[ORIENTATION] = orientation
    exif.get_ifd(GPS_IFD).update(PARIS)
    return exif


def photo(
    image_format: str = "JPEG", size: tuple[int, int] = (120, 80), orientation: int = 1
) -> bytes:
    """A photo with GPS in its EXIF (HEIF: as an iPhone saves it)."""
    image = Image.new("RGB", size, (30, 140, 60))
    image.paste((200, 30, 30), (0, 0, size[0] // 2, size[1] // 2))  # so orientation shows
    out = io.BytesIO()
    image.save(out, image_format, exif=iphone_exif(orientation).tobytes())
    return out.getvalue()


def pdf(pages: int = 2) -> bytes:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def opened(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


async def upload(
    client: httpx.AsyncClient,
    user: ApiUser,
    data: bytes,
    filename: str = "IMG_0001.HEIC",
    **kw: Any,
) -> httpx.Response:
    files = {"file": (filename, data, kw.pop("content_type", "application/octet-stream"))}
    return await client.post("/api/attachments", files=files, headers=user.headers, **kw)
