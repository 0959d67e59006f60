"""An upload turned into what is stored: sniffed, checked against its limits, cleaned,
its derived objects made. The heavy work runs on a worker thread; the objects are
written before the row, and removed again if anything fails (nothing stored half)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import BinaryIO, TypeVar
from uuid import UUID

from app.attachments import storage as keys
from app.attachments.documents import DocumentRefused, read_pdf, read_text
from app.attachments.images import ImageRefused, prepare_image
from app.attachments.sniffing import HEAD_BYTES, kind_of, sniff
from app.attachments.storage import Storage
from app.lib.problems import ProblemException
from app.settings import Settings

T = TypeVar("T")
# The threads that clean and read uploads, by their number (the setting's value).
_pools: dict[int, ThreadPoolExecutor] = {}


@dataclass
class Stored:
    """What an upload became: the row's fields and the objects written."""

    content_type: str
    source_type: str
    size_bytes: int
    stored_bytes: int
    width: int | None = None
    height: int | None = None
    page_count: int | None = None
    blurhash: str | None = None
    text: str | None = None
    objects: list[str] = field(default_factory=list)


def size_of(source: BinaryIO) -> int:
    source.seek(0, 2)
    size = source.tell()
    source.seek(0)
    return size


def sniffed_type(source: BinaryIO) -> str:
    head = source.read(HEAD_BYTES)
    source.seek(0)
    if not head:
        raise ProblemException(400, "The file is empty.")
    found = sniff(head)
    if found is None:
        raise ProblemException(
            415,
            "This kind of file is not accepted: send a JPEG, PNG, HEIC, WebP or GIF image, "
            "a PDF or a plain-text file.",
        )
    return found


async def _on_worker(settings: Settings, work: Callable[..., T], *args: object) -> T:
    """`work` on one of ATTACHMENT_PROCESSING_WORKERS threads of their own; the other
    uploads wait their turn, their bytes in their spooled files. Each running one holds a
    full-size decoded image (or a parsed PDF), and each thread's malloc arena keeps about
    that much after it: on the shared default pool, with its many threads, that added up
    (bench.uploads; docs/benchmarks.md)."""
    workers = settings.attachment_processing_workers
    pool = _pools.get(workers)
    if pool is None:
        pool = _pools[workers] = ThreadPoolExecutor(workers, thread_name_prefix="attachments")
    return await asyncio.get_running_loop().run_in_executor(pool, work, *args)


def limit_for(content_type: str, settings: Settings) -> int:
    if kind_of(content_type) == "image":
        return settings.attachment_image_max_bytes
    if content_type == "application/pdf":
        return settings.attachment_pdf_max_bytes
    return settings.attachment_text_max_bytes


async def store_image(
    storage: Storage, attachment_id: UUID, source: BinaryIO, source_type: str, settings: Settings
) -> Stored:
    max_pixels = settings.attachment_image_max_pixels
    try:
        image = await _on_worker(settings, prepare_image, source, source_type, max_pixels)
    except ImageRefused as exc:
        raise ProblemException(415, str(exc)) from exc
    stored = Stored(
        content_type=image.content_type,
        source_type=source_type,
        size_bytes=len(image.data),
        stored_bytes=len(image.data) + len(image.model_jpeg) + len(image.thumbnail_jpeg),
        width=image.width,
        height=image.height,
        blurhash=image.blurhash,
    )
    for name, data in (
        (keys.FILE, image.data),
        (keys.MODEL_IMAGE, image.model_jpeg),
        (keys.THUMBNAIL, image.thumbnail_jpeg),
    ):
        key = keys.object_key(attachment_id, name)
        stored.objects.append(key)
        await storage.put_bytes(key, data)
    return stored


async def store_document(
    storage: Storage, attachment_id: UUID, source: BinaryIO, source_type: str, settings: Settings
) -> Stored:
    reader = read_pdf if source_type == "application/pdf" else read_text
    try:
        document = await _on_worker(settings, reader, source, settings.attachment_text_max_chars)
    except DocumentRefused as exc:
        raise ProblemException(415, str(exc)) from exc
    source.seek(0)
    key = keys.object_key(attachment_id, keys.FILE)
    stored = Stored(
        content_type=source_type,
        source_type=source_type,
        size_bytes=0,
        stored_bytes=0,
        page_count=document.page_count,
        text=document.text,
        objects=[key],
    )
    stored.size_bytes = stored.stored_bytes = await storage.put_file(key, source)
    return stored


async def store_upload(
    storage: Storage, attachment_id: UUID, source: BinaryIO, source_type: str, settings: Settings
) -> Stored:
    """The objects of the upload, written; on any failure none is left behind."""
    store = store_image if kind_of(source_type) == "image" else store_document
    try:
        return await store(storage, attachment_id, source, source_type, settings)
    except BaseException:
        await asyncio.shield(storage.delete(keys.object_keys(attachment_id)))
        raise
