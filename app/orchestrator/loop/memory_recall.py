"""Recall ahead of the model call: an agent type with `memory_recall: N` has the top N
memories about the user's latest message put into the context before the first turn.

They come as a `memory` `search` call made for the model (the user's phone sees its cell,
"Remembered 3 things", the memories in its typed `data`, and the model reads them as the
call's result, as if it had searched). Only when recall finds something above the
relevance floor (app/memories/recall.py): a turn about nothing remembered gets no cell.
The tool runs the same recall again to write the cell, one path for every memory cell;
the second costs no embedding (recall keeps the latest queries' vectors) and no read of
the user's vectors (app/memories/vector_cache.py).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from app.memories import recall
from app.orchestrator.loop.context import LoopSpec, RunnerDeps, RunState

TOOL = "memory"


def _latest_user_text(messages: list[dict[str, Any]]) -> str | None:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) and content.strip() else None
    return None


def _offered(spec: LoopSpec) -> bool:
    if TOOL not in spec.allowed:
        return False
    only = spec.actions.get(TOOL)
    return only is None or "search" in only


async def recall_call(
    deps: RunnerDeps, state: RunState, spec: LoopSpec, messages: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The memory search call to run before the model, or None (off, or nothing found)."""
    limit = spec.config.memory_recall
    query = _latest_user_text(messages)
    if not limit or query is None or not _offered(spec):
        return None
    query = query[:500]  # the tool's bound on a query
    async with deps.read_sessions() as session:
        found, _ = await recall.recall(session, state.user.id, query, limit)
    if not found:
        return None
    arguments = {"action": "search", "query": query, "limit": limit}
    return {
        "id": f"call_recall_{secrets.token_hex(6)}",
        "type": "function",
        "function": {"name": TOOL, "arguments": json.dumps(arguments)},
    }
