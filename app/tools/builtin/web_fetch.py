"""Placeholder until the SSRF-safe fetcher lands: refuses every fetch."""

from __future__ import annotations

from app.tools.base import ToolContext, ToolResult


async def fetch_page(ctx: ToolContext, url: str) -> ToolResult:
    return ToolResult.failure("Fetching pages is not available yet.", "security_error")
