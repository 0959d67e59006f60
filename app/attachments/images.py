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


def _within(size: tuple[int, int], side: int) -> tuple[int, int]:
    """`size` scaled down (never up) to fit `side`×`side`, its aspect kept."""
    scale = min(1.0, side / max(size))
    return max(1, round(size[0] * scale)), max(1, round(size[1] * scale))


def _bounded(image: Image.Image, side: int) -> Image.Image:
    """The image within `side`×`side`, in RGB: resized straight from the source (no
    full-size copy first), or itself when it fits."""
    if max(image.size) <= side:
        return _rgb(image)
    return _rgb(image).resize(_within(image.size, side), Image.Resampling.LANCZOS)


def _jpeg(image: Image.Image, quality: int, *, optimize: bool) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality, optimize=optimize)
    return out.getvalue()


def _reduced(jpeg: bytes) -> Image.Image:
    """The served JPEG decoded again at the smallest scale libjpeg's DCT scaling offers
    that leaves each side at least half the model's: a fraction of a full decode, and
    the full-size pixels are gone by then (for a photo, the model's copy is made from
    this, not from a resize of the full-size pixels and its full-height intermediate)."""
    image = Image.open(io.BytesIO(jpeg))
    image.draft("RGB", (MODEL_SIDE // 2, MODEL_SIDE // 2))
    image.load()
    return image


def _without_metadata(image: Image.Image, image_format: str) -> Image.Image:
    """The pixels alone, upright (orientation applied, then EXIF dropped).

    A photo stored as JPEG keeps its decoded pixels: its text metadata (the one thing
    Pillow's JPEG writer would carry over from the source, a comment) is dropped from
    `info`, and EXIF, XMP and ICC are written only when asked for. A 12-megapixel photo
    is 48 MB of pixels, so not copying it halves an upload's peak of memory. Other
    formats' writers fall back to more of the source's `info` (PNG: its ICC profile and
    transparency), so their pixels are pasted into a new image: nothing else survives."""
    ImageOps.exif_transpose(image, in_place=True)
    if image_format == "JPEG" and image.mode in ("RGB", "L"):
        image.info.clear()
        return image
    mode = image.mode if image.mode in ("RGB", "RGBA", "L", "LA") else "RGBA"
    clean = Image.new(mode, image.size)
    clean.paste(image if image.mode == mode else image.convert(mode))
    return clean


def prepare_image(source: BinaryIO, source_type: str, max_pixels: int) -> PreparedImage:
    """Blocking: run it on a worker thread. Only the full-size pixels and the served
    copy's bytes are alive at once; the thumbnail and the BlurHash come from the model's
    copy."""
    image_format, content_type = _STORED_AS[source_type]
    with _opened(source, max_pixels) as opened:
        opened.seek(0)  # a GIF's (or an animated WebP's) first frame
        image = _without_metadata(opened, image_format)
        data = _encoded(image, image_format)
        width, height = image.size
        model = None if image_format == "JPEG" else _bounded(image, MODEL_SIDE)
        del image  # the full-size pixels go with the opened file
    if model is None:
        model = _bounded(_reduced(data), MODEL_SIDE)
    thumbnail = _bounded(model, THUMBNAIL_SIDE)
    small = thumbnail.resize(_within(thumbnail.size, _BLURHASH_SIDE))
    return PreparedImage(
        data=data,
        content_type=content_type,
        width=width,
        height=height,
        model_jpeg=_jpeg(model, 85, optimize=False),  # no optimize: as `_encoded` says
        thumbnail_jpeg=_jpeg(thumbnail, 80, optimize=True),  # small: its pass is short
        blurhash=blurhash.encode(small, x_components=4, y_components=3),
    )
