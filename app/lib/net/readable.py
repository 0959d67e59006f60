"""Turn a fetched page into readable text (html2text for HTML; no regex scraping)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from html.parser import HTMLParser

import html2text

TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml")


class _TitleParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._in_title = False
        self.title: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and self.title is None:
            self._in_title = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title = ((self.title or "") + data).strip() or None


def is_text(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return not media or media.startswith(TEXT_TYPES) or media.endswith(("+json", "+xml"))


def is_html(content_type: str, text: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    if media in ("text/html", "application/xhtml+xml"):
        return True
    return not media and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))


def decode(body: bytes, encoding: str | None) -> str:
    try:
        return body.decode(encoding or "utf-8", errors="replace")
    except LookupError:  # an unknown charset name from the server
        return body.decode("utf-8", errors="replace")


def html_title(html: str) -> str | None:
    parser = _TitleParser()
    parser.feed(html)
    parser.close()
    return parser.title


def _converter(out: Callable[[str], None] | None = None) -> html2text.HTML2Text:
    converter = html2text.HTML2Text(out=out)
    converter.body_width = 0  # no hard wrapping
    converter.ignore_images = True
    converter.ignore_emphasis = True
    converter.protect_links = True
    converter.unicode_snob = True
    return converter


def html_to_text(html: str) -> str:
    return _converter().handle(html).strip()


# html2text marks a non-breaking space with this until its output is joined.
_NBSP_MARK = "&nbsp_place_holder;"
SLICE_CHARS = 16_384  # HTML converted between two hand-overs of text (and loop yields)


async def stream_html_to_text(
    html: str, emit: Callable[[str], Awaitable[None]], *, slice_chars: int = SLICE_CHARS
) -> str:
    """`html_to_text`, handing each piece of readable text to `emit` as it is extracted
    (the HTML is converted a slice at a time), leading blank lines left out."""
    pieces: list[str] = []
    converter = _converter(out=pieces.append)
    text, started = "", False
    for start in range(0, len(html) + 1, slice_chars):
        converter.feed(html[start : start + slice_chars])
        if start + slice_chars >= len(html):
            converter.feed("")
            converter.finish()  # closes the parser: the last pieces come out
        chunk = "".join(pieces).replace(_NBSP_MARK, "\u00a0")
        pieces.clear()
        if not started:
            chunk = chunk.lstrip()
            started = bool(chunk)
        if chunk:
            text += chunk
            await emit(chunk)
        if start + slice_chars >= len(html):
            break
    return text.strip()
