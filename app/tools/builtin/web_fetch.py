"""web.fetch: an SSRF-safe GET whose page comes back as readable text."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from app.lib.net.fetch import BytesReceived, FetchBlocked, FetchFailed, RawPage, SafeFetcher
from app.lib.net.readable import (
    SLICE_CHARS,
    decode,
    html_title,
    is_html,
    is_text,
    stream_html_to_text,
)
from app.lib.time import utcnow
from app.tools.base import ToolContext, ToolData, ToolResult
from app.tools.results import ToolProgress

MAX_CONTENT_CHARS = 40_000
EXAMPLE_URL = "https://example.com/page"
Output = Callable[[str], Awaitable[None]]


async def _nowhere(_: str) -> None:
    return None


async def fetch_page(ctx: ToolContext, fetcher: SafeFetcher, url: str) -> ToolResult:
    await ctx.progress(display_message="Fetching page…", data=ToolProgress(url=url))
    try:
        page = await fetcher.fetch(url)
    except (FetchBlocked, FetchFailed, ValueError) as exc:
        return _fetch_failure(exc, url)
    if not is_text(page.content_type):
        return ToolResult.failure(
            f"Not a text page ({page.content_type.split(';')[0]}).",
            "user_error",
            suggestion="Fetch an HTML or text page instead.",
            url=page.url,
        )
    data = await page_data(url, page, _capped(ctx.output, MAX_CONTENT_CHARS))
    return ToolResult.success(data, display_message=_display(page))


def _fetch_failure(exc: FetchBlocked | FetchFailed | ValueError, url: str) -> ToolResult:
    """Why the page could not be fetched, with what the model can do about it."""
    if isinstance(exc, FetchBlocked):
        error_type, suggestion = "security_error", "Only public http(s) pages can be fetched."
    elif isinstance(exc, FetchFailed):
        error_type, suggestion = exc.error_type, None
    else:  # not a URL the fetcher can read
        error_type, suggestion = "validation_error", f"Give a full URL like {EXAMPLE_URL}."
    return ToolResult.failure(str(exc), error_type, suggestion=suggestion, url=url)


def _size(count: int) -> str:
    return f"{count} B" if count < 1024 else f"{count / 1024:.0f} KB"


def bytes_reporter(ctx: ToolContext) -> BytesReceived:
    """Progress as the body arrives: every network chunk reports (the cell's writes are
    coalesced to a few a second by the orchestrator, so this may be chatty)."""

    async def report(received: int, total: int | None) -> None:
        of = f" of {_size(total)}" if total else ""
        await ctx.progress(
            display_message=f"Received {_size(received)}{of}…",
            data=ToolProgress(bytes_received=received, bytes_total=total),
        )

    return report


class WebFetchResult(ToolData, tag="fetched_page"):
    """A page as readable text: `url` after redirects, `content` cut at 40,000 characters."""

    url: str
    requested_url: str
    redirects: list[str]
    status: int
    title: str | None
    content: str
    truncated: bool
    fetched_at: datetime


def _capped(output: Output, limit: int) -> Output:
    """`output` for the first `limit` characters only (what `content` keeps)."""
    sent = 0

    async def emit(chunk: str) -> None:
        nonlocal sent
        if sent < limit:
            await output(chunk[: limit - sent])
            sent += len(chunk)

    return emit


async def page_data(requested: str, page: RawPage, output: Output = _nowhere) -> WebFetchResult:
    """The page as readable text, streamed to `output` as it is extracted (`tool_output`
    frames: the app shows the page while it is converted)."""
    text = decode(page.body, page.encoding)
    title = None
    if is_html(page.content_type, text):
        title = html_title(text)
        text = await stream_html_to_text(text, output)
    else:
        for start in range(0, min(len(text), MAX_CONTENT_CHARS), SLICE_CHARS):
            await output(text[start : start + SLICE_CHARS])
    truncated = page.truncated or len(text) > MAX_CONTENT_CHARS
    return WebFetchResult(
        url=page.url,
        requested_url=requested,
        redirects=list(page.redirects),
        status=page.status,
        title=title,
        content=text[:MAX_CONTENT_CHARS],
        truncated=truncated,
        fetched_at=utcnow(),
    )


def _display(page: RawPage) -> str:
    return f"Read {httpx_host(page.url)}"


def httpx_host(url: str) -> str:
    import httpx

    return httpx.URL(url).host
