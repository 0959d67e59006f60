"""A finished call's preview: up to 3 short lines the app shows under the cell.

A tool may write its own (`Tool.result_preview`); otherwise it is derived from the
result: the error, or the display message and the first scalar fields of `data`, or the
last lines of streamed output.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

MAX_LINES = 3
MAX_LINE_CHARS = 80
# Fields that say nothing on their own line (ids, flags, the output shown separately).
_SKIPPED = frozenset({"type", "output", "truncated", "duplicate"})


class Result(Protocol):
    ok: bool
    data: dict[str, Any] | None
    display_message: str | None
    error: str | None


SIGNATURE_VALUE_CHARS = 40
_NOT_ARGUMENTS = frozenset({"delegated_by"})  # the cell's marks, not what the model sent


def call_signature(name: str, arguments: dict[str, Any] | None) -> str:
    """The call as the model wrote it, one line: `tasks(action=create, title="Buy milk")`;
    long values end in `…`. Errors the model reads start with it, so a turn of several
    calls knows which one failed. No arguments to show (not valid JSON): `name(…)`."""
    if arguments is None:
        return f"{name}(…)"
    shown = []
    # `action` first, then by name: the same line whichever order the database kept
    # (PostgreSQL's jsonb reorders keys)
    for key, value in sorted(arguments.items(), key=lambda item: (item[0] != "action", item[0])):
        if key in _NOT_ARGUMENTS or value is None:
            continue
        text = value if key == "action" and isinstance(value, str) else json.dumps(value)
        if len(text) > SIGNATURE_VALUE_CHARS:
            text = text[: SIGNATURE_VALUE_CHARS - 1] + "…"
        shown.append(f"{key}={text}")
    return f"{name}({', '.join(shown)})"


def short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def _field_line(key: str, value: Any) -> str | None:
    if key in _SKIPPED or key.endswith("_id") or value is None or isinstance(value, dict):
        return None
    if isinstance(value, list):
        return f"{key.replace('_', ' ')}: {len(value)}"
    if isinstance(value, bool):
        return None
    return short(f"{key.replace('_', ' ')}: {value}")


def generic_preview(result: Result) -> list[str]:
    if not result.ok:
        return [short(result.error or "Failed")]
    lines = [short(result.display_message)] if result.display_message else []
    data = result.data or {}
    output = data.get("output")
    if isinstance(output, str) and output.strip():
        tail = [line for line in output.splitlines() if line.strip()][-MAX_LINES:]
        return clamp(lines + [short(line) for line in tail])
    for key, value in data.items():
        line = _field_line(key, value)
        if line:
            lines.append(line)
    return clamp(lines) or ["Done"]


def clamp(lines: list[str]) -> list[str]:
    """At most MAX_LINES non-empty short lines (what a tool's own preview is cut to)."""
    return [short(line) for line in lines if line and line.strip()][:MAX_LINES]
