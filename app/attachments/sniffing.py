"""What an upload is, read from its first bytes: never from the name or the client's
Content-Type. Anything else (SVG, HTML, archives, executables…) is refused with 415."""

from __future__ import annotations

from typing import Literal

import filetype

Kind = Literal["image", "document"]
HEAD_BYTES = 8192  # what the sniffer reads; a text upload's head must be UTF-8 text
IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/heic", "image/webp", "image/gif"})
DOCUMENT_TYPES = frozenset({"application/pdf", "text/plain"})
# ISO-BMFF brands of HEIF still images (filetype knows HEIC's; iPhones write `heic`/`mif1`).
_HEIF_BRANDS = (b"heic", b"heix", b"heim", b"heis", b"mif1", b"msf1")
# Control characters a text file does not carry (tab, newlines and form feed are fine).
_BINARY = frozenset(range(0x20)) - {0x09, 0x0A, 0x0C, 0x0D}


def _is_heif(head: bytes) -> bool:
    return head[4:8] == b"ftyp" and head[8:12] in _HEIF_BRANDS


def _is_text(head: bytes) -> bool:
    if not head or any(byte in _BINARY for byte in head):
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:  # a character cut by the head's end is still text
        return exc.start >= len(head) - 3
    return True


def sniff(head: bytes) -> str | None:
    """The upload's type (one of IMAGE_TYPES or DOCUMENT_TYPES), or None: refused."""
    if _is_heif(head):
        return "image/heic"
    mime = filetype.guess_mime(head)
    if mime in IMAGE_TYPES or mime == "application/pdf":
        return mime
    if mime is None and _is_text(head):
        return "text/plain"
    return None


def kind_of(content_type: str) -> Kind:
    return "image" if content_type in IMAGE_TYPES else "document"
