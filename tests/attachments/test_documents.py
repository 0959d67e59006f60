"""Reading a PDF's text frees the parsed document at once (its objects form reference
cycles: left to the cyclic collector, 50 scans at once held 100-200 MB in
`bench.uploads`), and leaves the upload's file open for the copy that follows."""

from __future__ import annotations

import gc
import io

from pypdf.generic import PdfObject

from app.attachments.documents import read_pdf
from tests.attachments.support import pdf


def _objects_left_after_reading(pages: int) -> int:
    """The PDF objects still in memory after `read_pdf`, without the cyclic collector."""
    source = io.BytesIO(pdf(pages=pages))
    gc.collect()
    gc.disable()
    try:
        document = read_pdf(source, 1000)
        left = sum(isinstance(o, PdfObject) for o in gc.get_objects())
    finally:
        gc.enable()
    assert document.page_count == pages
    assert not source.closed and source.seek(0) == 0
    return left


def test_reading_a_pdf_leaves_none_of_its_pages_to_the_collector() -> None:
    assert _objects_left_after_reading(30) == _objects_left_after_reading(3)
