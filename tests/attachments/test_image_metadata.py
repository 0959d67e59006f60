"""Every kind of metadata a camera or an editor leaves in a photo is gone from what is
served, whichever way the pixels were kept (a JPEG's in place, other formats' copied)."""

from __future__ import annotations

import io

import pytest
from PIL import Image, ImageCms, PngImagePlugin

from app.attachments.images import prepare_image
from tests.attachments.support import GPS_IFD, iphone_exif, opened

XMP = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF/></x:xmpmeta>'
MAX_PIXELS = 50_000_000


def _srgb_profile() -> bytes:
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


def _sideways(image_format: str, **metadata: object) -> bytes:
    """Landscape pixels with EXIF orientation 6 (the phone was held upright)."""
    image = Image.new("RGB", (120, 80), (30, 140, 60))
    out = io.BytesIO()
    image.save(out, image_format, exif=iphone_exif(6).tobytes(), **metadata)
    return out.getvalue()


@pytest.mark.parametrize(
    ("source_type", "image_format", "metadata"),
    [
        ("image/jpeg", "JPEG", {"comment": b"shot at home", "xmp": XMP}),
        ("image/png", "PNG", {"pnginfo": PngImagePlugin.PngInfo()}),
        ("image/webp", "WEBP", {"xmp": XMP}),
    ],
)
def test_the_served_image_is_upright_and_carries_no_metadata(
    source_type: str, image_format: str, metadata: dict
) -> None:
    if "pnginfo" in metadata:
        metadata["pnginfo"].add_text("Location", "48.8584 N, 2.2945 E")
    source = _sideways(image_format, icc_profile=_srgb_profile(), **metadata)
    assert opened(source).info  # the test's photo does carry what must go

    prepared = prepare_image(io.BytesIO(source), source_type, MAX_PIXELS)

    served = opened(prepared.data)
    assert served.size == (80, 120) == (prepared.width, prepared.height)
    assert not served.getexif() and not served.getexif().get_ifd(GPS_IFD)
    kept = {key for key in served.info if key in {"exif", "xmp", "comment", "icc_profile"}}
    assert kept == set() and "Location" not in served.info
    for derived in (prepared.model_jpeg, prepared.thumbnail_jpeg):
        assert opened(derived).size[1] > opened(derived).size[0]  # upright too
        assert not opened(derived).getexif()


@pytest.mark.parametrize(
    ("image_format", "source_type", "size", "model_size"),
    [
        # a JPEG's model copy is decoded at half its scale (within 2048, at least 1024)
        ("JPEG", "image/jpeg", (4032, 3024), (2016, 1512)),
        ("PNG", "image/png", (4400, 3300), (2048, 1536)),  # resized from the pixels
        ("JPEG", "image/jpeg", (1600, 1200), (1600, 1200)),  # small enough as it is
    ],
)
def test_a_large_photo_is_bounded_for_the_model_and_the_thumbnail(
    image_format: str, source_type: str, size: tuple[int, int], model_size: tuple[int, int]
) -> None:
    out = io.BytesIO()
    Image.new("RGB", size, (90, 90, 200)).save(out, image_format)
    prepared = prepare_image(io.BytesIO(out.getvalue()), source_type, MAX_PIXELS)
    assert (prepared.width, prepared.height) == size == opened(prepared.data).size
    assert opened(prepared.model_jpeg).size == model_size
    assert opened(prepared.thumbnail_jpeg).size == (320, 240)
    assert len(prepared.blurhash) >= 6
