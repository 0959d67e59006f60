"""Every tool result is bounded: in the cell, in its frame and before the model.

A result comes from outside (an MCP server, the phone, a web page): its size is not ours
to choose. Past `max_bytes` of JSON, its longest strings are cut and its longest lists and
objects shortened, halving the allowance until it fits; keys, types and the `type` tag stay,
so the data still decodes as its kind. The cut data says so (`truncated: true`) and
keeps the size it had (`original_size`, bytes of JSON). CPU-bound on big input: callers on
the event loop run it in a thread (`bounded_off_loop`).
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec

from app.tools.base import ToolResult

DEFAULT_MAX_BYTES = 65_536
_encode = msgspec.json.Encoder().encode
_SHORTEST = 16  # characters a cut string keeps at the least
_KEEP = ("type",)  # never cut: the tag that chooses the data's kind
_FIELDS = 64  # more top-level keys than a data Struct has: a free-form object


def size_of(value: Any) -> int:
    return len(_encode(value))


def _cut(value: Any, chars: int, items: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= chars else value[:chars] + "…"
    if isinstance(value, list):
        return [_cut(item, chars, items) for item in value[:items]]
    if isinstance(value, dict):
        kept = list(value.items())[: max(items, len(_KEEP))]
        return {key: item if key in _KEEP else _cut(item, chars, items) for key, item in kept}
    return value


def _cut_fields(value: dict[str, Any], chars: int, items: int) -> dict[str, Any]:
    """A data Struct's own fields all stay (a decoder may require them); what they hold
    is cut. A free-form object of many keys (a device's output) is cut like any other."""
    if len(value) > _FIELDS:
        return _cut(value, chars, items)
    return {key: item if key in _KEEP else _cut(item, chars, items) for key, item in value.items()}


def shrunk(value: dict[str, Any], max_bytes: int) -> dict[str, Any]:
    """`value` cut until its JSON fits in `max_bytes` (or as small as cutting gets it)."""
    chars, items = max_bytes, max_bytes
    cut = value
    while size_of(cut) > max_bytes and (chars > _SHORTEST or items > 1):
        chars, items = max(_SHORTEST, chars // 2), max(1, items // 2)
        cut = _cut_fields(value, chars, items)
    return cut


def bounded(result: ToolResult, max_bytes: int = DEFAULT_MAX_BYTES) -> ToolResult:
    """`result` with its `data` and `model_data` within `max_bytes` each."""
    changes: dict[str, Any] = {}
    if result.data is not None and (size := size_of(result.data)) > max_bytes:
        changes["data"] = {
            **shrunk(result.data, max_bytes),
            "truncated": True,
            "original_size": size,
        }
    if result.model_data is not None and (size := size_of(result.model_data)) > max_bytes:
        changes["model_data"] = {
            **shrunk(result.model_data, max_bytes),
            "truncated": True,
            "original_size": size,
        }
    return msgspec.structs.replace(result, **changes) if changes else result


async def bounded_off_loop(result: ToolResult, max_bytes: int = DEFAULT_MAX_BYTES) -> ToolResult:
    """`bounded`, measured and cut on a worker thread: a hostile result never holds the
    event loop (every other user's turn runs on it)."""
    if result.data is None and result.model_data is None:
        return result
    return await asyncio.to_thread(bounded, result, max_bytes)
