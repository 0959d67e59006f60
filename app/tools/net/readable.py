"""Turn a fetched page into readable text (html2text for HTML; no regex scraping)."""

from __future__ import annotations

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


def html_to_text(html: str) -> str:
    converter = html2text.HTML2Text()
    converter.body_width = 0  # no hard wrapping
    converter.ignore_images = True
    converter.ignore_emphasis = True
    converter.protect_links = True
    converter.unicode_snob = True
    return converter.handle(html).strip()
