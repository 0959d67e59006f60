"""The one seam to where attachment bytes live: a few async calls on keys.

`LocalStorage` (files under `ATTACHMENTS_DIR`) is the embedded default. Every call does its
file work on a worker thread, in chunks: an upload is copied from its spooled temporary
file, a download read piece by piece, so no file is ever held whole on the event loop.
An object's keys derive from its attachment's id (`object_keys`): deleting a row tells
which objects to delete, and the orphan sweep tells a stray object by its id.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Protocol, runtime_checkable
from uuid import UUID

if TYPE_CHECKING:
    from app.settings.attachments import AttachmentSettings

CHUNK_BYTES = 256 * 1024
FILE, MODEL_IMAGE, THUMBNAIL = "file", "model.jpg", "thumb.jpg"


def object_key(attachment_id: UUID, name: str) -> str:
    return f"{attachment_id}/{name}"


def object_keys(attachment_id: UUID) -> list[str]:
    return [object_key(attachment_id, name) for name in (FILE, MODEL_IMAGE, THUMBNAIL)]


@runtime_checkable
class Storage(Protocol):
    async def put_file(self, key: str, source: BinaryIO) -> int:
        """Copy `source` from its current position; the bytes written."""

    async def put_bytes(self, key: str, data: bytes) -> None: ...

    async def read_bytes(self, key: str) -> bytes: ...

    def stream(self, key: str) -> AsyncIterator[bytes]: ...

    async def delete(self, keys: list[str]) -> None:
        """Delete what exists of `keys` (a missing key is no error)."""

    async def attachment_ids(self) -> list[UUID]:
        """Every attachment id with an object stored (the orphan sweep's list)."""


@runtime_checkable
class SignsDownloads(Protocol):
    """Storage that can hand the phone a short-lived URL of one object (S3): downloads
    then go straight to the storage instead of through the app."""

    async def sign_get(self, key: str) -> str: ...


class LocalStorage:
    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ValueError(f"not a storage key: {key!r}")
        return path

    async def put_file(self, key: str, source: BinaryIO) -> int:
        return await asyncio.to_thread(self._copy, self._path(key), source)

    @staticmethod
    def _copy(path: Path, source: BinaryIO) -> int:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(path.suffix + ".partial")
        with partial.open("wb") as out:
            shutil.copyfileobj(source, out, CHUNK_BYTES)
            size = out.tell()
        os.replace(partial, path)  # readers see the whole object or none
        return size

    async def put_bytes(self, key: str, data: bytes) -> None:
        path = self._path(key)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(path.suffix + ".partial")
            partial.write_bytes(data)
            os.replace(partial, path)

        await asyncio.to_thread(write)

    async def read_bytes(self, key: str) -> bytes:
        return await asyncio.to_thread(self._path(key).read_bytes)

    async def stream(self, key: str) -> AsyncIterator[bytes]:
        handle = await asyncio.to_thread(self._path(key).open, "rb")
        try:
            while chunk := await asyncio.to_thread(handle.read, CHUNK_BYTES):
                yield chunk
        finally:
            handle.close()

    async def delete(self, keys: list[str]) -> None:
        paths = [self._path(key) for key in keys]

        def remove() -> None:
            for path in paths:
                path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):  # the attachment's folder, once empty
                    path.parent.rmdir()

        await asyncio.to_thread(remove)

    async def attachment_ids(self) -> list[UUID]:
        def listed() -> list[UUID]:
            if not self.root.is_dir():
                return []
            found = []
            for entry in self.root.iterdir():
                try:
                    found.append(UUID(entry.name))
                except ValueError:
                    continue  # not ours
            return found

        return await asyncio.to_thread(listed)


def storage_for(settings: AttachmentSettings) -> Storage:
    """The storage an app (or a runner) of these settings uses (ATTACHMENTS_STORAGE)."""
    if settings.attachments_storage == "s3":
        from app.attachments.s3 import S3Storage, s3_store  # obstore only when chosen

        return S3Storage(s3_store(settings), settings.s3_presign_seconds)
    return LocalStorage(settings.attachments_path)
