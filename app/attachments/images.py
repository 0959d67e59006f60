"""Image hygiene, once per upload, on a worker thread (`prepare_image` is blocking).

The image is decoded (a truncated or disguised file fails here: 415), refused past
ATTACHMENT_IMAGE_MAX_PIXELS before its pixels are decoded (a decompression bomb), turned
upright by its EXIF orientation and re-encoded without metadata: no EXIF, no GPS, no
XMP, and nothing of a polyglot file's other life survives. HEIC is stored as JPEG (what
every model and every browser reads); a GIF keeps its first frame. Made with it: the
image as models get it (a JPEG, its long side bounded), a thumbnail and a BlurHash.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass
from typing import BinaryIO

import blurhash
import pillow_heif
from PIL import Image, ImageOps, UnidentifiedImageError

pillow_heif.register_heif_opener()

MODEL_SIDE = 2048  # what providers downscale to anyway (OpenAI: 2048, Anthropic: 1568)
THUMBNAIL_SIDE = 320
_BLURHASH_SIDE = 64  # the hash reads a tiny copy: its cost is the same for every image
# What each sniffed type is stored as (format for Pillow, served Content-Type).
_STORED_AS = {
    "image/jpeg": ("JPEG", "image/jpeg"),
    "image/heic": ("JPEG", "image/jpeg"),
    "image/png": ("PNG", "image/png"),
    "image/webp": ("WEBP", "image/webp"),
    "image/gif": ("PNG", "image/png"),
}


class ImageRefused(Exception):
    """Not an image we can read (truncated, disguised) or a decompression bomb."""


@dataclass(frozen=True)
class PreparedImage:
    data: bytes  # the cleaned image, as served
    content_type: str
    width: int
    height: int
    model_jpeg: bytes
    thumbnail_jpeg: bytes
    blurhash: str


def _opened(source: BinaryIO, max_pixels: int) -> Image.Image:
    try:
        image = Image.open(source)
        width, height = image.size
        if width * height > max_pixels:
            raise ImageRefused(f"The image is too large ({width}×{height} pixels).")
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image.load()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageRefused("The file is not an image we can read (or it is cut short).") from exc
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRefused("The image is too large.") from exc
    return image


def _rgb(image: Image.Image) -> Image.Image:
    """The image in RGB: itself if it is (a 12-megapixel copy is 36 MB)."""
    return image if image.mode == "RGB" else image.convert("RGB")


def _encoded(image: Image.Image, image_format: str) -> bytes:
    out = io.BytesIO()
    if image_format == "JPEG":
        # No optimize=True: its Huffman pass is one call that holds the GIL for the whole
        # large image (the server's loop stalls as long) to save a few percent of bytes.
        _rgb(image).save(out, "JPEG", quality=88)
    else:
        image.save(out, image_format)  # no exif=, no pnginfo=: metadata left behind
    return out.getvalue()


def _bounded_jpeg(image: Image.Image, side: int, quality: int) -> bytes:
    copy = _rgb(image).copy()
    copy.thumbnail((side, side), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    copy.save(out, "JPEG", quality=quality, optimize=side <= THUMBNAIL_SIDE)  # as above
    return out.getvalue()


def _without_metadata(image: Image.Image) -> Image.Image:
    """The pixels alone, upright (orientation applied, then EXIF dropped). The opened
    image is turned in place and converted only if it must be: one full-size copy, the
    clean one, beside it (the peak of memory of an upload is a few of them)."""
    ImageOps.exif_transpose(image, in_place=True)
    mode = image.mode if image.mode in ("RGB", "RGBA", "L", "LA") else "RGBA"
    clean = Image.new(mode, image.size)
    clean.paste(image if image.mode == mode else image.convert(mode))
    return clean


def prepare_image(source: BinaryIO, source_type: str, max_pixels: int) -> PreparedImage:
    """Blocking: run it on a worker thread."""
    with _opened(source, max_pixels) as opened:
        opened.seek(0)  # a GIF's (or an animated WebP's) first frame
        image = _without_metadata(opened)
    image_format, content_type = _STORED_AS[source_type]
    small = _rgb(image).copy()
    small.thumbnail((_BLURHASH_SIDE, _BLURHASH_SIDE))
    return PreparedImage(
        data=_encoded(image, image_format),
        content_type=content_type,
        width=image.width,
        height=image.height,
        model_jpeg=_bounded_jpeg(image, MODEL_SIDE, 85),
        thumbnail_jpeg=_bounded_jpeg(image, THUMBNAIL_SIDE, 80),
        blurhash=blurhash.encode(small, x_components=4, y_components=3),
    )
