"""Uploads are cleaned and read on ATTACHMENT_PROCESSING_WORKERS threads of their own (1
by default): at once, many uploads wait their turn rather than each decoding a photo
beside the others (memory: `bench.uploads`)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest

from app.attachments import processing
from tests.attachments.support import pdf, photo, upload
from tests.conftest import ApiUser


async def test_concurrent_uploads_are_processed_on_one_thread_of_their_own(
    files: httpx.AsyncClient, ann: ApiUser, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []

    def recorded(work: Any) -> Any:
        def run(*args: Any) -> Any:
            threads.append(threading.current_thread().name)
            return work(*args)

        return run

    monkeypatch.setattr(processing, "prepare_image", recorded(processing.prepare_image))
    monkeypatch.setattr(processing, "read_pdf", recorded(processing.read_pdf))
    uploads = [upload(files, ann, photo(), filename=f"IMG_{i}.jpg") for i in range(4)]
    uploads.append(upload(files, ann, pdf(), filename="scan.pdf"))
    responses = await asyncio.gather(*uploads)
    assert [r.status_code for r in responses] == [201] * 5, [r.text for r in responses]
    assert len(threads) == 5
    assert len(set(threads)) == 1 and threads[0].startswith("attachments")
