"""A document's text as the model reads it, once per upload, on a worker thread.

PDFs through pypdf (pages read until the cap is reached; the page count recorded), plain
text as UTF-8. A PDF pypdf cannot parse is refused (415): it is not what it claims.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import BinaryIO

logger = logging.getLogger(__name__)


class DocumentRefused(Exception):
    """A file that sniffs as a document but does not read as one."""


@dataclass(frozen=True)
class DocumentText:
    text: str
    page_count: int | None


def _capped(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}… [cut: the document goes on]"


def read_pdf(source: BinaryIO, max_chars: int) -> DocumentText:
    """Blocking: run it on a worker thread."""
    # Imported here: pypdf is a good part of a second of a process's start, and most
    # processes never read a PDF.
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        # Closed (our stream stays open): its objects, a few MB of a scan's, are freed
        # now, not at the cyclic collector's next full pass (they form cycles).
        with PdfReader(source) as reader:
            page_count = len(reader.pages)
            pieces: list[str] = []
            length = 0
            for page in reader.pages:
                if length > max_chars:
                    break
                piece = page.extract_text() or ""
                pieces.append(piece)
                length += len(piece)
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise DocumentRefused("The file is not a PDF we can read.") from exc
    return DocumentText(_capped("\n\n".join(pieces).strip(), max_chars), page_count)


def read_text(source: BinaryIO, max_chars: int) -> DocumentText:
    """Blocking: run it on a worker thread. Reads no more than the cap needs."""
    head = source.read(max_chars * 4 + 4)
    text = head.decode("utf-8", errors="replace")
    return DocumentText(_capped(text, max_chars), None)
