"""The offline demo model's brain: simple intents become real tool calls.

Served to litellm as the custom provider `demo/…` by app/orchestrator/door/llm.py, so a demo
run goes through the same door as a real model (streaming, tool-call assembly, errors).
Without an API key, `litestar run` on the seeded data still shows live tool cells.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

_INTENTS: tuple[tuple[re.Pattern[str], str, str, str], ...] = (
    # (pattern, tool, action, parameter the captured text goes to)
    (re.compile(r"\bremind me (?:to|about)\s+(.+)", re.I | re.S), "tasks", "create", "title"),
    (re.compile(r"\badd (?:a )?task\s*:?\s+(.+)", re.I | re.S), "tasks", "create", "title"),
    (re.compile(r"\bremember (?:that\s+)?(.+)", re.I | re.S), "memory", "save", "content"),
    (re.compile(r"\bsearch(?: the web)?(?: for)?\s+(.+)", re.I | re.S), "web", "search", "query"),
)


@dataclass
class DemoReply:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {name, arguments (JSON)}


# "roll 4 dice": the bundled demo MCP server's tool (app/tools/mcp/demo_server.py)
_DICE = re.compile(r"\broll(?: (\d{1,2}))? (?:dice|die)\b", re.I)
DICE_TOOL = "demo__roll_dice"


def _dice_call(text: str, available: set[str]) -> dict[str, Any] | None:
    match = _DICE.search(text)
    if match is None or DICE_TOOL not in available:
        return None
    count = min(int(match.group(1) or 3), 10)
    return {"name": DICE_TOOL, "arguments": json.dumps({"count": max(count, 1)})}


def _tool_names(tools: list[dict[str, Any]] | None) -> set[str]:
    return {t.get("function", {}).get("name", "") for t in tools or ()}


def _describe(body: dict[str, Any]) -> str:
    if not body.get("ok"):
        return f"that did not work ({body.get('error') or 'unknown error'})"
    if body.get("task_title"):
        return f"I added “{body['task_title']}” to your tasks"
    if body.get("type") == "memory" or body.get("memory_id"):
        return "I'll remember that"
    if body.get("type") == "mcp_result":
        return f"{body.get('tool')} on {body.get('server')} says: {body.get('text') or 'done'}"
    results = body.get("results")
    if isinstance(results, list):
        titles = [str(r.get("title") or r.get("url")) for r in results[:3] if isinstance(r, dict)]
        return "I found: " + "; ".join(titles) if titles else "the search found nothing"
    return "done"


def _summarise_tool_results(messages: list[dict[str, Any]]) -> str:
    outcomes = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        try:
            body = json.loads(message.get("content") or "{}")
        except ValueError:
            body = {}
        outcomes.append(_describe(body if isinstance(body, dict) else {}))
    text = "; ".join(reversed(outcomes)) or "done"
    return text[0].upper() + text[1:] + "."


def _listed_tools(prompt: str) -> set[str]:
    """The tool names a planning prompt lists (`- name: description {schema}`)."""
    return set(re.findall(r"^- ([a-z_][a-z0-9_]*): ", prompt, re.M))


def demo_plan(messages: list[dict[str, Any]]) -> DemoReply:
    """A plan (structured output was asked for): the intent's tool step, then the answer."""
    available = _listed_tools(str(messages[-1].get("content") or "")) if messages else set()
    call = _intent_call(messages, available)
    steps: list[dict[str, Any]] = []
    if call is not None:
        name, arguments = call
        steps.append({"id": "step-1", "label": f"Use {name}", "executor": "agent",
                      "action": "tool", "tool": name, "args": json.loads(arguments)})  # fmt: skip
    steps.append({"id": "answer", "label": "Answer", "executor": "litellm", "action": "completion"})
    return DemoReply(text=json.dumps({"description": "The demo model's plan.", "steps": steps}))


def _intent_call(messages: list[dict[str, Any]], available: set[str]) -> tuple[str, str] | None:
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    text = str((last_user or {}).get("content") or "").strip()
    for pattern, tool, action, param in _INTENTS:
        match = pattern.search(text)
        if match and tool in available:
            value = match.group(1).strip().rstrip(".!?")[:200]
            return tool, json.dumps({"action": action, param: value})
    return None


def demo_reply(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> DemoReply:
    while messages and messages[-1].get("role") == "system" and len(messages) > 1:
        messages = messages[:-1]  # a plan's notes to the completion: answer what ran
    if messages and messages[-1].get("role") == "tool":
        return DemoReply(text=_summarise_tool_results(messages))
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    text = str((last_user or {}).get("content") or "").strip()
    available = _tool_names(tools)
    if (dice := _dice_call(text, available)) is not None:
        return DemoReply(tool_calls=[dice])
    for pattern, tool, action, param in _INTENTS:
        match = pattern.search(text)
        if match and tool in available:
            value = match.group(1).strip().rstrip(".!?")[:200]
            arguments = json.dumps({"action": action, param: value})
            return DemoReply(tool_calls=[{"name": tool, "arguments": arguments}])
    return DemoReply(
        text=(
            "I'm the offline demo model. Try “remind me to buy milk”, "
            "“remember that I like tea”, “search for litestar” or “roll 3 dice”."
        )
    )


def split_text(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]
