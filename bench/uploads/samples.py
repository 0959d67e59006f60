"""The uploaded files, made once with Pillow and kept in the temporary directory: a
photo (a 4000×3000 JPEG of a gradient under camera-like noise, at the quality that makes
it the asked size) and a document (a scanned PDF: pages of such images)."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

from PIL import Image, ImageFilter

PHOTO_SIZE = (4000, 3000)
PAGE_SIZE = (2480, 3508)  # A4 at 300 dpi
CACHE = Path(tempfile.gettempdir()) / "toolcells-bench-uploads"


def _noisy(size: tuple[int, int], sigma: float) -> Image.Image:
    """A smooth gradient under Gaussian noise, per channel: what a sensor gives."""
    width, height = size
    gradient = Image.linear_gradient("L").resize(size)
    bands = []
    for i, mean in enumerate((40, 0, -40)):
        noise = Image.effect_noise(size, sigma).point(lambda v, m=mean: v + m)
        blurred = noise.filter(ImageFilter.GaussianBlur(0.3 + 0.1 * i))
        bands.append(Image.blend(gradient, blurred, 0.5))
    return Image.merge("RGB", bands).resize((width, height))


def _jpeg(image: Image.Image, quality: int) -> bytes:
    out = io.BytesIO()
    image.save(out, "JPEG", quality=quality)
    return out.getvalue()


def _closest_quality(image: Image.Image, target: int) -> int:
    """The JPEG quality that makes `image` nearest `target` bytes (a binary search)."""
    low, high, best, best_size = 50, 98, 0, 0
    while low <= high:
        quality = (low + high) // 2
        size = len(_jpeg(image, quality))
        if not best or abs(size - target) < abs(best_size - target):
            best, best_size = quality, size
        if size < target:
            low = quality + 1
        else:
            high = quality - 1
    return best


def photo(megabytes: float) -> bytes:
    path = CACHE / f"photo-{megabytes:g}MB.jpg"
    if not path.exists():
        CACHE.mkdir(exist_ok=True)
        target = int(megabytes * 1024 * 1024)
        image = _noisy(PHOTO_SIZE, 90)
        path.write_bytes(_jpeg(image, _closest_quality(image, target)))
    return path.read_bytes()


def document(megabytes: float, pages: int = 4) -> bytes:
    path = CACHE / f"document-{megabytes:g}MB.pdf"
    if not path.exists():
        CACHE.mkdir(exist_ok=True)
        per_page = int(megabytes * 1024 * 1024 / pages)
        scans = [_noisy(PAGE_SIZE, 60) for _ in range(pages)]
        quality = _closest_quality(scans[0], per_page)
        out = io.BytesIO()
        scans[0].save(
            out, "PDF", save_all=True, append_images=scans[1:], resolution=300, quality=quality
        )
        path.write_bytes(out.getvalue())
    return path.read_bytes()
