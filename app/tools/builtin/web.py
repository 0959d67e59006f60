"""web: search (SearXNG-compatible JSON endpoint) and fetch (SSRF-safe, readable text)."""

from __future__ import annotations

import dataclasses
import ssl
from typing import Annotated

import httpx
import msgspec

from app.lib.net.fetch import FetchPolicy, SafeFetcher
from app.lib.net.resolver import Resolver
from app.lib.net.ssrf import normalize_host
from app.lib.schema import Schema
from app.tools.base import Tool, ToolContext, ToolData, ToolResult
from app.tools.builtin.demo_search import demo_hits, uses_demo_search
from app.tools.builtin.web_fetch import WebFetchResult, bytes_reporter, fetch_page

RESULT_LIMIT = 10
MAX_SEARCHES_PER_RUN = 10
SEARCH_TIMEOUT = httpx.Timeout(15.0, connect=5.0)


class SearchParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    query: Annotated[str, msgspec.Meta(min_length=1, max_length=500, description="Search query.")]


class FetchParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    url: Annotated[
        str, msgspec.Meta(min_length=1, max_length=2048, description="http(s) URL to read.")
    ]


class WebOptions(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What a `web` tool instance may set (agent-types file, `tool_instances:`)."""

    # A SearXNG-compatible endpoint of its own (unset: WEB_SEARCH_URL).
    search_url: Annotated[str, msgspec.Meta(pattern=r"^https?://")] | None = None
    result_limit: Annotated[int, msgspec.Meta(ge=1, le=RESULT_LIMIT)] = RESULT_LIMIT


class WebSearchHit(Schema):
    url: str
    title: str
    snippet: str


class WebSearchResult(ToolData, tag="search_results"):
    """The first results of a web search; `total_results` as the search service counts."""

    query: str
    results: list[WebSearchHit]
    total_results: int


class WebTool(Tool):
    name = "web"
    description = (
        "Search the web or read a page. Actions: search (query), fetch (url). "
        "Fetch returns the page as readable text."
    )
    actions = {"search": SearchParams, "fetch": FetchParams}
    results = {"search": WebSearchResult, "fetch": WebFetchResult}
    read_only_actions = frozenset({"search", "fetch"})
    timeout_seconds = 45
    options_type = WebOptions
    examples = {"search": {"query": "litestar websockets"}, "fetch": {"url": "https://example.com"}}

    def result_preview(self, action: str, result: ToolResult) -> list[str] | None:
        data = result.data or {}
        if action == "search":
            hits = [hit.get("title") or hit.get("url") for hit in data.get("results") or []]
            return [f"{len(hits)} result(s) for “{data.get('query', '')}”", *hits[:2]]
        return [data.get("title") or "Untitled page", str(data.get("url", ""))]

    async def search_action(self, ctx: ToolContext, params: SearchParams) -> ToolResult:
        options = self.options if isinstance(self.options, WebOptions) else WebOptions()
        base = options.search_url or ctx.settings.web_search_url
        if uses_demo_search(ctx) and not options.search_url:
            return _demo_results(params.query)
        if not base:
            return ToolResult.failure(
                "Web search is not configured on this server.", "system_error"
            )
        count = ctx.state.get("web_search_count", 0) + 1
        ctx.state["web_search_count"] = count
        if count > MAX_SEARCHES_PER_RUN:
            return ToolResult.failure(
                f"Search limit reached ({MAX_SEARCHES_PER_RUN} per response).",
                "user_error",
                suggestion="Answer with what you found, or fetch one of the results.",
                query=params.query,
            )
        await ctx.progress(display_message=f"Searching “{params.query}”…")
        try:
            response = await ctx.http.get(
                _search_endpoint(base),
                params={"q": params.query, "format": "json"},
                headers={"Accept": "application/json"},
                timeout=SEARCH_TIMEOUT,
                follow_redirects=False,
            )
        except httpx.HTTPError:
            return ToolResult.failure("The search service could not be reached.", "system_error",
                                      suggestion="Try again in a moment.", query=params.query)  # fmt: skip
        if response.status_code != 200:
            return ToolResult.failure(f"The search service answered HTTP {response.status_code}.",
                                      "system_error", query=params.query)  # fmt: skip
        return _search_results(params.query, response.content, options.result_limit)

    def __init__(
        self,
        resolver: Resolver | None = None,
        policy: FetchPolicy | None = None,
        verify: ssl.SSLContext | bool = True,
    ) -> None:
        # Injected in tests (a stub resolver, other limits, a test CA); defaults in production.
        self.resolver = resolver
        self.policy = policy or FetchPolicy()
        self.verify = verify

    async def fetch_action(self, ctx: ToolContext, params: FetchParams) -> ToolResult:
        allow = frozenset(normalize_host(h) for h in ctx.settings.web_fetch_allow_hosts)
        policy = dataclasses.replace(self.policy, allow_hosts=self.policy.allow_hosts | allow)
        fetcher = SafeFetcher(
            policy, resolver=self.resolver, verify=self.verify, on_bytes=bytes_reporter(ctx)
        )
        return await fetch_page(ctx, fetcher, params.url)


def _demo_results(query: str) -> ToolResult:
    hits = [WebSearchHit(url=u, title=t, snippet=s) for u, t, s in demo_hits(query)]
    data = WebSearchResult(query=query, results=hits, total_results=len(hits))
    return ToolResult.success(data, display_message=f"{len(hits)} demo result(s) (offline)")


def _search_endpoint(base: str) -> str:
    base = base.rstrip("/")
    return base if base.endswith("/search") else f"{base}/search"


class _SearchHit(msgspec.Struct):
    url: str = ""
    title: str = ""
    content: str | None = None


class _SearchAnswer(msgspec.Struct):
    results: list[_SearchHit] = []
    number_of_results: float | int | None = None


def _search_results(query: str, body: bytes, limit: int = RESULT_LIMIT) -> ToolResult:
    try:
        answer = msgspec.json.decode(body, type=_SearchAnswer)
    except msgspec.DecodeError:
        return ToolResult.failure("Invalid response from the search service.", "system_error",
                                  query=query)  # fmt: skip
    results = [
        WebSearchHit(url=hit.url, title=hit.title, snippet=hit.content or "")
        for hit in answer.results[:limit]
    ]
    total = int(answer.number_of_results) if answer.number_of_results else len(answer.results)
    data = WebSearchResult(query=query, results=results, total_results=total)
    return ToolResult.success(data, display_message=f"{len(results)} result(s) for “{query}”")
