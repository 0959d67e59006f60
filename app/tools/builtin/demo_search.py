"""Offline search results for the demo model, so "search for …" works without a network.

Used by `web.search` only when WEB_SEARCH_URL is unset and the agent runs on the offline
demo model (`demo/…`, the default LLM_MODEL). The hits come from a small fixed index of
pages about this stack, ranked by the words they share with the query; the cell says they
are demo results. Any other model without WEB_SEARCH_URL gets "not configured".
"""

from __future__ import annotations

import re

from app.tools.base import ToolContext

DEMO_MODEL_PREFIX = "demo/"
DEMO_RESULTS = 3

# (url, title, snippet): public documentation pages; the demo never fetches them.
_INDEX: tuple[tuple[str, str, str], ...] = (
    (
        "https://docs.litestar.dev/",
        "Litestar documentation",
        "Litestar: a fast, batteries-included ASGI framework for Python APIs and websockets.",
    ),
    (
        "https://jcristharif.com/msgspec/",
        "msgspec",
        "Fast serialization and validation for JSON and MessagePack in Python.",
    ),
    (
        "https://docs.sqlalchemy.org/en/20/",
        "SQLAlchemy 2.0 documentation",
        "The Python SQL toolkit and object relational mapper; async sessions.",
    ),
    (
        "https://docs.litellm.ai/",
        "LiteLLM documentation",
        "Call many LLM providers through one OpenAI-compatible interface, with tools.",
    ),
    (
        "https://swiftpackageindex.com/apple/swift-openapi-generator",
        "Swift OpenAPI Generator",
        "Generate Swift client code for an iOS app from an OpenAPI document.",
    ),
    (
        "https://developer.apple.com/documentation/foundation/urlsessionwebsockettask",
        "URLSessionWebSocketTask",
        "Websocket client for iOS apps: send, receive, ping.",
    ),
    (
        "https://www.postgresql.org/docs/",
        "PostgreSQL documentation",
        "The PostgreSQL relational database: SQL, indexes, LISTEN/NOTIFY.",
    ),
    (
        "https://redis.io/docs/latest/develop/interact/pubsub/",
        "Redis pub/sub",
        "Publish and subscribe to channels with Redis.",
    ),
    (
        "https://docs.searxng.org/",
        "SearXNG documentation",
        "A metasearch engine with a JSON API: what WEB_SEARCH_URL points at for real results.",
    ),
)
_WORD = re.compile(r"[a-z0-9]+")


def uses_demo_search(ctx: ToolContext) -> bool:
    """No search service, and the run's model is the offline demo model."""
    model = ctx.agent.model or ctx.settings.llm_model
    return not ctx.settings.web_search_url and model.startswith(DEMO_MODEL_PREFIX)


def demo_hits(query: str) -> list[tuple[str, str, str]]:
    """The demo index's pages sharing the most words with `query`; with none in common,
    the page on how to get real results (SearXNG, WEB_SEARCH_URL)."""
    words = set(_WORD.findall(query.lower()))

    def shared(entry: tuple[str, str, str]) -> int:
        return len(words & set(_WORD.findall(" ".join(entry).lower())))

    ranked = sorted((e for e in _INDEX if shared(e)), key=shared, reverse=True)  # stable
    return ranked[:DEMO_RESULTS] or [_INDEX[-1]]
